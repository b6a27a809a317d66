package service_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// candidateBench is a three-task benchmark with a two-task subset. The
// importer does not know the hidden-tests evaluator yet, so the fixture
// imports it as "none" and marks it hidden-tests afterwards.
const candidateBench = `{"proctor_benchmark": 1, "name": "Rebuilds", "evaluator": "none", "subsets": {"pair": {"task_ids": ["s1", "s2"]}}}
{"id": "s1", "intent": "Rebuild the shop.", "start_urls": ["__SHOP__/"], "sites": ["shop"]}
{"id": "s2", "intent": "Rebuild the forum.", "start_urls": ["__FORUM__/"], "sites": ["forum"]}
{"id": "s3", "intent": "Rebuild the wiki.", "start_urls": ["__WIKI__/"], "sites": ["wiki"]}
`

// candidateFixture is the agent fixture (team lab with a member, team other
// with a stranger, an admin; the SSRF guard resolves agent.example.com to a
// public address and allows internal.test) with the hidden-tests benchmark
// "rebuilds", the rubric benchmark "mini", the lab's upload agent "builder"
// and a recording enqueuer (it is the service's CandidateJobs).
type candidateFixture struct {
	*agentFixture
	enqueued [][]int64
}

func newCandidateFixture(t *testing.T, db *storage.DB) *candidateFixture {
	t.Helper()
	af := newAgentFixture(t, db)
	for slug, text := range map[string]string{"mini": miniBench, "rebuilds": candidateBench} {
		ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(text), nil)
		require.NoError(t, err)
		_, err = db.ImportBenchmark(af.system, slug, ds, slug+".jsonl", 0)
		require.NoError(t, err)
	}
	markHiddenTests(t, db, "rebuilds")
	require.NoError(t, af.teams.CreateAgent(af.member, "lab", &models.Agent{Name: "Builder", Kind: models.AgentUpload}, nil))
	require.NoError(t, af.teams.CreateAgent(af.stranger, "other", &models.Agent{Name: "Theirs", Kind: models.AgentUpload}, nil))
	return &candidateFixture{agentFixture: af}
}

// candidates is the candidate service over the fixture's database, with its
// SSRF guard, the daily quota given and the recording enqueuer.
func (f *candidateFixture) candidates(quota int) *service.Candidates {
	return service.NewCandidates(f.db, f, f.guard, service.CandidateOptions{DailyRunQuota: quota})
}

// HiddenTests records the attempts of a candidate run, checking that it is
// called inside the run's transaction.
func (f *candidateFixture) HiddenTests(_ context.Context, tx *sql.Tx, run *models.Run, ids []int64) error {
	if tx == nil || run == nil || run.ID == 0 {
		return errors.New("enqueue called outside the run's transaction")
	}
	f.enqueued = append(f.enqueued, ids)
	return nil
}

// markHiddenTests turns an imported benchmark into a hidden-tests one.
func markHiddenTests(t *testing.T, db *storage.DB, slug string) {
	t.Helper()
	require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", slug).Updates(map[string]any{"evaluator": models.EvaluatorHiddenTests, "grades": models.GradesCandidates}).Error)
}

func (f *candidateFixture) submit(ctx context.Context, req models.CandidateRunRequest, quota int) (*models.Run, error) {
	return f.candidates(quota).SubmitCandidates(ctx, req)
}

// goodCandidates answers the pair subset.
func goodCandidates() models.CandidateRunRequest {
	return models.CandidateRunRequest{
		TeamSlug: "lab", AgentSlug: "builder", BenchmarkSlug: "rebuilds", Subset: "pair", Notes: " built in an hour ",
		Candidates: []models.CandidateSpec{
			{TaskID: "s2", BaseURL: "https://agent.example.com/forum/", CostUSD: 1.5, TokensIn: 1000, TokensOut: 200, Turns: 12},
			{TaskID: " s1 ", BaseURL: " http://agent.example.com:8080/shop ", RestartURL: "http://agent.example.com/restart",
				HealthURL: "http://internal.test/health", CostUSD: 0.25, TokensIn: 10, TokensOut: 2, Turns: 3},
		},
	}
}

