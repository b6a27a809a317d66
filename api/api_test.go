package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/models"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden with the encodings of the tests")

// wireValues are the values whose JSON the golden file holds: every wire
// type's zero value, which shows each field's name, order, null and
// omission, and a few filled values where a field is absent or null only
// sometimes.
func wireValues() []struct {
	name  string
	value any
} {
	url, members, eta := "https://agent.example.org/step", []api.Member{}, int64(90)
	return []struct {
		name  string
		value any
	}{
		{"Page", api.Page[api.RunItem]{}},
		{"NewPage(nil)", api.NewPage[api.RunItem](nil, 2, 50, 120)},
		{"IndexInfo", api.IndexInfo{}},
		{"ErrorResponse", api.ErrorResponse{}},
		{"ErrorResponse(field, problems)", api.ErrorResponse{Error: api.ErrorBody{Code: models.EINVALID, Field: "candidates[1].task_id", Message: "unknown task",
			Problems: []api.Problem{{Field: "candidates[1].task_id", Message: "unknown task"}, {Message: "no candidate"}}}}},
		{"User", api.User{}}, {"UserTeam", api.UserTeam{}}, {"MeResponse", api.MeResponse{}},
		{"Token", api.Token{}}, {"CreatedToken", api.CreatedToken{}}, {"TokenList", api.TokenList{}}, {"TokenInput", api.TokenInput{}},
		{"Team", api.Team{}}, {"TeamListItem", api.TeamListItem{}}, {"Member", api.Member{}},
		{"TeamDetail", api.TeamDetail{}}, {"TeamDetail(members)", api.TeamDetail{Members: &members}},
		{"Invite", api.Invite{}}, {"TeamInput", api.TeamInput{}}, {"InviteInput", api.InviteInput{}},
		{"Agent", api.Agent{}}, {"Agent(endpoint, config)", api.Agent{EndpointURL: &url, Config: json.RawMessage(`{"temperature":0}`)}},
		{"AgentInput", api.AgentInput{}},
		{"Benchmark", api.Benchmark{}}, {"BenchmarkSummary", api.BenchmarkSummary{}}, {"RubricItem", api.RubricItem{}},
		{"Task", api.Task{}}, {"ImportResult", api.ImportResult{}},
		{"RunInput", api.RunInput{}}, {"Run", api.Run{}}, {"RunItem", api.RunItem{}}, {"RunItem(withheld)", api.RunItem{ResultsWithheld: true}},
		{"RunState", api.RunState{}}, {"RunState(eta)", api.RunState{ETASeconds: &eta, ErrorsByClass: map[string]int{models.ErrorClassAgent: 1}}},
		{"Attempt", api.Attempt{}}, {"Timeline", api.Timeline{}}, {"TimelineTry", api.TimelineTry{}}, {"TimelineTask", api.TimelineTask{}},
		{"Evaluation", api.Evaluation{}}, {"RubricJudgment", api.RubricJudgment{}}, {"TimelineStep", api.TimelineStep{}},
		{"Retried", api.Retried{}}, {"ResultLine", api.ResultLine{}}, {"ResultLine(numeric task)", api.ResultLine{TaskID: 44}},
		{"Moderation", api.Moderation{}}, {"HideInput", api.HideInput{}},
		{"Leaderboard", api.Leaderboard[struct{}]{}}, {"Change", api.Change{}}, {"Change(rescore)", api.Change{Rescore: &api.RescoreChange{}}},
		{"Comparison", api.Comparison{}}, {"CompareBenchmark", api.CompareBenchmark{}}, {"CompareRun", api.CompareRun{}},
		{"CompareTask", api.CompareTask{}}, {"CompareCell", api.CompareCell{}},
		{"CandidateRunRequest", api.CandidateRunRequest{}},
		{"HiddenRates", api.HiddenRates{}}, {"HiddenPassRate", api.HiddenPassRate{}}, {"HiddenRunResults", api.HiddenRunResults{}},
		{"HiddenTask", api.HiddenTask{}}, {"HiddenSite", api.HiddenSite{}}, {"HiddenTests", api.HiddenTests{}},
		{"HiddenTest", api.HiddenTest{}}, {"HiddenTestRun", api.HiddenTestRun{}}, {"HiddenTestStep", api.HiddenTestStep{}},
		{"HiddenCheckpoint", api.HiddenCheckpoint{}},
		{"EpisodeClaim", api.EpisodeClaim{}}, {"EpisodeHeartbeat", api.EpisodeHeartbeat{}}, {"ActionAccepted", api.ActionAccepted{}},
		{"MCPMessage", api.MCPMessage{}},
		{"Submission", api.Submission{}}, {"SubmissionRequest", api.SubmissionRequest{}}, {"SubmissionPart", api.SubmissionPart{}},
		{"SubmissionCreated", api.SubmissionCreated{}}, {"PresignedPart", api.PresignedPart{}},
		{"StudyInput", api.StudyInput{}}, {"StudyLabelInput", api.StudyLabelInput{}}, {"Study", api.Study{}},
		{"StudyListItem", api.StudyListItem{}}, {"StudyList", api.StudyList{}}, {"StudyProgress", api.StudyProgress{}},
		{"StudyOverview", api.StudyOverview{}}, {"StudyAnnotator", api.StudyAnnotator{}}, {"StudyJudgeRun", api.StudyJudgeRun{}},
		{"StudyQueue", api.StudyQueue{}}, {"StudyQueueEntry", api.StudyQueueEntry{}}, {"StudyItem", api.StudyItem{}},
		{"StudyItemRef", api.StudyItemRef{}}, {"StudyRubricItem", api.StudyRubricItem{}}, {"StudyAssignment", api.StudyAssignment{}},
		{"StudyReveal", api.StudyReveal{}}, {"StudyAnnotatorLabels", api.StudyAnnotatorLabels{}}, {"StudyVerdict", api.StudyVerdict{}},
		{"StudyVerdictList", api.StudyVerdictList{}},
	}
}

