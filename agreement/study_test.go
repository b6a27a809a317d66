package agreement_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
)

// studyFixture is a hand-made study of five items (sample order):
//
//	pos  item  run  benchmark  model / agent          task  site      difficulty  rubric
//	1    101   1    wa         gpt-4o / A             7     shopping  easy        r1 (501), r2 (502)
//	2    102   2    wa         gpt-4o / B             7     shopping  —           r1 (501), r2 (502)
//	3    103   1    wa         gpt-4o / A             8     gitlab    hard
//	4    104   3    ody        — / Claude Agent       x1    —         easy
//	5    105   1    wa         gpt-4o / A             9     gitlab    hard
//
// Items 101 and 102 are two runs of one model on one task: StudyKeys names
// them "gpt-4o (run 1)" and "gpt-4o (run 2)". Item 104's run names no model:
// its key has the agent's name.
//
// The study asks success, score and rubric. Human labels (alice user 1, bob
// user 2, carol imported; S successful, U unsuccessful, ? unsure):
//
//	item  alice            bob              carol    majority
//	101   S 4 r1 pass      S 5 r1 pass      —        success S, score tie (4, 5),
//	      r2 fail          r2 pass                   r1 pass, r2 tie
//	102   U 2              ? 2              —        success U (the unsure answer left out), score 2
//	103   S 3              U                —        success tie, score 3
//	104   —                —                ? 1      success all unsure, score 1
//	105   —                —                —        nothing
//
// Judges: the configurations mini, big and idle (never run); an imported
// judge also named mini (renamed "mini (imported)") and an imported scorer;
// and the automatic judges from the evaluations.
//
//	judge                       101          102      103      104      105   cost
//	mini                        S 4 r1p r2f  S 3      U        error    S     0.01 each, 0.005 the error
//	big                         S 5          U 2      —        —        —     0.1 each
//	mini (imported)             U            U        —        —        —
//	scorer (imported)           —            2        3        —        —
//	check: webarena-verified    success      failure  error    success  failure  (cost 0.5 stored: a check costs 0)
//	judge: llm-judge:gpt-4o     success 5    success 2                          0.02 each
//	rubric: rubric-judge        r1 fail r2 fail                                 0.03
func studyFixture() *models.StudyData {
	rubric := []models.RubricItem{{ID: 501, Key: "r1", Position: 1}, {ID: 502, Key: "r2", Position: 2}}
	r1, r2 := models.RubricLabelKey(501), models.RubricLabelKey(502)
	score := func(n int) *int { return &n }
	return &models.StudyData{
		Study: models.Study{ID: 9, Labels: models.JSONStrings{models.StudyLabelSuccess, models.StudyLabelScore, models.StudyLabelRubric},
			Judges: models.JSONList[models.StudyJudge]{
				{Name: "mini", Model: "gpt-4o-mini", Prompt: models.StudyPromptLabelsV1},
				{Name: "big", Model: "gpt-4o", Prompt: models.StudyPromptTrajectoryV2},
				{Name: "idle", Prompt: models.StudyPromptTrajectoryV1},
			}},
		// Out of order on purpose: the report goes by Position.
		Items: []models.StudyDataItem{
			{ItemID: 103, RunID: 1, Position: 3, Benchmark: "wa", Model: "gpt-4o", Agent: "A", TaskID: "8", Site: "gitlab", Difficulty: "hard"},
			{ItemID: 101, RunID: 1, Position: 1, Benchmark: "wa", Model: "gpt-4o", Agent: "A", TaskID: "7", Site: "shopping", Difficulty: "easy", Rubric: rubric},
			{ItemID: 102, RunID: 2, Position: 2, Benchmark: "wa", Model: "gpt-4o", Agent: "B", TaskID: "7", Site: "shopping", Rubric: rubric},
			{ItemID: 104, RunID: 3, Position: 4, Benchmark: "ody", Agent: "Claude Agent", TaskID: "x1", Difficulty: "easy"},
			{ItemID: 105, RunID: 1, Position: 5, Benchmark: "wa", Model: "gpt-4o", Agent: "A", TaskID: "9", Site: "gitlab", Difficulty: "hard"},
		},
		Human: []models.StudyHumanLabel{
			{ItemID: 101, UserID: 1, Annotator: "alice", Labels: models.StudyLabels{"success": "successful", "score": "4", r1: "pass", r2: "fail"}},
			{ItemID: 101, UserID: 2, Annotator: "bob", Labels: models.StudyLabels{"success": "successful", "score": "5", r1: "pass", r2: "pass"}},
			{ItemID: 102, UserID: 1, Annotator: "alice", Labels: models.StudyLabels{"success": "unsuccessful", "score": "2"}},
			{ItemID: 102, UserID: 2, Annotator: "bob", Labels: models.StudyLabels{"success": "unsure", "score": "2"}},
			{ItemID: 103, UserID: 1, Annotator: "alice", Labels: models.StudyLabels{"success": "successful", "score": "3"}},
			{ItemID: 103, UserID: 2, Annotator: "bob", Labels: models.StudyLabels{"success": "unsuccessful"}},
			{ItemID: 104, Annotator: "carol", Labels: models.StudyLabels{"success": "unsure", "score": "1"}},
		},
		Verdicts: []models.StudyVerdict{
			{StudyItemID: 101, Judge: "mini", Labels: models.StudyLabels{"success": "successful", "score": "4", r1: "pass", r2: "fail"}, Cost: 0.01},
			{StudyItemID: 102, Judge: "mini", Labels: models.StudyLabels{"success": "successful", "score": "3"}, Cost: 0.01},
			{StudyItemID: 103, Judge: "mini", Labels: models.StudyLabels{"success": "unsuccessful"}, Cost: 0.01},
			{StudyItemID: 104, Judge: "mini", Error: "timeout", Cost: 0.005},
			{StudyItemID: 105, Judge: "mini", Labels: models.StudyLabels{"success": "successful"}, Cost: 0.01},
			{StudyItemID: 101, Judge: "big", Labels: models.StudyLabels{"success": "successful", "score": "5"}, Cost: 0.1},
			{StudyItemID: 102, Judge: "big", Labels: models.StudyLabels{"success": "unsuccessful", "score": "2"}, Cost: 0.1},
			{StudyItemID: 101, Judge: "mini", Imported: true, Labels: models.StudyLabels{"success": "unsuccessful"}},
			{StudyItemID: 102, Judge: "mini", Imported: true, Labels: models.StudyLabels{"success": "unsuccessful"}},
			{StudyItemID: 102, Judge: "scorer", Imported: true, Labels: models.StudyLabels{"score": "2"}},
			{StudyItemID: 103, Judge: "scorer", Imported: true, Labels: models.StudyLabels{"score": "3"}},
		},
		Evaluations: []models.StudyEvaluation{
			{ItemID: 101, Kind: models.EvaluationCheck, Evaluator: "webarena-verified", Verdict: models.OutcomeSuccess, Cost: 0.5},
			{ItemID: 102, Kind: models.EvaluationCheck, Evaluator: "webarena-verified", Verdict: models.OutcomeFailure},
			{ItemID: 103, Kind: models.EvaluationCheck, Evaluator: "webarena-verified", Verdict: models.OutcomeError},
			{ItemID: 104, Kind: models.EvaluationCheck, Evaluator: "webarena-verified", Verdict: models.OutcomeSuccess},
			{ItemID: 105, Kind: models.EvaluationCheck, Evaluator: "webarena-verified", Verdict: models.OutcomeFailure},
			{ItemID: 101, Kind: models.EvaluationJudge, Evaluator: "llm-judge:gpt-4o", Verdict: models.OutcomeSuccess, JudgeScore: score(5), Cost: 0.02},
			{ItemID: 102, Kind: models.EvaluationJudge, Evaluator: "llm-judge:gpt-4o", Verdict: models.OutcomeSuccess, JudgeScore: score(2), Cost: 0.02},
			{ItemID: 101, Kind: models.EvaluationRubric, Evaluator: "rubric-judge", Verdict: models.OutcomeFailure,
				Rubric: map[int64]bool{501: false, 502: false}, Cost: 0.03},
		},
	}
}

