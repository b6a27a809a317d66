package models_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// fullRow has a value in every column; emptyRow lacks every value a row may
// lack (no optional metric, usage an upload did not state, never finished).
func fullRow() models.LeaderboardRow {
	x := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	done := time.Date(2026, 3, 2, 14, 30, 0, 0, time.UTC)
	return models.LeaderboardRow{
		LeaderboardEntry: models.LeaderboardEntry{
			RunID: 7, Tasks: 10, Successes: 6, SuccessRate: 0.6, CILow: 0.3, CIHigh: 0.85,
			JudgeScore: x(4.2), Judged: 10, RubricScore: x(0.8), PerfectRate: x(0.4), Efficiency: x(0.07),
			MeanSteps: 11.5, CostPerTask: 0.02, Tokens: 42_000,
			HiddenOverall: x(0.7), HiddenRequest: x(0.8), HiddenBrowser: x(0.6), HiddenSystem: x(0.5), HiddenPassed: n(31), HiddenRan: n(42),
		},
		AgentID: 3, AgentName: "Navigator", AgentSlug: "navigator", TeamName: "Lab", TeamSlug: "lab", Model: "gpt-4o",
		Origin: models.OriginExecuted, RunSubset: models.SubsetFull, FinishedAt: &done, Rank: 1, RankBest: 1, RankWorst: 2,
	}
}

func emptyRow() models.LeaderboardRow {
	r := models.LeaderboardRow{AgentName: "Quiet"}
	r.RunID, r.Tasks = 8, 10
	r.Unknown = models.Unknown{Steps: true, Tokens: true, Cost: true}
	return r
}

// TestLeaderboardColumns_Described checks the one list every part of a
// board reads: each column is complete for the parts that show it, keys and
// field names are unambiguous, and Nullable says the truth about Value.
func TestLeaderboardColumns_Described(t *testing.T) {
	t.Parallel()
	cols := models.LeaderboardColumns()
	fields := map[string]bool{}
	for _, c := range cols {
		name := c.Key + c.Field
		require.NotNil(t, c.Value, "%s reads no value", name)
		require.True(t, c.Key != "" || c.Field != "", "a column neither sorted nor exported")
		if c.Boards != 0 {
			require.NotEmpty(t, c.Key, "a table column %q sorts: its header is a sort link", c.Label)
			require.NotEmpty(t, c.Label, "%s has a header", c.Key)
		}
		if c.Key != "" {
			require.NotZero(t, c.Boards, "%s sorts but no table shows it", c.Key)
			require.Contains(t, []string{models.SortAsc, models.SortDesc, ""}, c.Better, c.Key)
		}
		if c.Field != "" {
			require.False(t, fields[c.Field], "two columns export %s", c.Field)
			fields[c.Field] = true
		}
		require.False(t, c.Value(fullRow()).Missing, "%s: the full row has every value", name)
		require.Equal(t, c.Nullable, c.Value(emptyRow()).Missing, "%s: Nullable is whether a row may lack the value", name)
		require.False(t, c.HiddenTestsOnly && !c.Nullable, "%s: a figure only hidden-tests boards have is missing on the others", name)
	}

	for _, hidden := range []bool{false, true} {
		keys := map[string]bool{}
		for _, c := range cols {
			if c.ShownOn(hidden) {
				require.False(t, keys[c.Key], "two columns of one board sort by %s", c.Key)
				keys[c.Key] = true
			}
		}
		require.True(t, keys[models.SortRank] && keys[models.SortSuccessRate] && keys[models.SortDate], "every board ranks, rates and dates")
	}

	// Columns that share a key show one figure on different boards: they
	// sort alike.
	for i, a := range cols {
		for _, b := range cols[i+1:] {
			if a.Key == b.Key && a.Key != "" {
				require.Zero(t, a.Boards&b.Boards, "%s: %q and %q are on the same board", a.Key, a.Label, b.Label)
				require.Equal(t, a.Better, b.Better, a.Key)
				require.Equal(t, a.Kind, b.Kind, a.Key)
				require.Equal(t, a.Value(fullRow()), b.Value(fullRow()), a.Key)
				require.Equal(t, a.Value(emptyRow()), b.Value(emptyRow()), a.Key)
			}
		}
	}

	var sortKeys []string
	for _, c := range models.LeaderboardSortKeys() {
		sortKeys = append(sortKeys, c.Key)
	}
	require.Equal(t, len(sortKeys), len(slices.Compact(slices.Sorted(slices.Values(sortKeys)))), "one sort key each: %v", sortKeys)
	for _, c := range cols {
		got, ok := models.LeaderboardSort(c.Key)
		require.Equal(t, c.Key != "", ok, c.Key)
		if ok {
			require.Contains(t, sortKeys, c.Key)
			require.Equal(t, c.Key, got.Key)
		}
	}
}