func TestCandidates_SubmitCandidates(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCandidateFixture(t, db)
		run, err := f.submit(f.member, goodCandidates(), 0)
		require.NoError(t, err)
		require.Equal(t, models.RunRunning, run.Status)
		require.Equal(t, models.OriginUploaded, run.Origin)
		require.Equal(t, "pair", run.SubsetName)
		require.Equal(t, "built in an hour", run.Notes)
		require.Equal(t, 2, run.TasksTotal)
		require.NotNil(t, run.StartedAt)
		require.NotNil(t, run.CreatedBy)
		require.InDelta(t, 1.75, run.Cost, 1e-9, "the run's totals add up the reported costs")
		require.EqualValues(t, 1010, run.TokensIn)
		require.EqualValues(t, 202, run.TokensOut)
		require.Equal(t, 15, run.StepsSum)
		require.Equal(t, "builder", models.RunAgentSnapshot(run).Slug)

		var attempts []models.Attempt
		require.NoError(t, db.Gorm().Preload("Task").Where("run_id = ?", run.ID).Order("id").Find(&attempts).Error)
		require.Len(t, attempts, 2)
		byTask := map[string]models.Attempt{}
		for _, a := range attempts {
			require.Equal(t, models.AttemptPending, a.Status)
			byTask[a.Task.ExternalID] = a
		}
		require.Equal(t, 3, byTask["s1"].Steps)
		require.InDelta(t, 0.25, byTask["s1"].Cost, 1e-9)
		require.EqualValues(t, 10, byTask["s1"].TokensIn)
		require.EqualValues(t, 2, byTask["s1"].TokensOut)
		require.Equal(t, 12, byTask["s2"].Steps)
		require.Len(t, f.enqueued, 1)
		require.ElementsMatch(t, []int64{attempts[0].ID, attempts[1].ID}, f.enqueued[0], "one job per attempt, in the same transaction")

		c, err := f.candidates(0).HiddenCandidate(f.member, byTask["s1"].ID)
		require.NoError(t, err)
		require.Equal(t, "http://agent.example.com:8080/shop", c.BaseURL, "URLs are stored trimmed")
		require.Equal(t, "http://agent.example.com/restart", c.RestartURL)
		require.Equal(t, "http://internal.test/health", c.HealthURL)

		t.Run("Visibility", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"member": f.member, "admin": f.admin, "system": f.system} {
				list, err := f.candidates(0).HiddenCandidates(ctx, run.ID)
				require.NoError(t, err, name)
				require.Len(t, list, 2, name)
				require.Equal(t, byTask["s2"].ID, list[1].AttemptID, "in attempt order")
				require.Equal(t, "http://agent.example.com/restart", list[0].RestartURL, "%s sees the hooks", name)
			}
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "stranger": f.stranger} {
				_, err := f.candidates(0).HiddenCandidates(ctx, run.ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "%s cannot see an unpublished run", name)
				_, err = f.candidates(0).HiddenCandidate(ctx, byTask["s1"].ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
			}
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "stranger": f.stranger} {
				list, err := f.candidates(0).HiddenCandidates(ctx, run.ID)
				require.NoError(t, err, name)
				require.Equal(t, "http://agent.example.com:8080/shop", list[0].BaseURL, "%s sees where a published candidate answers", name)
				require.Empty(t, list[0].RestartURL, "%s never sees the hooks", name)
				require.Empty(t, list[0].HealthURL, name)
				one, err := f.candidates(0).HiddenCandidate(ctx, byTask["s1"].ID)
				require.NoError(t, err, name)
				require.Empty(t, one.RestartURL+one.HealthURL, name)
			}
			_, err := f.candidates(0).HiddenCandidate(f.admin, 999999)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
		})

		t.Run("FullSetByAdminOfAnotherTeam", func(t *testing.T) {
			req := goodCandidates()
			req.Subset = ""
			req.Candidates = append(req.Candidates, models.CandidateSpec{TaskID: "s3", BaseURL: "https://agent.example.com/wiki"})
			run, err := f.submit(f.admin, req, 1)
			require.NoError(t, err, "admins may submit for any team, over its quota")
			require.Equal(t, models.SubsetFull, run.SubsetName)
			require.Equal(t, 3, run.TasksTotal)
		})

		t.Run("AgentAsTeamSlash", func(t *testing.T) {
			req := goodCandidates()
			req.TeamSlug, req.AgentSlug = "", "lab/builder"
			_, err := f.submit(f.member, req, 0)
			require.NoError(t, err)
		})

		t.Run("Quota", func(t *testing.T) {
			_, err := f.submit(f.member, goodCandidates(), 1)
			require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
		})
	})
}

