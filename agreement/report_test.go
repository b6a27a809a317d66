package agreement_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
	"proctor/stats"
)

// reportBundle is the fixture files read and the report built from them.
type reportBundle struct {
	humans   []agreement.HumanLabel
	verdicts []agreement.Verdict
	skipped  []agreement.RowError
	report   *agreement.Report
}

// fixtureReport reads testdata/annotations.csv (skipping its bad row),
// judges.csv and judges.jsonl, and builds the report.
func fixtureReport(t *testing.T, resamples int) reportBundle {
	t.Helper()
	var b reportBundle
	var err error
	b.humans, b.skipped, err = agreement.ReadHumanCSV(fixture(t, "annotations.csv"), agreement.ReadOptions{Name: "annotations.csv", SkipBadRows: true})
	require.NoError(t, err)
	csvVerdicts, _, err := agreement.ReadVerdictsCSV(fixture(t, "judges.csv"), agreement.ReadOptions{Name: "judges.csv"})
	require.NoError(t, err)
	jsonlVerdicts, _, err := agreement.ReadVerdictsJSONL(fixture(t, "judges.jsonl"), agreement.ReadOptions{Name: "judges.jsonl"})
	require.NoError(t, err)
	b.verdicts = append(csvVerdicts, jsonlVerdicts...)
	b.report, err = agreement.BuildReport(b.humans, b.verdicts, agreement.Options{Resamples: resamples, Seed: 1, Skipped: b.skipped})
	require.NoError(t, err)
	return b
}

// requireMetric checks a metric that must be defined.
func requireMetric(t *testing.T, want float64, got *float64, name string) {
	t.Helper()
	require.NotNil(t, got, "%s is null, want %v", name, want)
	require.InDelta(t, want, *got, 1e-6, name)
}

