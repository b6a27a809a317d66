package models_test

import (
	"math"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestHiddenTally_Outcome is a hidden-tests task's outcome rule: its pass
// rate over the tests that ran against the benchmark's threshold, every
// test that ran by default; tests not run decide nothing.
func TestHiddenTally_Outcome(t *testing.T) {
	t.Parallel()
	// The sample's copy and broken rebuild: 43 tests, the offline build not run.
	copyTally := models.HiddenTally{Total: 43, Passed: 42, NotRun: 1}
	broken := models.HiddenTally{Total: 43, Passed: 31, Failed: 11, NotRun: 1}
	for _, c := range []struct {
		name      string
		tally     models.HiddenTally
		threshold float64
		want      string
	}{
		{"EveryTestThatRanPassed", copyTally, models.DefaultPassThreshold, models.OutcomeSuccess},
		{"NotRunDecidesNothing", models.HiddenTally{Total: 3, Passed: 1, NotRun: 2}, 1, models.OutcomeSuccess},
		{"OneFailureFailsByDefault", models.HiddenTally{Total: 43, Passed: 42, Failed: 1}, 1, models.OutcomeFailure},
		{"AnErrorFailsToo", models.HiddenTally{Total: 43, Passed: 42, Errored: 1}, 1, models.OutcomeFailure},
		{"BelowAThreshold", broken, 0.75, models.OutcomeFailure},
		{"AtOrAboveAThreshold", broken, 0.7, models.OutcomeSuccess},
		{"ExactlyTheThreshold", models.HiddenTally{Total: 10, Passed: 9, Failed: 1}, 0.9, models.OutcomeSuccess},
		{"JustBelowTheThreshold", models.HiddenTally{Total: 10, Passed: 8, Failed: 2}, 0.9, models.OutcomeFailure},
		{"NothingRan", models.HiddenTally{Total: 1, NotRun: 1}, 1, models.OutcomeError},
		{"NoTests", models.HiddenTally{}, 1, models.OutcomeError},
		{"ZeroThresholdIsTheDefault", broken, 0, models.OutcomeFailure},
		{"OutOfRangeIsTheDefault", copyTally, 1.5, models.OutcomeSuccess},
		{"NaNIsTheDefault", broken, math.NaN(), models.OutcomeFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.tally.Outcome(c.threshold))
		})
	}
}

// TestHiddenTally_NotRun: a test not run is counted apart and left out of
// the pass rate's denominator; every other result ran.
func TestHiddenTally_NotRun(t *testing.T) {
	t.Parallel()
	var s models.HiddenSummary
	s.Add(models.HiddenGroupSystem, 0, models.HiddenNotRun, false)
	s.Add(models.HiddenGroupSystem, 0, models.HiddenPassed, false)
	s.Add(models.HiddenGroupSystem, 0, models.HiddenErrored, false)
	s.Add(models.HiddenGroupRequest, 0, models.HiddenFailed, false)
	require.Equal(t, models.HiddenTally{Total: 3, Passed: 1, Errored: 1, NotRun: 1}, s.System)
	require.Equal(t, 2, s.System.Ran())
	require.InDelta(t, 0.5, *s.System.Rate(), 1e-12, "1 passed of the 2 that ran")
	require.InDelta(t, 1.0/3, *s.Overall.Rate(), 1e-12)
	require.Nil(t, models.HiddenTally{Total: 2, NotRun: 2}.Rate(), "none ran: no rate")
	require.Equal(t, []int{1, 0, 1, 1, 0, 3}, []int{s.System.Count(models.HiddenPassed), s.System.Count(models.HiddenFailed),
		s.System.Count(models.HiddenErrored), s.System.Count(models.HiddenNotRun), s.System.Count(models.HiddenFlaky), s.System.Count("")})
	require.Equal(t, "not run", models.HiddenResultLabel(models.HiddenNotRun))
	require.Equal(t, "errored", models.HiddenResultLabel(models.HiddenErrored))

	f := models.HiddenTestFilter{Result: models.HiddenNotRun}
	require.NoError(t, f.Validate())
	require.Equal(t, "?result=not_run", f.Query())
	require.True(t, f.Keeps(models.HiddenTestView{Result: models.HiddenNotRun}))
	require.False(t, f.Keeps(models.HiddenTestView{Result: models.HiddenErrored}))
}