func buildStudy(t *testing.T, d *models.StudyData, opts agreement.Options) *agreement.StudyReport {
	t.Helper()
	r, err := agreement.BuildStudyReport(d, opts)
	require.NoError(t, err)
	return r
}

// Keys of the fixture's items, as StudyKeys gives them.
var (
	key101 = agreement.Key{Benchmark: "wa", Model: "gpt-4o (run 1)", TaskID: "7"}
	key102 = agreement.Key{Benchmark: "wa", Model: "gpt-4o (run 2)", TaskID: "7"}
	key103 = agreement.Key{Benchmark: "wa", Model: "gpt-4o", TaskID: "8"}
	key104 = agreement.Key{Benchmark: "ody", Model: "Claude Agent", TaskID: "x1"}
)

func TestBuildStudyReport_Labels(t *testing.T) {
	t.Parallel()
	sr := buildStudy(t, studyFixture(), agreement.Options{})
	r := sr.Report

	require.Equal(t, 5, sr.Items)
	require.Equal(t, 4, sr.Labelled)
	require.Equal(t, []agreement.Label{agreement.LabelSuccess, agreement.LabelScore, agreement.LabelRubric}, sr.Asked)
	require.Empty(t, sr.Problems)
	require.Len(t, r.Labels, len(agreement.Labels()))
	// Seven submitted labels (rubric answers are part of their item's) from
	// three annotators on four items, three of them labelled by two.
	require.Equal(t, agreement.HumanSummary{Labels: 7, Annotators: 3, Items: 4, Overlap: 3}, r.Human)
	// Judge summaries count items: mini judged 101, 102, 103 and 105 (104
	// failed), 105 has no human label; the check errs on 103.
	require.Equal(t, &agreement.JudgeSummary{Verdicts: 4, Matched: 3, Unmatched: 1}, r.Judges["mini"])
	require.Equal(t, &agreement.JudgeSummary{Verdicts: 4, Matched: 3, Unmatched: 1}, r.Judges["check: webarena-verified"])
	require.Equal(t, &agreement.JudgeSummary{Verdicts: 1, Matched: 1}, r.Judges["rubric: rubric-judge"])
	require.NotContains(t, r.Judges, "idle", "a judge without verdicts has no summary")

	t.Run("TiesAndUnsure", func(t *testing.T) {
		t.Parallel()
		// Success: majority S on 101, U on 102 (bob's unsure left out), a tie
		// on 103, all unsure on 104: items 2, labelled 4. Unsure answers: bob
		// on 102, carol on 104.
		s := r.Labels[agreement.LabelSuccess]
		require.Equal(t, 2, s.Items)
		require.Equal(t, 4, s.Labelled)
		require.Equal(t, 1, s.Ties)
		require.Equal(t, 1, s.Unsure)
		require.Equal(t, 2, s.UnsureAnswers)
		require.Equal(t, map[string]int{"successful": 1, "unsuccessful": 1}, s.Majority)
		// Human pairs of sure answers: (S, S) on 101 and (S, U) on 103.
		require.Equal(t, 2, s.HumanHuman.Pairs)
		requireMetric(t, 0.5, s.HumanHuman.Agreement, "human agreement")
		// mini: 101 S = S, 102 S ≠ U; 103 ties (no majority), 105 has no
		// human label. Pairs (S, S), (U, S): pₒ = ½, rows (1, 1), columns
		// (2, 0), pₑ = (1·2 + 1·0)/4 = ½, κ = 0; TP 1, FP 1, FN 0, F1 = 2/3.
		mini := s.Judges["mini"]
		require.Equal(t, 2, mini.Items)
		require.Equal(t, 4, mini.Verdicts)
		require.Equal(t, 1, mini.NoMajority)
		require.Equal(t, 1, mini.NoHumanLabel)
		requireMetric(t, 0.5, mini.Agreement, "mini agreement")
		requireMetric(t, 0, mini.CohenKappa, "mini kappa")
		requireMetric(t, 2.0/3, mini.F1, "mini F1")

		// Score: a tie on 101 (4, 5), 2 on 102, 3 on 103, 1 on 104.
		sc := r.Labels[agreement.LabelScore]
		require.Equal(t, 3, sc.Items)
		require.Equal(t, 1, sc.Ties)
	})

	t.Run("AutomaticJudges", func(t *testing.T) {
		t.Parallel()
		s := r.Labels[agreement.LabelSuccess]
		// The check: success → successful on 101 (= S), failure →
		// unsuccessful on 102 (= U); the error on 103 is no verdict; 104 is all
		// unsure; 105 has no human label. κ = 1 on (S, S), (U, U).
		check := s.Judges["check: webarena-verified"]
		require.Equal(t, 4, check.Verdicts)
		require.Equal(t, 2, check.Items)
		require.Equal(t, 1, check.NoMajority)
		require.Equal(t, 1, check.NoHumanLabel)
		requireMetric(t, 1, check.CohenKappa, "check kappa")
		require.Equal(t, [][]int{{1, 0}, {0, 1}}, check.Confusion.Counts)
		// The LLM judge answers success and, from its judge score, score: 5
		// on 101 (a human tie) and 2 on 102 (= 2).
		judge := r.Labels[agreement.LabelScore].Judges["judge: llm-judge:gpt-4o"]
		require.Equal(t, 2, judge.Verdicts)
		require.Equal(t, 1, judge.Items)
		require.Equal(t, 1, judge.NoMajority)
		require.Contains(t, s.Judges, "judge: llm-judge:gpt-4o")
		// The rubric judge answers rubric items only.
		require.NotContains(t, s.Judges, "rubric: rubric-judge")
		require.NotContains(t, s.Judges, "check: webarena-verified (imported)")
	})

	t.Run("RubricUnits", func(t *testing.T) {
		t.Parallel()
		// Units 101#r1 (pass, pass → pass) and 101#r2 (fail, pass → tie).
		rub := r.Labels[agreement.LabelRubric]
		require.Equal(t, 1, rub.Items)
		require.Equal(t, 2, rub.Labelled)
		require.Equal(t, 1, rub.Ties)
		require.Equal(t, map[string]int{"pass": 1}, rub.Majority)
		// The rubric judge fails r1 (human pass) and r2 (a tie): one pair
		// (pass, fail): agreement 0; rows (1, 0), columns (0, 1), pₑ = 0, κ =
		// 0; TP 0, FN 1: F1 = 0.
		rj := rub.Judges["rubric: rubric-judge"]
		require.Equal(t, 2, rj.Verdicts)
		require.Equal(t, 1, rj.Items)
		require.Equal(t, 1, rj.NoMajority)
		requireMetric(t, 0, rj.Agreement, "rubric agreement")
		requireMetric(t, 0, rj.CohenKappa, "rubric kappa")
		requireMetric(t, 0, rj.F1, "rubric F1")
		// mini passes r1 (= pass) and fails r2 (a tie).
		requireMetric(t, 1, rub.Judges["mini"].Agreement, "mini rubric agreement")
		// alice and bob pair on both units: (pass, pass) and (fail, pass).
		require.Equal(t, 2, rub.HumanHuman.Pairs)
	})
}