// testdata/annotations.csv, by item (A alice, B bob, C carol, in file order;
// S successful, U unsuccessful, ? unsure; optimality 1–4; side effect and
// looping Y/N). Line 22 (carol on webarena.100, "Partially successful") is the
// bad row and is skipped.
//
//	#   item                                   success   side effect  optimality  looping
//	1   webarena gpt-4o webarena.15            S  S  S   N  N  N      4  4  3     N N N
//	2   webarena gpt-4o webarena.24            U  U  S   N  Y  N      1  2  2     N N N
//	3   webarena gpt-4o webarena.40            S  U      N  N         3  2        N N
//	4   webarena claude webarena.15            U  U      ?  N         2  2        N N
//	5   webarena claude webarena.24            S  ?      N  N         3  3        N N
//	6   webarena claude webarena.40            S  S      Y  Y         4  4        N N
//	7   visualwebarena gpt-4o vwa.4            ?     U   N     N      1     1     N   N
//	8   visualwebarena gpt-4o vwa.7            S     S   N     ?      3     4     N   N
//	9   visualwebarena claude vwa.4            U         N            2           N
//	10  assistantbench gpt-4o validation.0     S         N            4           Y
//	11  assistantbench claude validation.0     U         Y            1           N
//	12  workarena gpt-4o create-user           ?         N            2           N
//
// Success. Majority (unsure left out): S on 1, 5, 6, 8, 10; U on 2, 4, 7, 9,
// 11; item 3 ties (S against U); item 12 is all unsure. So items 10, ties 1,
// unsure 1, labelled 12; three unsure answers (A7, B5, A12).
// Pairs of sure answers (first annotator in file order first): item 1 SS SS
// SS; item 2 UU US US; item 3 SU; item 4 UU; item 6 SS; item 8 SS. Items 5 and
// 7 pair a sure answer with an unsure one and give none. 10 pairs on 6 items.
//
//	              second S  second U
//	first S           5         1        rows (6, 4)
//	first U           2         2        columns (7, 3)
//
// agreement = 7/10 = 0.7; pₑ = (6·7 + 4·3)/100 = 0.54;
// κ = (0.7 − 0.54)/(1 − 0.54) = 0.16/0.46 = 0.347826.
// Krippendorff: the units with two or more sure values are {S,S,S}, {U,U,S},
// {S,U}, {U,U}, {S,S}, {S,S}. Coincidences: oSS = 3 + 2 + 2 = 7, oUU = 1 + 2 =
// 3, oSU = oUS = 1 + 1 = 2; nS = 9, nU = 5, n = 14.
// α = 1 − (n − 1)·(oSU + oUS)/(2·nS·nU) = 1 − 13·4/90 = 1 − 52/90 = 0.422222.
//
// Side effect. Sure pairs: item 1 NN NN NN; item 2 NY NN YN; item 3 NN; item 5
// NN; item 6 YY; item 7 NN (items 4 and 8 pair with an unsure answer). 10
// pairs, 8 agree: 0.8. Table rows first, columns second, order (Y, N):
// [[1, 1], [1, 7]]: rows (2, 8), columns (2, 8), pₑ = (4 + 64)/100 = 0.68,
// κ = (0.8 − 0.68)/0.32 = 0.375. Units {N,N,N}, {N,Y,N}, {N,N}, {N,N}, {Y,Y},
// {N,N}: oNN = 3 + 1 + 2 + 2 + 2 = 10, oYY = 2, oNY = oYN = 1, nN = 11, nY =
// 3, n = 14: α = 1 − 13·2/(2·33) = 1 − 26/66 = 0.606061. Majority Y on 6 and
// 11, N on the other ten: 12 items, no tie.
//
// Optimality (no unsure answer). Pairs: item 1 (4,4) (4,3) (4,3); item 2 (1,2)
// (1,2) (2,2); item 3 (3,2); item 4 (2,2); item 5 (3,3); item 6 (4,4); item 7
// (1,1); item 8 (3,4). 12 pairs, 6 agree: 0.5. First ratings by category
// 1–4: (3, 2, 3, 4); second: (1, 5, 3, 3).
// κ = (12·6 − (3·1 + 2·5 + 3·3 + 4·3))/(144 − 34) = (72 − 34)/110 = 0.345455.
// Quadratic: the six misses are all one step, observed 6; expected
// Σ aᵢ·bⱼ·(i−j)² = 3·44 + 2·16 + 3·12 + 4·32 = 328; κw = 1 − 12·6/328 =
// 1 − 72/328 = 0.780488.
// Krippendorff: units {4,4,3}, {1,2,2}, {3,2}, {2,2}, {3,3}, {4,4}, {1,1},
// {3,4}: o11 = 2, o12 = o21 = 1, o22 = 3, o23 = o32 = 1, o33 = 2, o34 = o43 =
// 2, o44 = 3; n = (3, 5, 5, 5), 18 values.
// Nominal: α = 1 − 17·8/(18² − (9 + 25 + 25 + 25)) = 1 − 136/240 = 0.433333.
// Interval: every disagreement is one step, observed 8; expected
// 2·(15·1 + 15·4 + 15·9 + 25·1 + 25·4 + 25·1) = 720; α = 1 − 17·8/720 =
// 0.811111.
// Ordinal: δ² (1,2) = (8 − 4)² = 16, (2,3) = (10 − 5)² = 25, (3,4) = 25,
// (1,3) = (13 − 4)² = 81, (1,4) = (18 − 4)² = 196, (2,4) = (15 − 5)² = 100;
// observed 2·(1·16 + 1·25 + 2·25) = 182; expected 2·(15·16 + 15·81 + 15·196 +
// 25·25 + 25·100 + 25·25) = 16290; α = 1 − 17·182/16290 = 0.810068.
// Majority: 4 on 1, 6, 10; 2 on 2, 4, 9, 12; 3 on 5; 1 on 7, 11; items 3
// (3 against 2) and 8 (3 against 4) tie: 10 items, 2 ties.
//
// Looping: every sure pair is (N, N): 12 pairs, agreement 1, but one category
// only, so κ and α are undefined (null).
func TestBuildReport_HumanHuman(t *testing.T) {
	t.Parallel()
	b := fixtureReport(t, 0)
	r := b.report

	require.Equal(t, agreement.HumanSummary{Labels: 22, Annotators: 3, Items: 12, Overlap: 8}, r.Human)
	require.Equal(t, 1, r.SkippedRows)
	require.Equal(t, 22, r.Skipped[0].Line)
	require.Len(t, r.Labels, len(agreement.Labels()), "every label is in the report")

	success := r.Labels[agreement.LabelSuccess]
	require.Equal(t, 10, success.Items)
	require.Equal(t, 12, success.Labelled)
	require.Equal(t, 1, success.Ties)
	require.Equal(t, 1, success.Unsure)
	require.Equal(t, 3, success.UnsureAnswers)
	require.Equal(t, map[string]int{"successful": 5, "unsuccessful": 5}, success.Majority)
	require.Equal(t, "successful", *success.Positive)
	hh := success.HumanHuman
	require.Equal(t, 6, hh.Items)
	require.Equal(t, 10, hh.Pairs)
	require.Equal(t, 3, hh.Annotators)
	require.Equal(t, [][]int{{5, 1}, {2, 2}}, hh.Confusion.Counts)
	requireMetric(t, 0.7, hh.Agreement, "agreement")
	requireMetric(t, 0.347826, hh.CohenKappa, "kappa")
	requireMetric(t, 0.422222, hh.KrippendorffAlpha, "alpha")
	require.Nil(t, hh.QuadraticKappa, "not an ordinal label")
	require.Nil(t, hh.KrippendorffAlphaOrdinal)
	require.Nil(t, hh.KrippendorffAlphaInterval)

	side := r.Labels[agreement.LabelSideEffect]
	require.Equal(t, [4]int{12, 12, 0, 0}, [4]int{side.Items, side.Labelled, side.Ties, side.Unsure})
	require.Equal(t, 2, side.UnsureAnswers)
	require.Equal(t, map[string]int{"yes": 2, "no": 10}, side.Majority)
	require.Equal(t, 10, side.HumanHuman.Pairs)
	require.Equal(t, [][]int{{1, 1}, {1, 7}}, side.HumanHuman.Confusion.Counts)
	requireMetric(t, 0.8, side.HumanHuman.Agreement, "agreement")
	requireMetric(t, 0.375, side.HumanHuman.CohenKappa, "kappa")
	requireMetric(t, 0.606061, side.HumanHuman.KrippendorffAlpha, "alpha")

	opt := r.Labels[agreement.LabelOptimality]
	require.Nil(t, opt.Positive)
	require.Equal(t, [4]int{10, 12, 2, 0}, [4]int{opt.Items, opt.Labelled, opt.Ties, opt.Unsure})
	require.Equal(t, map[string]int{"1": 2, "2": 4, "3": 1, "4": 3}, opt.Majority)
	oh := opt.HumanHuman
	require.Equal(t, 8, oh.Items)
	require.Equal(t, 12, oh.Pairs)
	requireMetric(t, 0.5, oh.Agreement, "agreement")
	requireMetric(t, 0.345455, oh.CohenKappa, "kappa")
	requireMetric(t, 0.780488, oh.QuadraticKappa, "quadratic kappa")
	requireMetric(t, 0.433333, oh.KrippendorffAlpha, "alpha nominal")
	requireMetric(t, 0.810068, oh.KrippendorffAlphaOrdinal, "alpha ordinal")
	requireMetric(t, 0.811111, oh.KrippendorffAlphaInterval, "alpha interval")

	loop := r.Labels[agreement.LabelLooping]
	require.Equal(t, 12, loop.HumanHuman.Pairs)
	requireMetric(t, 1, loop.HumanHuman.Agreement, "agreement")
	require.Nil(t, loop.HumanHuman.CohenKappa, "one category: κ is undefined")
	require.Nil(t, loop.HumanHuman.KrippendorffAlpha, "one category: α is undefined")

	score := r.Labels[agreement.LabelScore]
	require.Zero(t, score.Labelled, "nobody gave a score")
	require.Nil(t, score.HumanHuman.Agreement)
	require.Empty(t, score.Judges)
}