// TestStore_SubmitCandidates_Refused: every bad input is refused naming its
// field, and nothing is written.
func TestCandidates_SubmitCandidates_Refused(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCandidateFixture(t, db)
		edit := func(fn func(r *models.CandidateRunRequest)) models.CandidateRunRequest {
			r := goodCandidates()
			r.Candidates = append([]models.CandidateSpec(nil), r.Candidates...)
			fn(&r)
			return r
		}
		long := "https://agent.example.com/" + strings.Repeat("a", 2000)
		for _, tc := range []struct {
			name   string
			ctx    context.Context
			req    models.CandidateRunRequest
			code   string
			fields []string // every field the refusal names, in order
			msg    string   // a part of the first message
		}{
			{name: "Anonymous", ctx: f.anon, req: goodCandidates(), code: models.EUNAUTHORIZED},
			{name: "OtherTeam", ctx: f.stranger, req: goodCandidates(), code: models.EFORBIDDEN},
			{name: "NoTeam", req: edit(func(r *models.CandidateRunRequest) { r.TeamSlug = "" }), fields: []string{"team"}},
			{name: "UnknownTeam", req: edit(func(r *models.CandidateRunRequest) { r.TeamSlug = "nope" }), fields: []string{"team"}, msg: `no team "nope"`},
			{name: "NoAgent", req: edit(func(r *models.CandidateRunRequest) { r.AgentSlug = " " }), fields: []string{"agent"}},
			{name: "AgentOfAnotherTeam", req: edit(func(r *models.CandidateRunRequest) { r.AgentSlug = "theirs" }), fields: []string{"agent"}, msg: `no agent "theirs"`},
			{name: "NoBenchmark", req: edit(func(r *models.CandidateRunRequest) { r.BenchmarkSlug = "" }), fields: []string{"benchmark"}},
			{name: "UnknownBenchmark", req: edit(func(r *models.CandidateRunRequest) { r.BenchmarkSlug = "nope" }), fields: []string{"benchmark"}},
			{name: "NotHiddenTests", req: edit(func(r *models.CandidateRunRequest) { r.BenchmarkSlug, r.Subset = "mini", "" }), fields: []string{"benchmark"}, msg: "not by hidden tests"},
			{name: "UnknownSubset", req: edit(func(r *models.CandidateRunRequest) { r.Subset = "nope" }), fields: []string{"subset"}},
			{name: "LongNotes", req: edit(func(r *models.CandidateRunRequest) { r.Notes = strings.Repeat("n", 2001) }), fields: []string{"notes"}},
			{name: "NoCandidates", req: edit(func(r *models.CandidateRunRequest) { r.Candidates = nil }), fields: []string{"candidates"}},
			{name: "MissingTask", req: edit(func(r *models.CandidateRunRequest) { r.Candidates = r.Candidates[:1] }), fields: []string{"candidates"}, msg: "missing: s1"},
			{name: "EmptyTaskID", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].TaskID = "" }), fields: []string{"candidates[1].task_id"}},
			{name: "UnknownTask", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].TaskID = "s9" }), fields: []string{"candidates[0].task_id"}, msg: `no task "s9"`},
			{name: "OutsideSubset", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].TaskID = "s3" }), fields: []string{"candidates[0].task_id"}, msg: `not in subset "pair"`},
			{name: "Duplicated", req: edit(func(r *models.CandidateRunRequest) {
				r.Candidates = append(r.Candidates, r.Candidates[1])
			}), fields: []string{"candidates[2].task_id"}, msg: "already has a candidate at candidates[1]"},
			{name: "NoBaseURL", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].BaseURL = "" }), fields: []string{"candidates[1].base_url"}},
			{name: "RelativeURL", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = "/shop" }), fields: []string{"candidates[0].base_url"}},
			{name: "FTPURL", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = "ftp://agent.example.com/" }), fields: []string{"candidates[0].base_url"}, msg: "http or https"},
			{name: "Credentials", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = "https://u:p@agent.example.com/" }), fields: []string{"candidates[0].base_url"}, msg: "credentials"},
			{name: "Fragment", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = "https://agent.example.com/#top" }), fields: []string{"candidates[0].base_url"}, msg: "fragment"},
			{name: "TooLong", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = long }), fields: []string{"candidates[0].base_url"}, msg: "at most 2000"},
			{name: "PrivateAddress", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].BaseURL = "http://10.1.2.3/" }), fields: []string{"candidates[0].base_url"}},
			{name: "Loopback", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].BaseURL = "http://127.0.0.1:8080/" }), fields: []string{"candidates[1].base_url"}},
			{name: "Metadata", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].HealthURL = "http://169.254.169.254/latest" }), fields: []string{"candidates[1].health_url"}},
			{name: "UnresolvableHost", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].RestartURL = "http://nowhere.example/restart" }), fields: []string{"candidates[1].restart_url"}},
			{name: "NegativeCost", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].CostUSD = -0.01 }), fields: []string{"candidates[0].cost_usd"}},
			{name: "NaNCost", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].CostUSD = math.NaN() }), fields: []string{"candidates[0].cost_usd"}},
			{name: "NegativeTokensIn", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].TokensIn = -1 }), fields: []string{"candidates[1].tokens_in"}},
			{name: "NegativeTokensOut", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[1].TokensOut = -1 }), fields: []string{"candidates[1].tokens_out"}},
			{name: "NegativeTurns", req: edit(func(r *models.CandidateRunRequest) { r.Candidates[0].Turns = -3 }), fields: []string{"candidates[0].turns"}},
			{name: "SeveralAtOnce", req: edit(func(r *models.CandidateRunRequest) {
				r.Candidates[0].BaseURL = "ftp://x"
				r.Candidates[1].RestartURL = "http://10.0.0.1/"
				r.Candidates[1].Turns = -1
			}), fields: []string{"candidates[0].base_url", "candidates[1].restart_url", "candidates[1].turns"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := tc.ctx
				if ctx == nil {
					ctx = f.member
				}
				runsBefore := countRows(t, db, "runs", "")
				enqueued := len(f.enqueued)
				_, err := f.submit(ctx, tc.req, 0)
				require.Error(t, err)
				code := tc.code
				if code == "" {
					code = models.EINVALID
				}
				require.Equal(t, code, models.ErrorCode(err), err.Error())
				if len(tc.fields) > 0 {
					require.Equal(t, tc.fields, errorFields(err), err.Error())
				}
				if tc.msg != "" {
					require.Contains(t, models.ErrorMessage(err), tc.msg)
				}
				require.Equal(t, runsBefore, countRows(t, db, "runs", ""), "a refusal writes no run")
				require.Equal(t, enqueued, len(f.enqueued), "nor queues a job")
			})
		}

		t.Run("EnqueueFailureRollsBack", func(t *testing.T) {
			before := countRows(t, db, "runs", "")
			down := servicetest.HiddenTestsFunc(func(context.Context, *sql.Tx, *models.Run, []int64) error {
				return errors.New("queue down")
			})
			_, err := service.NewCandidates(db, down, f.guard, service.CandidateOptions{}).SubmitCandidates(f.member, goodCandidates())
			require.Error(t, err)
			require.Equal(t, before, countRows(t, db, "runs", ""))
			require.Zero(t, countRows(t, db, "hidden_candidates", ""))
		})
		t.Run("NoQueue", func(t *testing.T) {
			before := countRows(t, db, "runs", "")
			_, err := service.NewCandidates(db, nil, f.guard, service.CandidateOptions{}).SubmitCandidates(f.member, goodCandidates())
			require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err))
			require.Equal(t, before, countRows(t, db, "runs", ""))
		})
	})
}

// errorFields lists the fields of every application error in err, in order.
func errorFields(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		out = append(out, models.ErrorField(e))
	}
	walk(err)
	return out
}
