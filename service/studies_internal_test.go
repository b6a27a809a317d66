package service

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestChooseStudyJudges(t *testing.T) {
	t.Parallel()
	configs := []models.StudyJudge{{Name: "gpt"}, {Name: "claude"}, {Name: "local"}}
	for _, tc := range []struct {
		name    string
		configs []models.StudyJudge
		names   []string
		want    []string
		err     string
	}{
		{"All", configs, nil, []string{"gpt", "claude", "local"}, ""},
		{"Named", configs, []string{"local", " gpt ", "local"}, []string{"local", "gpt"}, ""},
		{"Unknown", configs, []string{"gpt", "gemini", "o9"}, nil, `The study has no judge configuration named "gemini", "o9" (it has: gpt, claude, local).`},
		{"NoConfigurations", nil, nil, nil, "The study has no judge configurations to run: add one first."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := chooseStudyJudges(tc.configs, tc.names)
			if tc.err != "" {
				require.Equal(t, models.EINVALID, models.ErrorCode(err))
				require.Equal(t, tc.err, models.ErrorMessage(err))
				require.Equal(t, "judge", models.ErrorField(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestCheckStudyRequest refuses every bad field of a study request,
// naming it, before anything is read or written.
func TestCheckStudyRequest(t *testing.T) {
	t.Parallel()
	valid := func(mod func(*models.StudyRequest)) models.StudyRequest {
		req := models.StudyRequest{
			Name: "Judge check", RunIDs: []int64{1, 2, 3}, Sampling: models.SampleRandom,
			Seed: 7, SampleSize: 8, Blind: true, Labels: []string{models.StudyLabelSuccess, models.StudyLabelRubric},
			Judges:     []models.StudyJudge{{Name: "gpt judge", Prompt: models.StudyPromptLabelsV1}},
			Annotators: []string{"ann1@study.test", "ANN2@study.test"},
		}
		if mod != nil {
			mod(&req)
		}
		return req
	}
	spec, err := checkStudyRequest(valid(nil))
	require.NoError(t, err)
	require.Equal(t, []string{"ann1@study.test", "ann2@study.test"}, spec.Emails)
	require.Equal(t, 2, spec.OverlapAnnotators, "overlapping items go to two annotators by default")
	manyJudges := make([]models.StudyJudge, models.MaxStudyJudges+1)
	for i := range manyJudges {
		manyJudges[i] = models.StudyJudge{Name: fmt.Sprintf("j%d", i), Prompt: models.StudyPromptLabelsV1}
	}
	for name, tc := range map[string]struct {
		mod      func(*models.StudyRequest)
		field    string
		contains string
	}{
		"NoName":             {func(r *models.StudyRequest) { r.Name = "  " }, "name", "Name the study"},
		"LongName":           {func(r *models.StudyRequest) { r.Name = strings.Repeat("n", models.MaxStudyNameLen+1) }, "name", "at most 200"},
		"LongDescription":    {func(r *models.StudyRequest) { r.Description = strings.Repeat("d", models.MaxStudyDescription+1) }, "description", "at most 4000"},
		"NoSources":          {func(r *models.StudyRequest) { r.RunIDs, r.Benchmarks = nil, []string{" "} }, "run_ids", "at least one run or benchmark"},
		"BadRunID":           {func(r *models.StudyRequest) { r.RunIDs = []int64{-3} }, "run_ids", "-3 is not a run id"},
		"UnknownSampling":    {func(r *models.StudyRequest) { r.Sampling = "systematic" }, "sampling", `not "systematic"`},
		"StratifiedNoStrata": {func(r *models.StudyRequest) { r.Sampling = models.SampleStratified }, "stratify_by", "outcome, agent, site, difficulty"},
		"UnknownStratum":     {func(r *models.StudyRequest) { r.Sampling, r.StratifyBy = models.SampleStratified, "colour" }, "stratify_by", "needs a stratum"},
		"RandomWithStratum":  {func(r *models.StudyRequest) { r.StratifyBy = models.StratumAgent }, "stratify_by", "Only stratified samples"},
		"ZeroSize":           {func(r *models.StudyRequest) { r.SampleSize = 0 }, "sample_size", "between 1 and 5000"},
		"HugeSize":           {func(r *models.StudyRequest) { r.SampleSize = models.MaxStudySample + 1 }, "sample_size", "between 1 and 5000"},
		"NegativeOverlap":    {func(r *models.StudyRequest) { r.OverlapFraction = -0.1 }, "overlap_fraction", "between 0 and 1"},
		"OverlapAboveOne":    {func(r *models.StudyRequest) { r.OverlapFraction = 1.5 }, "overlap_fraction", "between 0 and 1"},
		"OverlapNaN":         {func(r *models.StudyRequest) { r.OverlapFraction = math.NaN() }, "overlap_fraction", "between 0 and 1"},
		"OneOverlapper":      {func(r *models.StudyRequest) { r.OverlapAnnotators = 1 }, "overlap_annotators", "between 2 and 10"},
		"ElevenOverlappers":  {func(r *models.StudyRequest) { r.OverlapAnnotators = 11 }, "overlap_annotators", "between 2 and 10"},
		"NoLabels":           {func(r *models.StudyRequest) { r.Labels = nil }, "labels", "Ask at least one label"},
		"UnknownLabel":       {func(r *models.StudyRequest) { r.Labels = []string{"success", "mood"} }, "labels", `Unknown label "mood"`},
		"UnnamedJudge":       {func(r *models.StudyRequest) { r.Judges = []models.StudyJudge{{Prompt: models.StudyPromptLabelsV1}} }, "judges", "Judge configuration 1 has no name"},
		"LongJudgeName": {func(r *models.StudyRequest) {
			r.Judges = []models.StudyJudge{{Name: strings.Repeat("j", 101), Prompt: models.StudyPromptLabelsV1}}
		}, "judges", "longer than 100"},
		"TwinJudges": {func(r *models.StudyRequest) {
			r.Judges = []models.StudyJudge{{Name: "A", Prompt: models.StudyPromptLabelsV1}, {Name: " a ", Prompt: models.StudyPromptTrajectoryV1}}
		}, "judges", `Two judge configurations are named "a"`},
		"UnknownPrompt": {func(r *models.StudyRequest) {
			r.Judges = []models.StudyJudge{{Name: "A", Prompt: "vibes-v1"}}
		}, "judges", "labels-v1, trajectory-v2, trajectory-v1"},
		"TooManyJudges": {func(r *models.StudyRequest) { r.Judges = manyJudges }, "judges", "at most 20"},
		"BadEmail":      {func(r *models.StudyRequest) { r.Annotators = []string{"not an email"} }, "annotators", "not a valid email"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := checkStudyRequest(valid(tc.mod))
			require.Equal(t, models.EINVALID, models.ErrorCode(err), "%v", err)
			require.Equal(t, tc.field, models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), tc.contains)
		})
	}
}