func TestBuildStudyReport_Leaderboard(t *testing.T) {
	t.Parallel()
	sr := buildStudy(t, studyFixture(), agreement.Options{Resamples: 200, Seed: 5})

	// Ranking labels: success for every judge compared on it; the scorer
	// answers score only (pairs (2, 2), (3, 3): quadratic κ = 1); the rubric
	// judge rubric only; idle nothing.
	//
	//	judge                     label    items  agreement  kappa
	//	big                       success  2      1          1      (S=S, U=U)
	//	scorer                    score    2      1          1 (quadratic)
	//	check: webarena-verified  success  2      1          1
	//	mini                      success  2      ½          0
	//	mini (imported)           success  2      ½          0      (S→U, U=U)
	//	judge: llm-judge:gpt-4o   success  2      ½          0      (S=S, U→S)
	//	rubric: rubric-judge      rubric   1      0          0
	//	idle                      —        0      —          —
	//
	// Equal kappa and agreement: study judges, then imported, then automatic.
	var names []string
	for _, j := range sr.Leaderboard {
		names = append(names, j.Judge)
	}
	require.Equal(t, []string{"big", "scorer", "check: webarena-verified", "mini", "mini (imported)",
		"judge: llm-judge:gpt-4o", "rubric: rubric-judge", "idle"}, names)

	byName := map[string]agreement.JudgeRank{}
	for _, j := range sr.Leaderboard {
		byName[j.Judge] = j
	}
	big := byName["big"]
	require.Equal(t, agreement.JudgeKindStudy, big.Kind)
	require.Equal(t, "gpt-4o", big.Config.Model)
	require.Equal(t, agreement.LabelSuccess, big.Label)
	require.Equal(t, agreement.MetricCohenKappa, big.KappaMetric)
	requireMetric(t, 1, big.F1, "big F1")
	require.NotNil(t, big.AgreementInterval, "intervals drawn with Resamples > 0")
	require.Equal(t, 1.0, big.AgreementInterval.Low)

	scorer := byName["scorer"]
	require.Equal(t, agreement.JudgeKindImported, scorer.Kind)
	require.Nil(t, scorer.Config)
	require.Equal(t, agreement.LabelScore, scorer.Label)
	require.Equal(t, agreement.MetricQuadraticKappa, scorer.KappaMetric)
	requireMetric(t, 1, scorer.Kappa, "scorer quadratic kappa")
	require.Nil(t, scorer.F1, "no F1 on an ordinal label")

	require.Equal(t, agreement.JudgeKindImported, byName["mini (imported)"].Kind)
	require.Equal(t, agreement.LabelRubric, byName["rubric: rubric-judge"].Label)

	// Costs: mini judged 4 items and failed 1: 4 × 0.01 + 0.005 = 0.045,
	// 0.01125 per judgment. big 2 × 0.1. The check costs 0 whatever is
	// stored; the LLM judge 2 × 0.02; the rubric judge 0.03 for one.
	for _, tc := range []struct {
		judge             string
		judgments, errors int
		cost, perJudgment float64
		kind              string
	}{
		{"mini", 4, 1, 0.045, 0.01125, agreement.JudgeKindStudy},
		{"big", 2, 0, 0.2, 0.1, agreement.JudgeKindStudy},
		{"mini (imported)", 2, 0, 0, 0, agreement.JudgeKindImported},
		{"check: webarena-verified", 4, 1, 0, 0, agreement.JudgeKindAutomatic},
		{"judge: llm-judge:gpt-4o", 2, 0, 0.04, 0.02, agreement.JudgeKindAutomatic},
		{"rubric: rubric-judge", 1, 0, 0.03, 0.03, agreement.JudgeKindAutomatic},
	} {
		j := byName[tc.judge]
		require.Equal(t, tc.kind, j.Kind, tc.judge)
		require.Equal(t, tc.judgments, j.Judgments, tc.judge)
		require.Equal(t, tc.errors, j.Errors, tc.judge)
		require.InDelta(t, tc.cost, j.Cost, 1e-12, tc.judge)
		requireMetric(t, tc.perJudgment, j.CostPerJudgment, tc.judge+" cost per judgment")
	}
	idle := byName["idle"]
	require.Equal(t, agreement.Label(""), idle.Label)
	require.Zero(t, idle.Judgments)
	require.Nil(t, idle.CostPerJudgment, "no judgments: no cost per judgment")
	require.Nil(t, idle.Kappa)
	require.NotNil(t, idle.Config, "a configured judge is listed before it has judged")
}

