package stats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/stats"
)

// TestHiddenPassRate pools the tests of a run's tasks: passed of run, tests
// not run left out, a task without results adding nothing, with the Wilson
// interval over the pooled counts.
func TestHiddenPassRate(t *testing.T) {
	t.Parallel()
	a := &models.HiddenSummary{Overall: models.HiddenTally{Total: 43, Passed: 42, NotRun: 1}}
	b := &models.HiddenSummary{Overall: models.HiddenTally{Total: 43, Passed: 31, Failed: 11, NotRun: 1}}
	p := stats.HiddenPassRate([]*models.HiddenSummary{a, b, nil})
	require.Equal(t, models.HiddenTally{Total: 86, Passed: 73, Failed: 11, NotRun: 2}, p.Tests)
	require.InDelta(t, 73.0/84, *p.Rate, 1e-12)
	ci := stats.Wilson95(73, 84)
	require.Equal(t, [2]float64{ci.Low, ci.High}, [2]float64{p.Low, p.High})

	one := stats.HiddenPassRate([]*models.HiddenSummary{a})
	require.InDelta(t, 1.0, *one.Rate, 1e-12)
	require.InDelta(t, 0.916, one.Low, 0.001, "42 of 42 is not certainty")
	require.Equal(t, 1.0, one.High)

	none := stats.HiddenPassRate([]*models.HiddenSummary{nil, {Overall: models.HiddenTally{Total: 1, NotRun: 1}}})
	require.Nil(t, none.Rate)
	require.Equal(t, [2]float64{0, 1}, [2]float64{none.Low, none.High}, "no test ran: the whole range")
}