// TestLeaderboardExports: the exports carry every exported column once, the
// figures only hidden-tests boards have last, and in table order otherwise.
func TestLeaderboardExports(t *testing.T) {
	t.Parallel()
	var want, wantHidden, got []string
	for _, c := range models.LeaderboardColumns() {
		switch {
		case c.Field == "":
		case c.HiddenTestsOnly:
			wantHidden = append(wantHidden, c.Field)
		default:
			want = append(want, c.Field)
		}
	}
	for _, c := range models.LeaderboardExports() {
		got = append(got, c.Field)
	}
	require.Equal(t, append(want, wantHidden...), got)
	require.Equal(t, []string{"rank", "rank_range", "rank_best", "rank_worst", "run_id", "url", "api_url"}, got[:7], "what and where first")
	require.Equal(t, "finished_at", want[len(want)-1])
}

// TestLeaderboard_Columns: a board's table has the columns of its kind, in
// the list's order, less the optional ones no published run has.
func TestLeaderboard_Columns(t *testing.T) {
	t.Parallel()
	keys := func(lb *models.Leaderboard) []string {
		var out []string
		for _, c := range lb.Columns {
			out = append(out, c.Key)
		}
		return out
	}
	judged := fullRow()
	judged.RubricScore, judged.PerfectRate, judged.Efficiency = nil, nil, nil
	plain := emptyRow()

	lb := &models.Leaderboard{}
	lb.SetRows([]models.LeaderboardRow{plain})
	require.Equal(t, []string{"rank", "agent", "team", "model", "origin", "success_rate", "mean_steps", "cost_per_task", "tokens", "date"}, keys(lb))
	require.False(t, lb.Shows(models.SortJudgeScore))

	lb = &models.Leaderboard{}
	lb.SetRows([]models.LeaderboardRow{plain, judged})
	require.Equal(t, []string{"rank", "agent", "team", "model", "origin", "success_rate", "judge_score", "mean_steps", "cost_per_task", "tokens", "date"}, keys(lb),
		"one judged run shows the judge column")
	require.True(t, lb.Shows(models.SortJudgeScore))
	require.Equal(t, "Success rate", lb.Columns[5].LabelOn(lb.HiddenTests))

	lb = &models.Leaderboard{HiddenTests: true}
	lb.SetRows([]models.LeaderboardRow{fullRow()})
	require.Equal(t, []string{"rank", "agent", "team", "model", "origin", "success_rate", "hidden_overall", "hidden_request", "hidden_browser", "hidden_system",
		"cost_per_task", "tokens_per_task", "mean_steps", "date"}, keys(lb), "no judge or rubric on a hidden-tests board, even with scores")
	var labels []string
	for _, c := range lb.Columns {
		labels = append(labels, c.LabelOn(true))
	}
	require.Equal(t, []string{"Rank", "Agent", "Team", "Model", "Origin", "Pass rate", "Overall", "R", "B", "S", "Cost per task", "Tokens per task", "Turns per task", "Date"}, labels)
}

// TestLeaderboardColumns_SortMissingLast: for every sortable column, a row
// without a value sorts after one with a value in both directions, and the
// first click sorts by the better end.
func TestLeaderboardColumns_SortMissingLast(t *testing.T) {
	t.Parallel()
	full, empty := fullRow(), emptyRow()
	full.SuccessRate, full.CILow, full.CIHigh = 0.1, 0.05, 0.2 // worse standing: order comes from the column
	for _, c := range models.LeaderboardSortKeys() {
		if !c.Nullable {
			continue
		}
		for _, dir := range []string{models.SortAsc, models.SortDesc} {
			got := models.LeaderboardQuery{Sort: c.Key, Dir: dir}.Apply([]models.LeaderboardRow{empty, full})
			require.Equal(t, []int64{full.RunID, empty.RunID}, []int64{got[0].RunID, got[1].RunID}, "%s %s", c.Key, dir)
		}
	}
	for key, dir := range map[string]string{
		models.SortRank: models.SortAsc, models.SortAgent: models.SortAsc, models.SortSuccessRate: models.SortDesc,
		models.SortJudgeScore: models.SortDesc, models.SortCostPerTask: models.SortAsc, models.SortDate: models.SortDesc,
	} {
		c, ok := models.LeaderboardSort(key)
		require.True(t, ok)
		require.Equal(t, dir, c.DefaultDir(), key)
	}
}