func TestBuildStudyReport_Disagreements(t *testing.T) {
	t.Parallel()
	sr := buildStudy(t, studyFixture(), agreement.Options{})
	type row struct {
		item         int64
		label        agreement.Label
		judge, value string
		majority     string
	}
	var got []row
	for _, d := range sr.Disagreements {
		got = append(got, row{d.ItemID, d.Label, d.Judge, d.JudgeValue, d.Majority})
	}
	// Sure answers that differ from a majority, in sample order, then label
	// (rubric last), then judge. Ties (101 score, 101 r2, 103 success) and
	// the all-unsure 104 give none.
	require.Equal(t, []row{
		{101, agreement.LabelSuccess, "mini (imported)", "unsuccessful", "successful"},
		{101, agreement.LabelRubric, "rubric: rubric-judge", "fail", "pass"},
		{102, agreement.LabelSuccess, "judge: llm-judge:gpt-4o", "successful", "unsuccessful"},
		{102, agreement.LabelSuccess, "mini", "successful", "unsuccessful"},
		{102, agreement.LabelScore, "mini", "3", "2"},
	}, got)

	rubric := sr.Disagreements[1]
	require.Equal(t, int64(501), rubric.RubricItemID)
	require.Equal(t, "r1", rubric.RubricKey)
	require.Equal(t, agreement.Key{Benchmark: "wa", Model: "gpt-4o (run 1)", TaskID: "7#r1"}, rubric.Key)
	require.Equal(t, agreement.JudgeKindAutomatic, rubric.JudgeKind)
	require.Equal(t, 1, rubric.Position)
	// Every human answer is shown, unsure ones too.
	require.Equal(t, []agreement.HumanAnswer{{Annotator: "alice", Value: "unsuccessful"}, {Annotator: "bob", Value: "unsure"}},
		sr.Disagreements[3].Humans)
	require.Equal(t, key102, sr.Disagreements[3].Key)

	require.Len(t, sr.FilterDisagreements(agreement.LabelSuccess, ""), 3)
	require.Len(t, sr.FilterDisagreements("", "mini"), 2)
	require.Equal(t, sr.Disagreements[4:], sr.FilterDisagreements(agreement.LabelScore, "mini"))
	require.Empty(t, sr.FilterDisagreements(agreement.LabelLooping, ""))
	require.Equal(t, sr.Disagreements, sr.FilterDisagreements("", ""))
	require.Equal(t, []agreement.Label{agreement.LabelSuccess, agreement.LabelScore, agreement.LabelRubric}, sr.DisagreementLabels())
	require.Equal(t, []string{"judge: llm-judge:gpt-4o", "mini", "mini (imported)", "rubric: rubric-judge"}, sr.DisagreementJudges())
}

