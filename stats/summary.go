package stats

import (
	"math"

	"proctor/models"
)

// Attempt is one attempt as the metrics see it: its grading, what it cost, and the
// task labels breakdowns group by.
type Attempt struct {
	TaskID int64
	// Outcome is models.OutcomeSuccess, OutcomeFailure or OutcomeError; "" (or any
	// other value) means not graded yet, and the attempt is left out of success
	// counts.
	Outcome string
	// JudgeScore is the LLM judge's 1–5 score; nil when not judged.
	JudgeScore *float64
	// RubricScore is the weighted share of rubric items passed (0–1); nil when the
	// attempt has no rubric judgment.
	RubricScore *float64
	// Perfect says every rubric item passed; nil when no rubric judgment.
	Perfect   *bool
	Steps     int
	TokensIn  int64
	TokensOut int64
	Cost      float64
	// Unknown marks the usage figures the attempt's upload did not state.
	Unknown    models.Unknown
	DurationMS int64
	// ErrorClass is "" or one of the models.ErrorClass* values.
	ErrorClass string

	Site           string
	Domain         string
	Difficulty     string
	TaskType       string
	IntentTemplate string
	// Attributes are multi-valued: an attempt counts in every attribute group it
	// names (each distinct name once).
	Attributes []string
}

// Estimate is a sample mean with its 95% confidence interval and sample size.
type Estimate struct {
	Mean float64  `json:"mean"`
	CI   Interval `json:"ci"`
	N    int      `json:"n"`
}

// Metrics is everything a Proctor page shows about a set of attempts. Each field
// says which attempts it is computed over; a rate over an empty set is 0 (with the
// interval [0, 1]) and a mean over an empty set is nil, never NaN.
type Metrics struct {
	// N counts every attempt passed in; Tasks counts their distinct TaskIDs.
	N     int `json:"n"`
	Tasks int `json:"tasks"`
	// Graded counts attempts with an outcome: Successes + Failures + Errors.
	Graded    int `json:"graded"`
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	Errors    int `json:"errors"`

	// SuccessRate is Successes / Graded. Errors are in the denominator: an
	// errored attempt did not succeed, whoever was at fault, so a flaky agent or
	// site cannot raise its rate by erroring out. Attempts not graded yet are
	// left out, since they have no outcome to count. SuccessCI is Wilson95 over
	// the same counts.
	SuccessRate float64  `json:"success_rate"`
	SuccessCI   Interval `json:"success_ci"`

	// JudgeScore is the mean LLM judge score (1–5) over judged attempts, with a
	// bootstrap 95% interval; nil when none was judged.
	JudgeScore *Estimate `json:"judge_score"`
	// RubricScore is the mean rubric score (0–1) over attempts with a
	// RubricScore (the Odysseys "averaged" metric), with a bootstrap 95%
	// interval; nil when none has one.
	RubricScore *Estimate `json:"rubric_score"`
	// PerfectRate is the share of attempts with a Perfect flag whose every
	// rubric item passed (the Odysseys "perfect" metric); PerfectCI is its Wilson
	// 95% interval. Both nil when no attempt has the flag. A rubric judgment sets
	// RubricScore and Perfect together, so this is the same set of attempts as
	// RubricScore.
	PerfectRate *float64  `json:"perfect_rate"`
	PerfectCI   *Interval `json:"perfect_ci"`
	// Efficiency is Odysseys trajectory efficiency: the mean over attempts with a
	// a RubricScore of rubric score divided by step count,
	//
	//	(1/N) · Σᵢ sᵢ / nᵢ
	//
	// as defined in the Odysseys README (github.com/ljang0/Odysseys, "Score":
	// "the per-task averaged rubric score divided by step count, averaged across
	// tasks"). It is a mean of ratios, not mean score over mean steps. sᵢ is on
	// the 0–1 scale, so the value is a fraction per step; the paper prints it ×100
	// (its best agent's 1.15 is 0.0115 here). An attempt with fewer than one
	// step counts as one step: it still took a turn to answer, and dropping it
	// would hide zero-score attempts from the mean. Nil when no attempt has a
	// RubricScore.
	Efficiency *float64 `json:"efficiency"`

	// MeanSteps and MedianSteps are over all N attempts.
	MeanSteps   float64 `json:"mean_steps"`
	MedianSteps float64 `json:"median_steps"`
	// TokensIn, TokensOut and Cost are totals over all N attempts: resources are
	// spent whether or not an attempt ends graded. CostPerTask is Cost / N, the
	// mean cost of one task attempt.
	TokensIn    int64   `json:"tokens_in"`
	TokensOut   int64   `json:"tokens_out"`
	Cost        float64 `json:"cost"`
	CostPerTask float64 `json:"cost_per_task"`
	// Unknown marks the figures above some attempt did not state (an
	// uploaded bundle's): the totals and means then mean nothing.
	Unknown models.Unknown `json:"unknown,omitzero"`
	// WallTimeMS is the sum of attempt durations (attempts run in parallel, so
	// this is compute time, not the run's elapsed time); MeanDurationMS is
	// WallTimeMS / N.
	WallTimeMS     int64   `json:"wall_time_ms"`
	MeanDurationMS float64 `json:"mean_duration_ms"`

	// ErrorClasses counts attempts by non-empty ErrorClass, whatever their
	// outcome (a budget stop may be graded as a failure). Never nil.
	ErrorClasses map[string]int `json:"error_classes"`
	// BudgetExhaustionRate is the share of all N attempts whose ErrorClass is
	// budget or timeout: how often the limits, rather than the agent's own
	// answer, ended the episode.
	BudgetExhaustionRate float64 `json:"budget_exhaustion_rate"`
}

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
