package stats_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/stats"
)

func TestBreakdown(t *testing.T) {
	t.Parallel()
	attempts := handBuiltAttempts()

	t.Run("MultiValuedAttributes", func(t *testing.T) {
		t.Parallel()
		groups := stats.Breakdown(attempts, stats.DimensionAttribute)
		// Attempt 1 has multi-step and search, 2 and 6 multi-step, 3 none, 4
		// search (listed twice, counted once), 5 long-horizon.
		require.Equal(t, []string{"long-horizon", "multi-step", "search", stats.Unlabeled}, keys(groups))
		requireGroupSizes(t, groups, 1, 3, 2, 1)

		longHorizon := groups[0].Metrics // attempt 5: a timed-out failure
		require.Equal(t, 0.0, longHorizon.SuccessRate)
		require.InDelta(t, 0.793451, longHorizon.SuccessCI.High, 1e-6, "Wilson 0 of 1: z²/(1 + z²)")
		require.Equal(t, &stats.Estimate{Mean: 1, CI: stats.Interval{Low: 1, High: 1}, N: 1}, longHorizon.JudgeScore)
		require.Equal(t, 1.0, longHorizon.BudgetExhaustionRate)

		multiStep := groups[1].Metrics // attempts 1, 2 and 6
		require.Equal(t, 2, multiStep.Graded, "attempt 6 is not graded yet")
		require.Equal(t, 0.5, multiStep.SuccessRate)
		require.Equal(t, 3.5, multiStep.JudgeScore.Mean, "(5 + 2) / 2")
		require.Equal(t, 0.75, multiStep.RubricScore.Mean, "(1 + 0.5) / 2")
		require.Equal(t, 0.5, *multiStep.PerfectRate)
		require.InDelta(t, 0.15, *multiStep.Efficiency, 1e-12, "(1/4 + 0.5/10) / 2")
		require.Equal(t, 4.0, multiStep.MedianSteps, "steps 4, 10, 2")
		require.InDelta(t, 0.45, multiStep.Cost, 1e-12)
		require.Equal(t, map[string]int{"budget": 1}, multiStep.ErrorClasses)
		require.InDelta(t, 1.0/3, multiStep.BudgetExhaustionRate, 1e-12)

		search := groups[2].Metrics // attempts 1 and 4, both successes
		require.Equal(t, 2, search.N, "a repeated attribute counts the attempt once")
		require.Equal(t, 1.0, search.SuccessRate)
		require.InDelta(t, 0.342380, search.SuccessCI.Low, 1e-6, "Wilson 2 of 2: 1/(1 + z²/2)")
		require.Equal(t, 4.5, search.JudgeScore.Mean)
		require.InDelta(t, 0.25, *search.Efficiency, 1e-12, "(1/4 + 0.75/3) / 2")
		require.Equal(t, 3.5, search.MedianSteps, "steps 4, 3")

		unlabeled := groups[3].Metrics // attempt 3: a platform error, never judged
		require.Equal(t, 1, unlabeled.Errors)
		require.Nil(t, unlabeled.JudgeScore)
		require.Nil(t, unlabeled.RubricScore)
		require.Nil(t, unlabeled.PerfectRate)
		require.Nil(t, unlabeled.Efficiency)
		require.Equal(t, map[string]int{"platform": 1}, unlabeled.ErrorClasses)
		for _, g := range groups {
			requireNoNaN(t, g.Metrics)
		}
	})

	t.Run("SingleValuedGroupsAddUp", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			dimension stats.Dimension
			keys      []string
			sizes     []int
		}{
			{stats.DimensionSite, []string{"gitlab", "map", "shopping"}, []int{2, 1, 3}},
			// Attempt 5's domain is blank.
			{stats.DimensionDomain, []string{"dev", "retail", stats.Unlabeled}, []int{2, 3, 1}},
			{stats.DimensionDifficulty, []string{"easy", "hard", "medium"}, []int{2, 3, 1}},
			{stats.DimensionTaskType, []string{"mutate", "navigate", "retrieve"}, []int{2, 1, 3}},
			{stats.DimensionIntentTemplate, []string{"t1", "t2", "t3"}, []int{3, 2, 1}},
		} {
			t.Run(string(tc.dimension), func(t *testing.T) {
				t.Parallel()
				groups := stats.Breakdown(attempts, tc.dimension)
				require.Equal(t, tc.keys, keys(groups))
				requireGroupSizes(t, groups, tc.sizes...)
			})
		}
	})

	t.Run("GroupEqualsSummaryOfItsAttempts", func(t *testing.T) {
		t.Parallel()
		groups := stats.Breakdown(attempts, stats.DimensionSite)
		require.Equal(t, "gitlab", groups[0].Key)
		require.Equal(t, stats.Summarize([]stats.Attempt{attempts[1], attempts[2]}), groups[0].Metrics)
	})

	t.Run("UnknownDimension", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, stats.Breakdown(attempts, "color"))
	})

	t.Run("NoAttempts", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, stats.Breakdown(nil, stats.DimensionSite))
	})
}

func keys(groups []stats.Group) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g.Key
	}
	return out
}

func requireGroupSizes(t *testing.T, groups []stats.Group, sizes ...int) {
	t.Helper()
	require.Len(t, groups, len(sizes))
	for i, g := range groups {
		require.Equal(t, sizes[i], g.Metrics.N, "group %q", g.Key)
	}
}