func TestBuildStudyReport_Breakdowns(t *testing.T) {
	t.Parallel()
	sr := buildStudy(t, studyFixture(), agreement.Options{})
	type group struct {
		value           string
		items, labelled int
	}
	groups := func(facet string) []group {
		var out []group
		for _, b := range sr.Breakdowns[facet] {
			out = append(out, group{b.Value, b.Items, b.Labelled})
		}
		return out
	}
	// Labelled items: 101–104; 105 has no label.
	require.Equal(t, []group{{"ody", 1, 1}, {"wa", 4, 3}}, groups(agreement.FacetBenchmark))
	require.Equal(t, []group{{"A", 3, 2}, {"B", 1, 1}, {"Claude Agent", 1, 1}}, groups(agreement.FacetAgent))
	require.Equal(t, []group{{"gitlab", 2, 1}, {"shopping", 2, 2}, {agreement.FacetValueUnknown, 1, 1}}, groups(agreement.FacetSite))
	require.Equal(t, []group{{"easy", 2, 2}, {"hard", 2, 1}, {agreement.FacetValueUnlabelled, 1, 1}}, groups(agreement.FacetDifficulty))

	// Agent A: items 101, 103, 105. Success: S on 101, a tie on 103: big
	// compared on 101 only; mini on 101 (S = S), 105 has no human label.
	a := sr.Breakdowns[agreement.FacetAgent][0].Report
	require.Equal(t, agreement.HumanSummary{Labels: 4, Annotators: 2, Items: 2, Overlap: 2}, a.Human)
	require.Equal(t, 1, a.Labels[agreement.LabelSuccess].Items)
	require.Equal(t, 1, a.Labels[agreement.LabelSuccess].Judges["big"].Items)
	require.Equal(t, &agreement.JudgeSummary{Verdicts: 3, Matched: 2, Unmatched: 1}, a.Judges["mini"])
	// Agent B: item 102 only; the rubric units of 101 are not in it.
	b := sr.Breakdowns[agreement.FacetAgent][1].Report
	require.Equal(t, 0, b.Labels[agreement.LabelRubric].Labelled)
	requireMetric(t, 0, b.Labels[agreement.LabelSuccess].Judges["mini"].Agreement, "mini on agent B")

	t.Run("OneFacet", func(t *testing.T) {
		t.Parallel()
		one := buildStudy(t, studyFixture(), agreement.Options{Facets: []string{agreement.FacetSite}})
		require.Len(t, one.Breakdowns, 1)
		_, ok := one.Breakdown(agreement.FacetSite)
		require.True(t, ok)
		none := buildStudy(t, studyFixture(), agreement.Options{Facets: []string{}})
		require.Empty(t, none.Breakdowns)
	})
	t.Run("UnknownFacet", func(t *testing.T) {
		t.Parallel()
		_, err := agreement.BuildStudyReport(studyFixture(), agreement.Options{Facets: []string{"model"}})
		require.Error(t, err)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Contains(t, err.Error(), `unknown facet "model"`)
	})
}

