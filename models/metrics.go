package models

// The figures of a set of attempts (a run, a subset of it, a group of a
// breakdown) as pages and the API show them. Package stats computes them;
// they live here so that pages can show them.

// Interval is a closed confidence interval [Low, High].
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Contains reports whether x lies in the interval, bounds included.
func (i Interval) Contains(x float64) bool { return i.Low <= x && x <= i.High }

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
	// left out, since they have no outcome to count. SuccessCI is the Wilson 95%
	// interval over the same counts.
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
	Unknown Unknown `json:"unknown,omitzero"`
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

// Dimension is a task label that a run's metrics are broken down by.
type Dimension string

// The dimensions Proctor breaks results down by. The breakdowns page of a
// board offers all but the intent template (BreakdownDimensions).
const (
	DimensionSite           Dimension = BreakdownSite
	DimensionDomain         Dimension = BreakdownDomain
	DimensionDifficulty     Dimension = BreakdownDifficulty
	DimensionAttribute      Dimension = BreakdownAttribute
	DimensionTaskType       Dimension = BreakdownTaskType
	DimensionIntentTemplate Dimension = "intent_template"
)

// Dimensions lists every dimension in the order pages show them.
func Dimensions() []Dimension {
	return []Dimension{
		DimensionSite, DimensionDomain, DimensionDifficulty,
		DimensionAttribute, DimensionTaskType, DimensionIntentTemplate,
	}
}

// MetricsGroup is the metrics of the attempts that share one label value
// (UnlabeledGroup for those without one).
type MetricsGroup struct {
	Key     string  `json:"key"`
	Metrics Metrics `json:"metrics"`
}

// MetricsReport is a run's metrics on one subset with their breakdowns: the run's own
// subset, or for a run over every task ("full") a named subset, restricted to
// that subset's tasks.
type MetricsReport struct {
	Subset     string                       `json:"subset"`
	Restricted bool                         `json:"restricted"` // a full run's numbers on a named subset
	Metrics    Metrics                      `json:"metrics"`
	Breakdowns map[Dimension][]MetricsGroup `json:"breakdowns"`
}

// MetricsAttempt is one attempt as the metrics see it: its grading, what it cost, and the
// task labels breakdowns group by.
type MetricsAttempt struct {
	TaskID int64
	// Outcome is OutcomeSuccess, OutcomeFailure or OutcomeError; "" (or any
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
	Unknown    Unknown
	DurationMS int64
	// ErrorClass is "" or one of the ErrorClass* values.
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

// AttemptScope is a run's attempts on one subset: its own, or for a full
// run one named subset of its version (Restricted). Metrics are computed
// from it.
type AttemptScope struct {
	Subset     string
	Restricted bool
	Attempts   []MetricsAttempt
}

// TaskIDs are the tasks of the scope's attempts, in order.
func (s AttemptScope) TaskIDs() []int64 {
	ids := make([]int64, len(s.Attempts))
	for i, a := range s.Attempts {
		ids[i] = a.TaskID
	}
	return ids
}