func TestCheckPassThreshold(t *testing.T) {
	t.Parallel()
	for _, ok := range []float64{1, 0.5, 1e-9} {
		require.NoError(t, models.CheckPassThreshold(ok), ok)
	}
	for _, bad := range []float64{0, -0.5, 1.0000001, 2, math.NaN(), math.Inf(1)} {
		err := models.CheckPassThreshold(bad)
		require.Equal(t, models.EINVALID, models.ErrorCode(err), bad)
		require.Equal(t, "pass_threshold", models.ErrorField(err))
		require.Contains(t, models.ErrorMessage(err), "above 0 and at most 1")
	}
}

// TestShownOrigin: an uploaded run of a hidden-tests benchmark is shown as
// candidate websites tested by Proctor; trajectory uploads, executed and
// reproduced runs keep their origin, and the leaderboard's filter knows it.
func TestShownOrigin(t *testing.T) {
	t.Parallel()
	require.Equal(t, models.OriginCandidates, models.ShownOrigin(models.OriginUploaded, true))
	require.Equal(t, models.OriginUploaded, models.ShownOrigin(models.OriginUploaded, false))
	require.Equal(t, models.OriginExecuted, models.ShownOrigin(models.OriginExecuted, true))
	require.Equal(t, models.OriginReproduced, models.ShownOrigin(models.OriginReproduced, true))
	require.Equal(t, "candidates submitted, tested by Proctor", models.OriginLabel(models.OriginCandidates))
	require.Equal(t, "uploaded", models.OriginLabel(models.OriginUploaded))
	require.Equal(t, "executed by Proctor", models.OriginLabel(models.OriginExecuted))

	q, err := models.ParseLeaderboardQuery(url.Values{"origin": {models.OriginCandidates}})
	require.NoError(t, err)
	require.Equal(t, models.OriginCandidates, q.Origin)
	rows := []models.LeaderboardRow{{LeaderboardEntry: models.LeaderboardEntry{RunID: 1}, Origin: models.OriginCandidates}, {LeaderboardEntry: models.LeaderboardEntry{RunID: 2}, Origin: models.OriginUploaded}}
	kept := q.Apply(rows)
	require.Len(t, kept, 1)
	require.EqualValues(t, 1, kept[0].RunID)
}

// TestLeaderboard_PassRateRows: on a hidden-tests board the rate is a pass
// rate over tests, and rows rank by it and its interval like any board.
func TestLeaderboard_PassRateRows(t *testing.T) {
	t.Parallel()
	n := func(x int) *int { return &x }
	copyRow := models.LeaderboardRow{LeaderboardEntry: models.LeaderboardEntry{RunID: 2, Tasks: 1, Successes: 1, SuccessRate: 1, CILow: 0.916, CIHigh: 1, HiddenPassed: n(42), HiddenRan: n(42)}}
	broken := models.LeaderboardRow{LeaderboardEntry: models.LeaderboardEntry{RunID: 1, Tasks: 1, SuccessRate: 31.0 / 42, CILow: 0.589, CIHigh: 0.847, HiddenPassed: n(31), HiddenRan: n(42)}}
	lb := &models.Leaderboard{HiddenTests: true}
	lb.SetRows([]models.LeaderboardRow{broken, copyRow})
	require.Equal(t, []int64{2, 1}, []int64{lb.Rows[0].RunID, lb.Rows[1].RunID}, "the higher pass rate first")
	require.Equal(t, []string{"1", "2"}, []string{lb.Rows[0].RankText(), lb.Rows[1].RankText()}, "apart intervals: a place each")
	require.Equal(t, "Pass rate", lb.RateLabel())
	require.Equal(t, "31 of 42 tests", lb.Rows[1].CountsText())
	require.Equal(t, "1 of 1 task", models.LeaderboardRow{LeaderboardEntry: models.LeaderboardEntry{Tasks: 1, Successes: 1}}.CountsText())
	require.Equal(t, "Success rate", (&models.Leaderboard{}).RateLabel())
}
