package stats

import (
	"math"

	"proctor/models"
)

// The figures Summarize computes are models' (pages show them).
type (
	// Estimate is a sample mean with its 95% confidence interval and sample size.
	Estimate = models.Estimate
	// Metrics is everything a Proctor page shows about a set of attempts.
	Metrics = models.Metrics
)

// Attempt is one attempt as the metrics see it (models.MetricsAttempt,
// which storage reads).
type Attempt = models.MetricsAttempt

// Summarize computes Metrics over attempts. Bootstrap intervals use
// DefaultResamples and DefaultSeed, so equal inputs give equal results.
func Summarize(attempts []Attempt) Metrics {
	m := Metrics{N: len(attempts), ErrorClasses: map[string]int{}}
	tasks := make(map[int64]struct{}, len(attempts))
	steps := make([]int, 0, len(attempts))
	var judgeScores, rubricScores []float64
	var perfect, perfectJudged, budgetStops int
	var efficiencySum float64

	for _, a := range attempts {
		tasks[a.TaskID] = struct{}{}
		switch a.Outcome {
		case models.OutcomeSuccess:
			m.Successes++
		case models.OutcomeFailure:
			m.Failures++
		case models.OutcomeError:
			m.Errors++
		}
		if score, ok := finite(a.JudgeScore); ok {
			judgeScores = append(judgeScores, score)
		}
		if score, ok := finite(a.RubricScore); ok {
			rubricScores = append(rubricScores, score)
			efficiencySum += score / float64(max(a.Steps, 1))
		}
		if a.Perfect != nil {
			perfectJudged++
			if *a.Perfect {
				perfect++
			}
		}

		steps = append(steps, a.Steps)
		m.Unknown.Steps = m.Unknown.Steps || a.Unknown.Steps
		m.Unknown.Tokens = m.Unknown.Tokens || a.Unknown.Tokens
		m.Unknown.Cost = m.Unknown.Cost || a.Unknown.Cost
		m.TokensIn += a.TokensIn
		m.TokensOut += a.TokensOut
		if !math.IsNaN(a.Cost) && !math.IsInf(a.Cost, 0) {
			m.Cost += a.Cost
		}
		m.WallTimeMS += a.DurationMS
		if a.ErrorClass != "" {
			m.ErrorClasses[a.ErrorClass]++
		}
		if a.ErrorClass == models.ErrorClassBudget || a.ErrorClass == models.ErrorClassTimeout {
			budgetStops++
		}
	}

	m.Tasks = len(tasks)
	m.Graded = m.Successes + m.Failures + m.Errors
	m.SuccessRate = ratio(m.Successes, m.Graded)
	m.SuccessCI = Wilson95(m.Successes, m.Graded)
	m.JudgeScore = estimate(judgeScores)
	m.RubricScore = estimate(rubricScores)
	if perfectJudged > 0 {
		rate := ratio(perfect, perfectJudged)
		ci := Wilson95(perfect, perfectJudged)
		m.PerfectRate, m.PerfectCI = &rate, &ci
	}
	if len(rubricScores) > 0 {
		efficiency := efficiencySum / float64(len(rubricScores))
		m.Efficiency = &efficiency
	}
	if m.N > 0 {
		var stepSum int64
		for _, s := range steps {
			stepSum += int64(s)
		}
		m.MeanSteps = float64(stepSum) / float64(m.N)
		m.MedianSteps = Median(steps)
		m.CostPerTask = m.Cost / float64(m.N)
		m.MeanDurationMS = float64(m.WallTimeMS) / float64(m.N)
		m.BudgetExhaustionRate = ratio(budgetStops, m.N)
	}
	return m
}

// estimate is the mean of values with its bootstrap interval; nil when empty.
func estimate(values []float64) *Estimate {
	if len(values) == 0 {
		return nil
	}
	var sum float64
	for _, v := range values {
		sum += v
	}
	return &Estimate{
		Mean: sum / float64(len(values)),
		CI:   Bootstrap(values, DefaultResamples, DefaultSeed),
		N:    len(values),
	}
}

// finite dereferences a score, reporting false for nil, NaN and infinities: a
// score that is not a number was not really given.
func finite(score *float64) (float64, bool) {
	if score == nil || math.IsNaN(*score) || math.IsInf(*score, 0) {
		return 0, false
	}
	return *score, true
}

// ratio is part/whole, 0 when whole is 0.
func ratio(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}
