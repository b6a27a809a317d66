package models_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func tally(passed, failed int) models.HiddenTally {
	return models.HiddenTally{Total: passed + failed, Passed: passed, Failed: failed}
}

func TestMeanHiddenRates(t *testing.T) {
	t.Parallel()
	// a: R 2/2, B 1/2 (L1 1/1, L3 0/1), no system tests; b: R 0/1, S 1/1.
	a := &models.HiddenSummary{Overall: tally(3, 1), Request: tally(2, 0), Browser: tally(1, 1), L1: tally(1, 0), L3: tally(0, 1)}
	b := &models.HiddenSummary{Overall: tally(1, 1), Request: tally(0, 1), System: tally(1, 0)}

	t.Run("EachTaskWeighsTheSame", func(t *testing.T) {
		m := models.MeanHiddenRates([]*models.HiddenSummary{a, b})
		require.InDelta(t, (0.75+0.5)/2, *m.Overall, 1e-9)
		require.InDelta(t, (1.0+0)/2, *m.Request, 1e-9)
		require.InDelta(t, 0.5, *m.Browser, 1e-9, "only a has browser tests")
		require.InDelta(t, 1.0, *m.System, 1e-9, "only b has system tests")
		require.InDelta(t, 1.0, *m.L1, 1e-9)
		require.Nil(t, m.L2, "no task has L2 tests")
		require.InDelta(t, 0.0, *m.L3, 1e-9)
	})
	t.Run("UntestedTaskCountsZero", func(t *testing.T) {
		m := models.MeanHiddenRates([]*models.HiddenSummary{a, b, nil})
		require.InDelta(t, (0.75+0.5+0)/3, *m.Overall, 1e-9)
		require.InDelta(t, (1.0+0+0)/3, *m.Request, 1e-9)
		require.InDelta(t, (0.5+0)/2, *m.Browser, 1e-9, "a and the untested task")
		require.Nil(t, m.L2, "still nothing measured")
	})
	t.Run("Empty", func(t *testing.T) {
		require.Equal(t, models.HiddenRates{}, models.MeanHiddenRates(nil))
		m := models.MeanHiddenRates([]*models.HiddenSummary{nil, nil})
		require.InDelta(t, 0.0, *m.Overall, 1e-9, "tasks that could not be tested score 0")
		require.Nil(t, m.Request)
	})
}

func TestHiddenTestFilter(t *testing.T) {
	t.Parallel()
	failedB2 := models.HiddenTestView{TestID: "b2", Group: models.HiddenGroupBrowser, Level: 2, Result: models.HiddenFailed}
	flakyR := models.HiddenTestView{TestID: "r1", Group: models.HiddenGroupRequest, Result: models.HiddenPassed, Flaky: true}
	for _, c := range []struct {
		name   string
		filter models.HiddenTestFilter
		keeps  []bool // failedB2, flakyR
		query  string
	}{
		{"None", models.HiddenTestFilter{}, []bool{true, true}, ""},
		{"Failed", models.HiddenTestFilter{Result: models.HiddenFailed}, []bool{true, false}, "?result=failed"},
		{"Flaky", models.HiddenTestFilter{Result: models.HiddenFlaky}, []bool{false, true}, "?result=flaky"},
		{"Passed", models.HiddenTestFilter{Result: models.HiddenPassed}, []bool{false, true}, "?result=passed"},
		{"Group", models.HiddenTestFilter{Group: models.HiddenGroupRequest}, []bool{false, true}, "?group=request"},
		{"Level", models.HiddenTestFilter{Level: 2}, []bool{true, false}, "?level=2"},
		{"All", models.HiddenTestFilter{Result: models.HiddenFailed, Group: models.HiddenGroupBrowser, Level: 3}, []bool{false, false}, "?result=failed&group=browser&level=3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.filter.Validate())
			require.Equal(t, c.keeps, []bool{c.filter.Keeps(failedB2), c.filter.Keeps(flakyR)})
			require.Equal(t, c.query, c.filter.Query())
			require.Equal(t, c.query != "", c.filter.Active())
		})
	}
	for field, f := range map[string]models.HiddenTestFilter{
		"result": {Result: "skipped"}, "group": {Group: "visual"}, "level": {Level: 4},
	} {
		err := f.Validate()
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, field, models.ErrorField(err))
	}
	require.Equal(t, "level", models.ErrorField(models.HiddenTestFilter{Level: -1}.Validate()))
}

func TestLeaderboardQuery_HiddenSorts(t *testing.T) {
	t.Parallel()
	rate := func(x float64) *float64 { return &x }
	rows := []models.LeaderboardRow{
		{LeaderboardEntry: models.LeaderboardEntry{RunID: 1, Tasks: 2, Tokens: 100, HiddenOverall: rate(0.5), HiddenSystem: rate(0.9)}},
		{LeaderboardEntry: models.LeaderboardEntry{RunID: 2, Tasks: 1, Tokens: 80, HiddenOverall: rate(0.8), HiddenSystem: nil}},
		{LeaderboardEntry: models.LeaderboardEntry{RunID: 3, Tasks: 4, Tokens: 120, HiddenOverall: rate(0.2), HiddenSystem: rate(0.1)}},
	}
	ids := func(q models.LeaderboardQuery) []int64 {
		var out []int64
		for _, r := range q.Apply(rows) {
			out = append(out, r.RunID)
		}
		return out
	}
	require.Equal(t, []int64{2, 1, 3}, ids(models.LeaderboardQuery{Sort: models.SortHiddenOverall}), "best overall first")
	require.Equal(t, []int64{1, 3, 2}, ids(models.LeaderboardQuery{Sort: models.SortHiddenSystem}), "a run without the rate last")
	require.Equal(t, []int64{3, 1, 2}, ids(models.LeaderboardQuery{Sort: models.SortTokensPerTask}), "30, 50, 80 tokens per task")
	for _, key := range []string{models.SortHiddenOverall, models.SortHiddenRequest, models.SortHiddenBrowser, models.SortHiddenSystem, models.SortTokensPerTask} {
		_, ok := models.LeaderboardSort(key)
		require.True(t, ok, key)
	}
	require.InDelta(t, 0.0, models.LeaderboardRow{}.TokensPerTask(), 1e-9)
}
