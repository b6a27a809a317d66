package stats_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/stats"
)

// handBuiltAttempts is six attempts over five tasks whose metrics are worked out
// by hand in TestSummarize and TestBreakdown.
func handBuiltAttempts() []stats.Attempt {
	return []stats.Attempt{
		{
			TaskID: 1, Outcome: models.OutcomeSuccess,
			JudgeScore: ptr(5.0), RubricScore: ptr(1.0), Perfect: ptr(true),
			Steps: 4, TokensIn: 1000, TokensOut: 100, Cost: 0.10, DurationMS: 4000,
			Site: "shopping", Domain: "retail", Difficulty: "easy", TaskType: "retrieve", IntentTemplate: "t1",
			Attributes: []string{"multi-step", "search"},
		},
		{
			TaskID: 2, Outcome: models.OutcomeFailure,
			JudgeScore: ptr(2.0), RubricScore: ptr(0.5), Perfect: ptr(false),
			Steps: 10, TokensIn: 3000, TokensOut: 300, Cost: 0.30, DurationMS: 10000,
			ErrorClass: models.ErrorClassBudget,
			Site:       "gitlab", Domain: "dev", Difficulty: "hard", TaskType: "mutate", IntentTemplate: "t2",
			Attributes: []string{"multi-step"},
		},
		{
			TaskID: 3, Outcome: models.OutcomeError,
			Steps: 0, DurationMS: 500,
			ErrorClass: models.ErrorClassPlatform,
			Site:       "gitlab", Domain: "dev", Difficulty: "hard", TaskType: "mutate", IntentTemplate: "t2",
		},
		{
			TaskID: 4, Outcome: models.OutcomeSuccess,
			JudgeScore: ptr(4.0), RubricScore: ptr(0.75), Perfect: ptr(false),
			Steps: 3, TokensIn: 2000, TokensOut: 200, Cost: 0.20, DurationMS: 6000,
			Site: "shopping", Domain: "retail", Difficulty: "medium", TaskType: "retrieve", IntentTemplate: "t1",
			Attributes: []string{"search", "search"},
		},
		{
			TaskID: 5, Outcome: models.OutcomeFailure,
			JudgeScore: ptr(1.0), RubricScore: ptr(0.0), Perfect: ptr(false),
			Steps: 20, TokensIn: 4000, TokensOut: 400, Cost: 0.40, DurationMS: 20000,
			ErrorClass: models.ErrorClassTimeout,
			Site:       "map", Domain: " ", Difficulty: "hard", TaskType: "navigate", IntentTemplate: "t3",
			Attributes: []string{"long-horizon"},
		},
		{
			// A second attempt at task 1, still running: no outcome, no judgments.
			TaskID: 1, Steps: 2, TokensIn: 500, TokensOut: 50, Cost: 0.05, DurationMS: 1500,
			Site: "shopping", Domain: "retail", Difficulty: "easy", TaskType: "retrieve", IntentTemplate: "t1",
			Attributes: []string{"multi-step"},
		},
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()

	t.Run("HandBuilt", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize(handBuiltAttempts())
		requireNoNaN(t, m)

		require.Equal(t, 6, m.N)
		require.Equal(t, 5, m.Tasks, "task 1 was attempted twice")
		require.Equal(t, 5, m.Graded, "the running attempt has no outcome")
		require.Equal(t, 2, m.Successes)
		require.Equal(t, 2, m.Failures)
		require.Equal(t, 1, m.Errors)
		// 2 successes over 5 graded (the error counts as not successful).
		require.InDelta(t, 0.4, m.SuccessRate, 1e-12)
		require.Equal(t, stats.Wilson95(2, 5), m.SuccessCI)
		require.InDelta(t, 0.117621, m.SuccessCI.Low, 1e-6)
		require.InDelta(t, 0.769276, m.SuccessCI.High, 1e-6)

		// Judge scores 5, 2, 4, 1: mean 12/4.
		requireEstimate(t, m.JudgeScore, 3.0, []float64{5, 2, 4, 1})
		// Rubric scores 1, 0.5, 0.75, 0: mean 2.25/4.
		requireEstimate(t, m.RubricScore, 0.5625, []float64{1, 0.5, 0.75, 0})
		// One perfect of four rubric judgments.
		require.NotNil(t, m.PerfectRate)
		require.InDelta(t, 0.25, *m.PerfectRate, 1e-12)
		require.NotNil(t, m.PerfectCI)
		require.InDelta(t, 0.045587, m.PerfectCI.Low, 1e-6)
		require.InDelta(t, 0.699359, m.PerfectCI.High, 1e-6)
		// (1/4 + 0.5/10 + 0.75/3 + 0/20) / 4 = (0.25 + 0.05 + 0.25 + 0) / 4.
		require.NotNil(t, m.Efficiency)
		require.InDelta(t, 0.1375, *m.Efficiency, 1e-12)

		// Steps 4, 10, 0, 3, 20, 2: sum 39 over 6; sorted 0 2 [3 4] 10 20.
		require.InDelta(t, 6.5, m.MeanSteps, 1e-12)
		require.InDelta(t, 3.5, m.MedianSteps, 1e-12)
		require.Equal(t, int64(10500), m.TokensIn)
		require.Equal(t, int64(1050), m.TokensOut)
		require.InDelta(t, 1.05, m.Cost, 1e-12)
		require.InDelta(t, 0.175, m.CostPerTask, 1e-12, "1.05 over 6 attempts")
		require.Equal(t, int64(42000), m.WallTimeMS)
		require.InDelta(t, 7000, m.MeanDurationMS, 1e-9)

		require.Equal(t, map[string]int{"budget": 1, "platform": 1, "timeout": 1}, m.ErrorClasses)
		// Budget and timeout stops: 2 of 6 attempts.
		require.InDelta(t, 1.0/3, m.BudgetExhaustionRate, 1e-12)
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize(nil)
		requireNoNaN(t, m)
		require.Equal(t, stats.Metrics{
			SuccessCI:    stats.Interval{Low: 0, High: 1},
			ErrorClasses: map[string]int{},
		}, m)
	})

	t.Run("AllSuccesses", func(t *testing.T) {
		t.Parallel()
		attempts := make([]stats.Attempt, 10)
		for i := range attempts {
			attempts[i] = stats.Attempt{TaskID: int64(i), Outcome: models.OutcomeSuccess, Steps: 1}
		}
		m := stats.Summarize(attempts)
		requireNoNaN(t, m)
		require.Equal(t, 1.0, m.SuccessRate)
		require.InDelta(t, 0.722467, m.SuccessCI.Low, 1e-6)
		require.Equal(t, 1.0, m.SuccessCI.High)
		require.Nil(t, m.JudgeScore)
		require.Nil(t, m.RubricScore)
		require.Nil(t, m.PerfectRate)
		require.Nil(t, m.PerfectCI)
		require.Nil(t, m.Efficiency)
	})

	t.Run("AllFailures", func(t *testing.T) {
		t.Parallel()
		attempts := make([]stats.Attempt, 10)
		for i := range attempts {
			attempts[i] = stats.Attempt{
				TaskID: int64(i), Outcome: models.OutcomeFailure,
				RubricScore: ptr(0.0), Perfect: ptr(false), Steps: 5,
			}
		}
		m := stats.Summarize(attempts)
		requireNoNaN(t, m)
		require.Equal(t, 0.0, m.SuccessRate)
		require.Equal(t, 0.0, m.SuccessCI.Low)
		require.InDelta(t, 0.277533, m.SuccessCI.High, 1e-6)
		require.Equal(t, 0.0, *m.PerfectRate)
		require.Equal(t, stats.Wilson95(0, 10), *m.PerfectCI)
		require.Equal(t, &stats.Estimate{Mean: 0, CI: stats.Interval{}, N: 10}, m.RubricScore,
			"identical scores collapse the interval to the value")
		require.Equal(t, 0.0, *m.Efficiency)
	})

	t.Run("NothingGradedYet", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize([]stats.Attempt{{TaskID: 1, Steps: 3}, {TaskID: 2, Outcome: "unknown", Steps: 5}})
		requireNoNaN(t, m)
		require.Equal(t, 2, m.N)
		require.Equal(t, 0, m.Graded, "only success, failure and error are outcomes")
		require.Equal(t, 0.0, m.SuccessRate)
		require.Equal(t, stats.Interval{Low: 0, High: 1}, m.SuccessCI)
		require.Equal(t, 4.0, m.MeanSteps)
	})

	t.Run("NotJudgedExcludedFromJudgeMean", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize([]stats.Attempt{
			{Outcome: models.OutcomeSuccess, JudgeScore: ptr(5.0)},
			{Outcome: models.OutcomeFailure, JudgeScore: ptr(2.0)},
			{Outcome: models.OutcomeFailure},                            // not judged
			{Outcome: models.OutcomeError, JudgeScore: ptr(math.NaN())}, // not a score
			{Outcome: models.OutcomeFailure, JudgeScore: ptr(math.Inf(1))},
		})
		requireNoNaN(t, m)
		// (5 + 2) / 2, not (5 + 2 + 0 + 0 + 0) / 5.
		require.Equal(t, 3.5, m.JudgeScore.Mean)
		require.Equal(t, 2, m.JudgeScore.N)
		require.Nil(t, m.RubricScore)
	})

	t.Run("JudgedOnce", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize([]stats.Attempt{{Outcome: models.OutcomeSuccess, JudgeScore: ptr(4.0)}})
		require.Equal(t, &stats.Estimate{Mean: 4, CI: stats.Interval{Low: 4, High: 4}, N: 1}, m.JudgeScore)
	})

	t.Run("EfficiencyByHand", func(t *testing.T) {
		t.Parallel()
		m := stats.Summarize([]stats.Attempt{
			{RubricScore: ptr(0.6), Perfect: ptr(false), Steps: 0}, // answered at once: counts as 1 step
			{RubricScore: ptr(0.5), Perfect: ptr(false), Steps: 5},
			{Steps: 100}, // no rubric judgment: not in the mean
		})
		// (0.6/1 + 0.5/5) / 2 = (0.6 + 0.1) / 2. A ratio of means would give
		// 0.55 / 2.5 = 0.22 instead.
		require.InDelta(t, 0.35, *m.Efficiency, 1e-12)
	})

	t.Run("EfficiencyOnOdysseysScale", func(t *testing.T) {
		t.Parallel()
		// An agent scoring 0.92 in 80 steps on one task and 0.23 in 20 on
		// another: (0.0115 + 0.0115) / 2 = 0.0115, printed ×100 as 1.15 in the
		// Odysseys results table.
		m := stats.Summarize([]stats.Attempt{
			{RubricScore: ptr(0.92), Perfect: ptr(false), Steps: 80},
			{RubricScore: ptr(0.23), Perfect: ptr(false), Steps: 20},
		})
		require.InDelta(t, 0.0115, *m.Efficiency, 1e-12)
	})

	t.Run("ErrorsCountedPerClass", func(t *testing.T) {
		t.Parallel()
		var attempts []stats.Attempt
		for class, count := range map[string]int{
			models.ErrorClassAgent: 3, models.ErrorClassEnvironment: 2, models.ErrorClassPlatform: 1,
			models.ErrorClassBudget: 4, models.ErrorClassTimeout: 1,
		} {
			for range count {
				attempts = append(attempts, stats.Attempt{Outcome: models.OutcomeError, ErrorClass: class})
			}
		}
		// A budget stop graded as a failure still counts under its class.
		attempts = append(attempts,
			stats.Attempt{Outcome: models.OutcomeFailure, ErrorClass: models.ErrorClassBudget},
			stats.Attempt{Outcome: models.OutcomeSuccess},
			stats.Attempt{Outcome: models.OutcomeSuccess},
			stats.Attempt{Outcome: models.OutcomeFailure},
		)
		m := stats.Summarize(attempts)
		require.Equal(t, map[string]int{
			"agent": 3, "environment": 2, "platform": 1, "budget": 5, "timeout": 1,
		}, m.ErrorClasses)
		require.Equal(t, 11, m.Errors)
		require.Equal(t, 15, m.N)
		// Budget 5 + timeout 1 over all 15 attempts.
		require.InDelta(t, 6.0/15, m.BudgetExhaustionRate, 1e-12)
		// 2 successes over 15 graded: errors count as not successful.
		require.InDelta(t, 2.0/15, m.SuccessRate, 1e-12)
	})

	t.Run("Deterministic", func(t *testing.T) {
		t.Parallel()
		attempts := syntheticAttempts(200)
		require.Equal(t, stats.Summarize(attempts), stats.Summarize(attempts))
	})
}