func TestBuildStudyReport_Empty(t *testing.T) {
	t.Parallel()
	d := studyFixture()
	d.Human = nil
	sr := buildStudy(t, d, agreement.Options{Resamples: 50})
	require.Equal(t, 5, sr.Items)
	require.Zero(t, sr.Labelled)
	require.Zero(t, sr.Report.Human.Items)
	require.Len(t, sr.Report.Labels, len(agreement.Labels()), "every label is there, with nothing in it")
	s := sr.Report.Labels[agreement.LabelSuccess]
	require.Zero(t, s.Items)
	require.Equal(t, 4, s.Judges["mini"].NoHumanLabel, "verdicts are counted, none compared")
	require.Nil(t, s.Judges["mini"].Agreement)
	require.Equal(t, &agreement.JudgeSummary{Verdicts: 4, Unmatched: 4}, sr.Report.Judges["mini"])
	require.Empty(t, sr.Disagreements)
	require.Len(t, sr.Leaderboard, 8, "every judge is listed, with its costs")
	for _, j := range sr.Leaderboard {
		require.Nil(t, j.Kappa, j.Judge)
		require.Equal(t, agreement.Label(""), j.Label, j.Judge)
	}
	require.Len(t, sr.Breakdowns[agreement.FacetBenchmark], 2)

	t.Run("NoItems", func(t *testing.T) {
		t.Parallel()
		sr := buildStudy(t, &models.StudyData{}, agreement.Options{})
		require.Zero(t, sr.Items)
		require.Empty(t, sr.Leaderboard)
		require.Empty(t, sr.Breakdowns[agreement.FacetAgent])
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteStudyReportJSON(&buf, sr))
		require.NoError(t, agreement.WriteStudyReportCSV(&buf, sr))
	})
	t.Run("BuildReportStillRefuses", func(t *testing.T) {
		t.Parallel()
		_, err := agreement.BuildReport(nil, nil, agreement.Options{})
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
	})
}