// Judges against the human majority (items with a tie or only unsure answers
// are left out), human first:
//
// gpt-4o-mini, success, items 1–12 and webarena.999 (no human label):
//
//	item   1  2  3  4  5  6  7  8  9  10 11 12
//	human  S  U  –  U  S  S  U  S  U  S  U  –     (3 tie, 12 unsure)
//	judge  S  S  S  U  S  U  U  S  S  S  U  U
//	       TP FP    TN TP FN TN TP FP TP TN
//
// TP 4, FP 2, FN 1, TN 3 on 10 items: agreement = accuracy = 7/10, precision
// 4/6 = 0.666667, recall 4/5, F1 8/11 = 0.727273, NPV 3/4, TNR 3/5; κ: human
// (5, 5), judge (6, 4), pₑ = (30 + 20)/100 = 0.5, κ = 0.2/0.5 = 0.4.
// Verdicts 13 = 10 items + 1 no human label + 2 no majority.
//
// gpt-4o-mini, side effect (yes positive): it says yes on 2 and 6; the humans
// on 6 and 11. TP 1 (6), FP 1 (2), FN 1 (11), TN 9: precision = recall = F1 =
// 0.5, accuracy 10/12, NPV = TNR = 9/10; κ: both (2, 10), pₑ = 104/144, pₒ =
// 120/144, κ = 16/40 = 0.4.
//
// gpt-4o-mini, looping: it always says no; the humans say yes on item 10 only.
// TP 0, FP 0, FN 1, TN 11: precision 0/0 is null, recall 0/1 = 0, F1 0/(0 +
// 0 + 1) = 0, accuracy 11/12, NPV 11/12, TNR 11/11; κ: judge constant, pₒ =
// pₑ = 132/144, κ = 0.
//
// functional (success only) on items 1, 2, 4, 5, 6, 8, 10, 11 says S U U U S S
// S U; the humans S U U S S S S U: TP 4, TN 3, FN 1 (item 5), FP 0: accuracy
// 7/8, precision 1, recall 4/5, F1 8/9, NPV 3/4, TNR 1; κ: human (5, 3), judge
// (4, 4), pₑ = 32/64, κ = (0.875 − 0.5)/0.5 = 0.75.
//
// claude-3.7-sonnet-noaxtree (JSON Lines) on items 1, 2, 4, 5, 6:
// success S U U S U against S U U S S: TP 2, TN 2, FN 1: accuracy 0.8,
// precision 1, recall 2/3, F1 4/5, NPV 2/3, TNR 1; κ: human (3, 2), judge
// (2, 3), pₑ = 12/25, κ = (0.8 − 0.48)/0.52 = 0.615385.
// optimality 4 2 3 3 4 against 4 2 2 3 4: 4 of 5 agree; by category 1–4 the
// human counts are (0, 2, 1, 2), the judge's (0, 1, 2, 2): κ = (5·4 − (2 + 2 +
// 4))/(25 − 8) = 12/17 = 0.705882; the one miss is one step, expected
// weighted disagreement 2·(2 + 8) + 1·(1 + 2) + 2·(4 + 2) = 35, κw = 1 − 5/35
// = 0.857143.
// looping: no against no on all five: agreement 1, accuracy, NPV and TNR 1;
// precision, recall, F1 and κ null (no positive, one category).
func TestBuildReport_Judges(t *testing.T) {
	t.Parallel()
	r := fixtureReport(t, 0).report

	require.Equal(t, map[string]*agreement.JudgeSummary{
		"gpt-4o-mini":                {Verdicts: 13, Matched: 12, Unmatched: 1},
		"functional":                 {Verdicts: 8, Matched: 8},
		"claude-3.7-sonnet-noaxtree": {Verdicts: 5, Matched: 5},
	}, r.Judges)

	type want struct {
		items, verdicts, noHuman, noMajority                   int
		agreement, kappa, precision, recall, f1, acc, npv, tnr *float64
	}
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		label agreement.Label
		judge string
		want  want
	}{
		{agreement.LabelSuccess, "gpt-4o-mini", want{10, 13, 1, 2, f(0.7), f(0.4), f(0.666667), f(0.8), f(0.727273), f(0.7), f(0.75), f(0.6)}},
		{agreement.LabelSideEffect, "gpt-4o-mini", want{12, 13, 1, 0, f(0.833333), f(0.4), f(0.5), f(0.5), f(0.5), f(0.833333), f(0.9), f(0.9)}},
		{agreement.LabelLooping, "gpt-4o-mini", want{12, 13, 1, 0, f(0.916667), f(0), nil, f(0), f(0), f(0.916667), f(0.916667), f(1)}},
		{agreement.LabelSuccess, "functional", want{8, 8, 0, 0, f(0.875), f(0.75), f(1), f(0.8), f(0.888889), f(0.875), f(0.75), f(1)}},
		{agreement.LabelSuccess, "claude-3.7-sonnet-noaxtree", want{5, 5, 0, 0, f(0.8), f(0.615385), f(1), f(0.666667), f(0.8), f(0.8), f(0.666667), f(1)}},
		{agreement.LabelLooping, "claude-3.7-sonnet-noaxtree", want{5, 5, 0, 0, f(1), nil, nil, nil, nil, f(1), f(1), f(1)}},
	} {
		t.Run(string(tc.label)+"/"+tc.judge, func(t *testing.T) {
			t.Parallel()
			j := r.Labels[tc.label].Judges[tc.judge]
			require.NotNil(t, j)
			require.Equal(t, [4]int{tc.want.items, tc.want.verdicts, tc.want.noHuman, tc.want.noMajority},
				[4]int{j.Items, j.Verdicts, j.NoHumanLabel, j.NoMajority})
			require.Equal(t, j.Verdicts, j.Items+j.NoHumanLabel+j.NoMajority+j.Unsure)
			for _, m := range []struct {
				name      string
				want, got *float64
			}{
				{"agreement", tc.want.agreement, j.Agreement}, {"kappa", tc.want.kappa, j.CohenKappa},
				{"precision", tc.want.precision, j.Precision}, {"recall", tc.want.recall, j.Recall},
				{"f1", tc.want.f1, j.F1}, {"accuracy", tc.want.acc, j.Accuracy},
				{"npv", tc.want.npv, j.NPV}, {"tnr", tc.want.tnr, j.TNR},
			} {
				if m.want == nil {
					require.Nil(t, m.got, m.name)
					continue
				}
				requireMetric(t, *m.want, m.got, m.name)
			}
			require.Nil(t, j.QuadraticKappa, "binary label")
		})
	}

	t.Run("Ordinal", func(t *testing.T) {
		t.Parallel()
		j := r.Labels[agreement.LabelOptimality].Judges["claude-3.7-sonnet-noaxtree"]
		require.Equal(t, 5, j.Items)
		requireMetric(t, 0.8, j.Agreement, "agreement")
		requireMetric(t, 0.705882, j.CohenKappa, "kappa")
		requireMetric(t, 0.857143, j.QuadraticKappa, "quadratic kappa")
		for _, m := range []*float64{j.Precision, j.Recall, j.F1, j.Accuracy, j.NPV, j.TNR} {
			require.Nil(t, m, "no positive class on an ordinal label")
		}
		require.Equal(t, agreement.Table{Rows: "human majority", Columns: "judge", Categories: []string{"1", "2", "3", "4"},
			Counts: [][]int{{0, 0, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 0}, {0, 0, 0, 2}}}, j.Confusion)
	})

	t.Run("OnlyJudgesThatAnswered", func(t *testing.T) {
		t.Parallel()
		require.Len(t, r.Labels[agreement.LabelSuccess].Judges, 3)
		require.NotContains(t, r.Labels[agreement.LabelSideEffect].Judges, "functional")
		require.NotContains(t, r.Labels[agreement.LabelSideEffect].Judges, "claude-3.7-sonnet-noaxtree", "its only side effect is null")
		require.Equal(t, []string{"claude-3.7-sonnet-noaxtree"}, keys(r.Labels[agreement.LabelOptimality].Judges))
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestBuildReport_Intervals(t *testing.T) {
	t.Parallel()
	r := fixtureReport(t, 1000).report
	require.Equal(t, agreement.BootstrapSettings{Resamples: 1000, Seed: 1, Confidence: 0.95}, r.Bootstrap)

	j := r.Labels[agreement.LabelSuccess].Judges["gpt-4o-mini"]
	for name, v := range j.Metrics() {
		ci, ok := j.Intervals[name]
		if v == nil {
			require.False(t, ok, "%s: no interval for an undefined or inapplicable metric", name)
			continue
		}
		require.True(t, ok, "%s has an interval", name)
		require.True(t, ci.Contains(*v), "%s: %v does not contain %v", name, ci, *v)
		require.Less(t, ci.Low, ci.High, name)
	}
	hh := r.Labels[agreement.LabelOptimality].HumanHuman
	for _, name := range []string{agreement.MetricAgreement, agreement.MetricCohenKappa, agreement.MetricQuadraticKappa,
		agreement.MetricAlpha, agreement.MetricAlphaOrdinal, agreement.MetricAlphaInterval} {
		ci, ok := hh.Intervals[name]
		require.True(t, ok, name)
		require.True(t, ci.Contains(*hh.Metrics()[name]), "%s: %v does not contain %v", name, ci, *hh.Metrics()[name])
	}
	require.NotContains(t, r.Labels[agreement.LabelLooping].HumanHuman.Intervals, agreement.MetricCohenKappa, "κ is undefined")
	require.Equal(t, stats.Interval{Low: 1, High: 1}, r.Labels[agreement.LabelLooping].HumanHuman.Intervals[agreement.MetricAgreement])

	again := fixtureReport(t, 1000).report
	require.Equal(t, r.Labels[agreement.LabelSuccess].Judges["gpt-4o-mini"].Intervals, again.Labels[agreement.LabelSuccess].Judges["gpt-4o-mini"].Intervals,
		"the same seed gives the same intervals")

	none := fixtureReport(t, 0).report
	require.Empty(t, none.Labels[agreement.LabelSuccess].Judges["gpt-4o-mini"].Intervals, "no resamples, no intervals")
}

func TestItems_Majority(t *testing.T) {
	t.Parallel()
	key := agreement.Key{Benchmark: "wa", Model: "m", TaskID: "1"}
	label := func(annotator string, values agreement.Values) agreement.HumanLabel {
		return agreement.HumanLabel{Key: key, Annotator: annotator, Values: values}
	}
	for _, tc := range []struct {
		name   string
		values []string
		want   agreement.Majority
	}{
		{"unanimous", []string{"Successful", "successful"}, agreement.Majority{Value: "successful", Votes: 2}},
		{"two against one", []string{"successful", "unsuccessful", "unsuccessful"}, agreement.Majority{Value: "unsuccessful", Votes: 3}},
		{"tie", []string{"successful", "unsuccessful"}, agreement.Majority{Votes: 2, Tie: true}},
		{"unsure left out of the vote", []string{"unsure", "unsure", "successful"}, agreement.Majority{Value: "successful", Votes: 1, Unsure: 2}},
		{"tie after leaving unsure out", []string{"successful", "unsure", "unsuccessful"}, agreement.Majority{Votes: 2, Unsure: 1, Tie: true}},
		{"all unsure", []string{"unsure", "unsure"}, agreement.Majority{Unsure: 2}},
		{"two-two tie", []string{"successful", "unsuccessful", "successful", "unsuccessful"}, agreement.Majority{Votes: 4, Tie: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var humans []agreement.HumanLabel
			for i, v := range tc.values {
				humans = append(humans, label(string(rune('a'+i)), agreement.Values{agreement.LabelSuccess: v}))
			}
			items, err := agreement.Items(humans)
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.Equal(t, tc.want, items[0].Majority[agreement.LabelSuccess])
			_, ok := items[0].Majority[agreement.LabelLooping]
			require.False(t, ok, "nobody answered looping")
		})
	}

	t.Run("OrdinalPluralityNotMedian", func(t *testing.T) {
		t.Parallel()
		items, err := agreement.Items([]agreement.HumanLabel{
			label("a", agreement.Values{agreement.LabelOptimality: "2. Suboptimal"}),
			label("b", agreement.Values{agreement.LabelOptimality: "3"}),
		})
		require.NoError(t, err)
		require.Equal(t, agreement.Majority{Votes: 2, Tie: true}, items[0].Majority[agreement.LabelOptimality])
	})
}

func TestBuildReport_BadInput(t *testing.T) {
	t.Parallel()
	human := func(annotator, task string, values agreement.Values) agreement.HumanLabel {
		return agreement.HumanLabel{Key: agreement.Key{Benchmark: "wa", Model: "m", TaskID: task}, Annotator: annotator, Values: values}
	}
	verdict := func(judge, task string, values agreement.Values) agreement.Verdict {
		return agreement.Verdict{Key: agreement.Key{Benchmark: "wa", Model: "m", TaskID: task}, Judge: judge, Values: values}
	}
	success := agreement.Values{agreement.LabelSuccess: "Successful"}
	humans := []agreement.HumanLabel{human("a", "1", success), human("b", "1", success), human("a", "2", success)}

	for _, tc := range []struct {
		name     string
		humans   []agreement.HumanLabel
		verdicts []agreement.Verdict
		want     string
	}{
		{"NoHumanLabels", nil, nil, "no human labels: nothing to measure agreement against"},
		{"JudgeMatchesNothing", humans, []agreement.Verdict{verdict("j", "1", success), verdict("k", "7", success), verdict("k", "8", success)},
			`judge "k": none of its 2 verdicts is for an item with human labels (first: wa/m/7); items are matched on benchmark, model_name and task_id`},
		{"DuplicateHuman", append(humans, human("b", "1", success)), nil, `human label 4: annotator "b" labelled wa/m/1 twice`},
		{"DuplicateVerdict", humans, []agreement.Verdict{verdict("j", "1", success), verdict("j", "1", success)}, `verdict 2: judge "j" has two verdicts for wa/m/1`},
		{"EmptyAnnotator", []agreement.HumanLabel{human("", "1", success)}, nil, "human label 1: empty annotator_name"},
		{"EmptyModel", []agreement.HumanLabel{{Key: agreement.Key{Benchmark: "wa", TaskID: "1"}, Annotator: "a", Values: success}}, nil, "human label 1: empty model_name"},
		{"EmptyJudge", humans, []agreement.Verdict{verdict(" ", "1", success)}, "verdict 1: empty judge"},
		{"UnknownLabel", []agreement.HumanLabel{human("a", "1", agreement.Values{"mood": "good"})}, nil, `human label 1: unknown label "mood"`},
		{"BadValue", humans, []agreement.Verdict{{Key: agreement.Key{Benchmark: "wa", Model: "m", TaskID: "1"}, Judge: "j", Line: 9,
			Values: agreement.Values{agreement.LabelLooping: "Maybe"}}}, `verdict on line 9: trajectory_looping: unknown value "Maybe" (allowed: Yes, No, Unsure)`},
		{"UnsureRubric", humans, []agreement.Verdict{verdict("j", "1", agreement.Values{agreement.LabelRubric: "Unsure"})},
			`verdict 1: rubric_pass: "Unsure" is not allowed: this label has no unsure answer`},
		{"DuplicateHumanAfterTrimming", append(humans, human(" b ", "1 ", success)), nil, `human label 4: annotator "b" labelled wa/m/1 twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := agreement.BuildReport(tc.humans, tc.verdicts, agreement.Options{})
			require.Error(t, err)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.True(t, strings.HasPrefix(models.ErrorMessage(err), tc.want), "got %q", models.ErrorMessage(err))
		})
	}

	t.Run("PartlyUnmatchedJudgeIsCounted", func(t *testing.T) {
		t.Parallel()
		r, err := agreement.BuildReport(humans, []agreement.Verdict{verdict("j", "1", success), verdict("j", "9", success)}, agreement.Options{})
		require.NoError(t, err)
		require.Equal(t, agreement.JudgeSummary{Verdicts: 2, Matched: 1, Unmatched: 1}, *r.Judges["j"])
		require.Equal(t, 1, r.Labels[agreement.LabelSuccess].Judges["j"].NoHumanLabel)
	})

	t.Run("JudgeUnsureIsCounted", func(t *testing.T) {
		t.Parallel()
		r, err := agreement.BuildReport(humans, []agreement.Verdict{verdict("j", "1", agreement.Values{agreement.LabelSuccess: "unsure"}), verdict("j", "2", success)}, agreement.Options{})
		require.NoError(t, err)
		j := r.Labels[agreement.LabelSuccess].Judges["j"]
		require.Equal(t, [3]int{2, 1, 1}, [3]int{j.Verdicts, j.Items, j.Unsure})
		// One item, both successful: one category, κ undefined, agreement 1.
		require.Nil(t, j.CohenKappa)
		requireMetric(t, 1, j.Agreement, "agreement")
	})

	t.Run("NoJudges", func(t *testing.T) {
		t.Parallel()
		r, err := agreement.BuildReport(humans, nil, agreement.Options{Resamples: 100})
		require.NoError(t, err)
		require.Empty(t, r.Judges)
		require.NotNil(t, r.Labels[agreement.LabelSuccess].Judges, "an empty map, not null, for scripts")
		require.Equal(t, 1, r.Labels[agreement.LabelSuccess].HumanHuman.Pairs)
	})
}

// TestBuildReport_PublishedLayout builds the report on
// testdata/annotations_published_layout.csv (its table is above
// publishedLayout in read_test.go), with a judge on three of its items.
// Unsure answers are out of the votes, the pairs and every statistic, and
// counted per label:
//
//	label        unsure answers  all-unsure items  majorities            sure pairs (items)
//	success      4               1 (7)             S 3, U 3              6 (1, 2, 3, 6)
//	side effect  2               0                 N 6, Y 1              8 (1, 2, 5, 6)
//	optimality   4               1 (7)             1:1 2:2 3:1 4:2       7 (1, 2, 5)
//	looping      3               1 (7)             N 5, Y 1              7 (1, 2, 3, 5, 6)
//
// Counting unsure answers as a category would give success 10 pairs (item 2
// three, items 4 and 5 one each) and a majority to item 7.
//
// Success pairs: SS ×3 on 1, UU on 2 (alice, carol), UU on 3, SS on 6:
// agreement 1, κ 1. Side effect: NN ×3 on 1; on 2 NN, NY, NY; NN on 5; YY on
// 6: 6 of 8 agree, rows (first) Y 1, N 7, columns Y 3, N 5, pₑ = 38/64, κ =
// (48 − 38)/(64 − 38) = 0.384615. Optimality: (4,4) (4,3) (4,3) on 1, (1,2)
// (1,2) (2,2) on 2, (1,1) on 5: 3 of 7 agree. Looping: NN ×3 on 1, NN on 2,
// 3 and 6, YY on 5: agreement 1, κ 1.
//
// The judge says, on item 1 (its key spelled with spaces), S, optimality 4,
// looping N; on item 4, optimality unsure and looping N; on item 7 (all
// unsure), U, optimality 1, looping Y. On success: 2 verdicts, 1 compared, 1
// without a majority; optimality: 3 verdicts, 1 compared, 1 without a
// majority, 1 unsure; looping: 3 verdicts, 2 compared, 1 without a majority.
func TestBuildReport_PublishedLayout(t *testing.T) {
	t.Parallel()
	humans, skipped, err := agreement.ReadHumanCSV(fixture(t, publishedLayout), agreement.ReadOptions{Name: publishedLayout})
	require.NoError(t, err)
	require.Empty(t, skipped)
	const gpt4o, claude = "GenericAgent-gpt-4o-2024-11-20", "GenericAgent-anthropic_claude-3.7-sonnet"
	verdicts := []agreement.Verdict{
		{Key: agreement.Key{Benchmark: " webarena ", Model: gpt4o, TaskID: "webarena.15 "}, Judge: " j",
			Values: agreement.Values{"success": "Successful", "optimality": "4. Completely Optimal", "looping": "No"}},
		{Key: agreement.Key{Benchmark: "webarena", Model: claude, TaskID: "webarena.24"}, Judge: "j",
			Values: agreement.Values{"optimality": "Unsure", "looping": "No"}},
		{Key: agreement.Key{Benchmark: "workarena", Model: gpt4o, TaskID: "workarena.servicenow.create-user"}, Judge: "j",
			Values: agreement.Values{"success": "Unsuccessful", "optimality": "1. Complete Failure", "looping": "Yes"}},
	}
	r, err := agreement.BuildReport(humans, verdicts, agreement.Options{})
	require.NoError(t, err)

	require.Equal(t, agreement.HumanSummary{Labels: 15, Annotators: 3, Items: 7, Overlap: 6}, r.Human)
	require.Equal(t, map[string]*agreement.JudgeSummary{"j": {Verdicts: 3, Matched: 3}}, r.Judges, "keys and names are trimmed")

	type counts struct{ items, labelled, ties, unsureItems, unsureAnswers, pairs, pairItems, annotators int }
	for _, tc := range []struct {
		label    agreement.Label
		want     counts
		majority map[string]int
		table    [][]int
	}{
		{agreement.LabelSuccess, counts{6, 7, 0, 1, 4, 6, 4, 3}, map[string]int{"successful": 3, "unsuccessful": 3}, [][]int{{4, 0}, {0, 2}}},
		{agreement.LabelSideEffect, counts{7, 7, 0, 0, 2, 8, 4, 3}, map[string]int{"yes": 1, "no": 6}, [][]int{{1, 0}, {2, 5}}},
		{agreement.LabelOptimality, counts{6, 7, 0, 1, 4, 7, 3, 3}, map[string]int{"1": 1, "2": 2, "3": 1, "4": 2},
			[][]int{{1, 2, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 2, 1}}},
		{agreement.LabelLooping, counts{6, 7, 0, 1, 3, 7, 5, 3}, map[string]int{"yes": 1, "no": 5}, [][]int{{1, 0}, {0, 6}}},
		{agreement.LabelScore, counts{}, map[string]int{}, [][]int{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}},
	} {
		lr := r.Labels[tc.label]
		h := lr.HumanHuman
		require.Equal(t, tc.want, counts{lr.Items, lr.Labelled, lr.Ties, lr.Unsure, lr.UnsureAnswers, h.Pairs, h.Items, h.Annotators}, tc.label)
		require.Equal(t, tc.majority, lr.Majority, tc.label)
		require.Equal(t, tc.table, h.Confusion.Counts, tc.label)
	}
	for _, l := range []agreement.Label{agreement.LabelSuccess, agreement.LabelLooping} {
		requireMetric(t, 1, r.Labels[l].HumanHuman.Agreement, string(l)+" agreement")
		requireMetric(t, 1, r.Labels[l].HumanHuman.CohenKappa, string(l)+" kappa")
	}
	requireMetric(t, 0.75, r.Labels[agreement.LabelSideEffect].HumanHuman.Agreement, "side effect agreement")
	requireMetric(t, 0.384615, r.Labels[agreement.LabelSideEffect].HumanHuman.CohenKappa, "side effect kappa")
	requireMetric(t, 3.0/7, r.Labels[agreement.LabelOptimality].HumanHuman.Agreement, "optimality agreement")

	for _, tc := range []struct {
		label                                        agreement.Label
		verdicts, items, noHuman, noMajority, unsure int
	}{
		{agreement.LabelSuccess, 2, 1, 0, 1, 0},
		{agreement.LabelOptimality, 3, 1, 0, 1, 1},
		{agreement.LabelLooping, 3, 2, 0, 1, 0},
	} {
		j := r.Labels[tc.label].Judges["j"]
		require.NotNil(t, j, tc.label)
		require.Equal(t, [5]int{tc.verdicts, tc.items, tc.noHuman, tc.noMajority, tc.unsure},
			[5]int{j.Verdicts, j.Items, j.NoHumanLabel, j.NoMajority, j.Unsure}, tc.label)
		requireMetric(t, 1, j.Agreement, string(tc.label)+" judge agreement")
	}

	items, err := agreement.Items(humans)
	require.NoError(t, err)
	require.Len(t, items, 7)
	require.Equal(t, agreement.Majority{Value: "successful", Votes: 1, Unsure: 1}, items[3].Majority[agreement.LabelSuccess], "item 4: bob's unsure is no vote")
	require.Equal(t, agreement.Majority{Value: "3", Votes: 1, Unsure: 1}, items[3].Majority[agreement.LabelOptimality])
	require.Equal(t, agreement.Majority{Value: "no", Votes: 2, Unsure: 1}, items[1].Majority[agreement.LabelLooping], "item 2")
	require.Equal(t, "workarena.servicenow.create-user", items[5].Key.TaskID)
	for _, l := range []agreement.Label{agreement.LabelSuccess, agreement.LabelOptimality, agreement.LabelLooping} {
		require.Equal(t, agreement.Majority{Unsure: 1}, items[5].Majority[l], "item 7 is all unsure on %s", l)
	}
}