// requireEstimate checks an estimate's mean and size, and that its interval is
// the default bootstrap of the given values, contains the mean and stays inside
// the data.
func requireEstimate(t *testing.T, got *stats.Estimate, mean float64, values []float64) {
	t.Helper()
	require.NotNil(t, got)
	require.InDelta(t, mean, got.Mean, 1e-12)
	require.Equal(t, len(values), got.N)
	require.Equal(t, stats.Bootstrap(values, stats.DefaultResamples, stats.DefaultSeed), got.CI)
	require.True(t, got.CI.Contains(got.Mean), "%v does not contain %v", got.CI, got.Mean)
	require.Less(t, got.CI.Low, got.CI.High)
	require.GreaterOrEqual(t, got.CI.Low, minOf(values))
	require.LessOrEqual(t, got.CI.High, maxOf(values))
}

// requireNoNaN fails when any float in m, behind pointers or not, is NaN or
// infinite.
func requireNoNaN(t *testing.T, m stats.Metrics) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Float64:
			require.False(t, math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0), "%s is %v", path, v.Float())
		}
	}
	walk("Metrics", reflect.ValueOf(m))
}

// syntheticAttempts is n attempts with labels and scores spread the way an
// 812-task WebArena-Verified run spreads them: six sites, three difficulties,
// attributes on most tasks, some errors, judge and rubric scores on graded ones.
func syntheticAttempts(n int) []stats.Attempt {
	rng := rand.New(rand.NewPCG(1, 2))
	sites := []string{"shopping", "shopping_admin", "gitlab", "map", "reddit", "multi-site"}
	difficulties := []string{"easy", "medium", "hard"}
	taskTypes := []string{"retrieve", "mutate", "navigate"}
	attributes := []string{"multi-step", "search", "form", "long-horizon", "comparison"}
	classes := []string{
		models.ErrorClassAgent, models.ErrorClassEnvironment, models.ErrorClassPlatform,
		models.ErrorClassBudget, models.ErrorClassTimeout,
	}
	attempts := make([]stats.Attempt, n)
	for i := range attempts {
		a := stats.Attempt{
			TaskID:         int64(i),
			Steps:          1 + rng.IntN(30),
			TokensIn:       int64(1000 + rng.IntN(50000)),
			TokensOut:      int64(100 + rng.IntN(5000)),
			Cost:           rng.Float64() / 10,
			DurationMS:     int64(1000 + rng.IntN(300000)),
			Site:           sites[i%len(sites)],
			Domain:         sites[i%len(sites)] + "-domain",
			Difficulty:     difficulties[i%len(difficulties)],
			TaskType:       taskTypes[i%len(taskTypes)],
			IntentTemplate: fmt.Sprintf("template-%d", i%180),
		}
		for _, attribute := range attributes {
			if rng.IntN(3) == 0 {
				a.Attributes = append(a.Attributes, attribute)
			}
		}
		switch roll := rng.IntN(10); {
		case roll < 4:
			a.Outcome = models.OutcomeSuccess
		case roll < 9:
			a.Outcome = models.OutcomeFailure
		default:
			a.Outcome = models.OutcomeError
			a.ErrorClass = classes[rng.IntN(len(classes))]
		}
		if a.Outcome != models.OutcomeError {
			a.JudgeScore = ptr(float64(1 + rng.IntN(5)))
			a.RubricScore = ptr(float64(rng.IntN(7)) / 6)
			a.Perfect = ptr(*a.RubricScore == 1)
		}
		attempts[i] = a
	}
	return attempts
}

// BenchmarkSummarize summarizes an 812-attempt run and breaks it down by every
// dimension, which is what recomputing one leaderboard entry costs.
func BenchmarkSummarize(b *testing.B) {
	attempts := syntheticAttempts(812)
	for b.Loop() {
		stats.Summarize(attempts)
		for _, d := range models.Dimensions() {
			stats.Breakdown(attempts, d)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func minOf(values []float64) float64 {
	m := math.Inf(1)
	for _, v := range values {
		m = min(m, v)
	}
	return m
}

func maxOf(values []float64) float64 {
	m := math.Inf(-1)
	for _, v := range values {
		m = max(m, v)
	}
	return m
}