func TestStudyExports(t *testing.T) {
	t.Parallel()
	d := studyFixture()
	humans := agreement.StudyHumanLabels(d)
	verdicts := agreement.StudyVerdictList(d)

	t.Run("Keys", func(t *testing.T) {
		t.Parallel()
		// One label per annotator and item, one per rubric answer, in sample
		// order; the two runs of gpt-4o on task 7 keep keys of their own.
		var keys []agreement.Key
		for _, h := range humans {
			keys = append(keys, h.Key)
		}
		r1 := agreement.Key{Benchmark: "wa", Model: "gpt-4o (run 1)", TaskID: agreement.RubricUnitTaskID("7", "r1")}
		r2 := agreement.Key{Benchmark: "wa", Model: "gpt-4o (run 1)", TaskID: "7#r2"}
		require.Equal(t, []agreement.Key{key101, r1, r2, key101, r1, r2, key102, key102, key103, key103, key104}, keys)
		require.Equal(t, agreement.Values{agreement.LabelRubric: "fail"}, humans[2].Values)
		require.Equal(t, "carol", humans[10].Annotator)
		// Failed judgments carry no verdict: mini has 4 item verdicts and 2
		// rubric ones; the check 4.
		count := map[string]int{}
		for _, v := range verdicts {
			count[v.Judge]++
		}
		require.Equal(t, map[string]int{"mini": 6, "big": 2, "mini (imported)": 2, "scorer": 2,
			"check: webarena-verified": 4, "judge: llm-judge:gpt-4o": 2, "rubric: rubric-judge": 2}, count)
	})

	t.Run("OfflineReportMatches", func(t *testing.T) {
		t.Parallel()
		// The exported files give the CLI's report the study's figures.
		var hb, vb bytes.Buffer
		require.NoError(t, agreement.WriteHumanCSV(&hb, humans))
		require.NoError(t, agreement.WriteVerdictsJSONL(&vb, verdicts))
		backHumans, skipped, err := agreement.ReadHumanCSV(&hb, agreement.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, skipped)
		backVerdicts, skipped, err := agreement.ReadVerdictsJSONL(&vb, agreement.ReadOptions{})
		require.NoError(t, err)
		require.Empty(t, skipped)
		offline, err := agreement.BuildReport(backHumans, backVerdicts, agreement.Options{Resamples: 100, Seed: 2})
		require.NoError(t, err)
		study := buildStudy(t, d, agreement.Options{Resamples: 100, Seed: 2, Facets: []string{}})
		require.Equal(t, study.Report.Labels, offline.Labels)
	})

	t.Run("ReportFiles", func(t *testing.T) {
		t.Parallel()
		sr := buildStudy(t, d, agreement.Options{Facets: []string{agreement.FacetBenchmark}})
		var buf bytes.Buffer
		require.NoError(t, agreement.WriteStudyReportCSV(&buf, sr))
		rows, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Equal(t, []string{"facet", "value", "label", "comparison", "judge"}, rows[0][:5])
		facets := map[string]int{}
		for _, row := range rows[1:] {
			facets[row[0]+"/"+row[1]]++
		}
		require.Equal(t, []string{"/", "benchmark/ody", "benchmark/wa"}, sortedKeys(facets))
		// Over every item: a human row per label (6) and a row per judge and
		// label it answered: success 5 (mini, big, mini (imported), check,
		// LLM judge), score 4 (mini, big, scorer, LLM judge), rubric 2.
		require.Equal(t, 6+5+4+2, facets["/"])

		buf.Reset()
		require.NoError(t, agreement.WriteStudyReportJSON(&buf, sr))
		var shape struct {
			Items       int                             `json:"items"`
			Report      struct{ Labels map[string]any } `json:"report"`
			Breakdowns  map[string][]map[string]any     `json:"breakdowns"`
			Leaderboard []map[string]any                `json:"leaderboard"`
		}
		require.NoError(t, json.Unmarshal(buf.Bytes(), &shape))
		require.Equal(t, 5, shape.Items)
		require.Contains(t, shape.Report.Labels, "rubric")
		require.Len(t, shape.Breakdowns["benchmark"], 2)
		require.Equal(t, "big", shape.Leaderboard[0]["judge"])
		require.Contains(t, shape.Leaderboard[0], "cost_per_judgment")
	})

	t.Run("ImportMatchesExport", func(t *testing.T) {
		t.Parallel()
		var hb bytes.Buffer
		require.NoError(t, agreement.WriteHumanCSV(&hb, humans))
		back, _, err := agreement.ReadHumanCSV(&hb, agreement.ReadOptions{})
		require.NoError(t, err)
		rows := agreement.HumanImportRows(back)
		rows = append(rows, models.StudyImportRow{Benchmark: "wa", Model: "gpt-4o", TaskID: "99", Who: "dave",
			Labels: models.StudyLabels{"success": "successful"}, Line: 40})
		rows = append(rows, models.StudyImportRow{Benchmark: "wa", Model: "gpt-4o (run 1)", TaskID: "7#r9", Who: "dave",
			Labels: models.StudyLabels{"rubric": "pass"}, Line: 41})
		matched, unmatched := agreement.MatchStudyImport(d.Items, rows)
		require.Len(t, unmatched, 2, "an unknown task and an unknown rubric item")
		require.Equal(t, []int{40, 41}, []int{unmatched[0].Line, unmatched[1].Line})
		// The exported rows merge back into the stored labels: one match per
		// annotator and item, rubric answers under their rubric item's key.
		require.Len(t, matched, len(d.Human))
		for i, m := range matched {
			require.Equal(t, d.Human[i].ItemID, m.ItemID)
			require.Equal(t, d.Human[i].Annotator, m.Who)
			require.Equal(t, d.Human[i].Labels, m.Labels)
		}
		require.Equal(t, []int{2, 3, 4}, matched[0].Lines, "alice's item row and her two rubric rows")
	})
}