// TestWire_Golden pins the bytes of the wire format: field names and their
// order, omitted fields and nulls. A change here is a change of the API that
// every client sees; rewrite the file with -update only when that is meant.
func TestWire_Golden(t *testing.T) {
	t.Parallel()
	var got bytes.Buffer
	for _, v := range wireValues() {
		b, err := json.Marshal(v.value)
		require.NoError(t, err, v.name)
		fmt.Fprintf(&got, "%s\n%s\n", v.name, b)
	}
	path := filepath.Join("testdata", "wire.golden")
	if *update {
		require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./api -update to write the golden file")
	require.Equal(t, string(want), got.String())
}

// TestWire_RoundTrip decodes each value's encoding back into its type and
// encodes it again: what the server writes, the client reads whole.
func TestWire_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range wireValues() {
		b, err := json.Marshal(v.value)
		require.NoError(t, err, v.name)
		back := reflectNew(v.value)
		require.NoError(t, json.Unmarshal(b, back), v.name)
		again, err := json.Marshal(back)
		require.NoError(t, err, v.name)
		require.JSONEq(t, string(b), string(again), v.name)
	}
}

func TestNewPage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		page, perPage, total int
		hasMore              bool
	}{
		{1, 50, 0, false},
		{1, 50, 50, false},
		{1, 50, 51, true},
		{2, 50, 120, true},
		{3, 50, 120, false},
		{9, 50, 120, false}, // past the end
	} {
		p := api.NewPage([]int{}, tc.page, tc.perPage, tc.total)
		require.Equal(t, tc.hasMore, p.HasMore, "page %d of %d per page, %d in all", tc.page, tc.perPage, tc.total)
		require.Equal(t, tc.page, p.Page)
		require.Equal(t, tc.perPage, p.PerPage)
		require.Equal(t, tc.total, p.Total)
	}
	b, err := json.Marshal(api.NewPage[string](nil, 1, 10, 0))
	require.NoError(t, err)
	require.JSONEq(t, `{"items":[],"page":1,"per_page":10,"total":0,"has_more":false}`, string(b), "an empty page lists no items, not null")
}

func TestRunState_Successful(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{
		models.RunCompleted: true, models.RunFailed: false, models.RunCanceled: false, models.RunRunning: false,
	} {
		r := api.RunState{Status: status}
		require.Equal(t, want, r.Successful(), status)
	}
}

// reflectNew is a pointer to a new zero value of v's type.
func reflectNew(v any) any { return reflect.New(reflect.TypeOf(v)).Interface() }