// sortedKeys lists a map's keys in order.
func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestBuildStudyReport_Names(t *testing.T) {
	t.Parallel()
	// Two people named alice (a user and an imported annotator) and a bad
	// stored value: the names are made unique, the bad value is left out and
	// named, the rest is measured.
	d := &models.StudyData{
		Items: []models.StudyDataItem{{ItemID: 1, RunID: 1, Position: 1, Benchmark: "wa", Model: "m", TaskID: "1"}},
		Human: []models.StudyHumanLabel{
			{ItemID: 1, UserID: 7, Annotator: "alice", Labels: models.StudyLabels{"success": "successful"}},
			{ItemID: 1, Annotator: "alice", Labels: models.StudyLabels{"success": "Successful", "looping": "maybe"}},
			{ItemID: 2, UserID: 8, Annotator: "bob", Labels: models.StudyLabels{"success": "successful"}},
		},
	}
	sr := buildStudy(t, d, agreement.Options{})
	var names []string
	for _, h := range agreement.StudyHumanLabels(d) {
		names = append(names, h.Annotator)
	}
	require.Equal(t, []string{"alice (user 7)", "alice (imported)"}, names)
	require.Equal(t, 1, sr.Report.Labels[agreement.LabelSuccess].HumanHuman.Pairs)
	require.Len(t, sr.Problems, 2)
	all := strings.Join(sr.Problems, "\n")
	require.Contains(t, all, "labels by bob for item 2: the item is not in the study's sample")
	require.Contains(t, all, `labels by alice (imported) for item 1: trajectory_looping: unknown value "maybe"`)
}
