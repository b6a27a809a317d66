// Package eval holds what every evaluator shares: the inputs an evaluator sees
// (the task's hidden spec, the final answer, the HAR, the live page state at the
// end of the episode, the trajectory), the Result it returns, and the
// eval_result.json shape of WebArena-Verified that deterministic evaluators
// report in. The evaluators live in subpackages: verified (WebArena-Verified),
// webarena (original WebArena) and judge (LLM trajectory and rubric judges).
package eval

import (
	"context"
	"encoding/json"
	"io"

	"proctor/models"
)

// Input is everything an evaluator may look at. Deterministic evaluators read
// Final, HAR and PageState; judges read the Trajectory.
type Input struct {
	// Task has its EvalSpec and ReferenceAnswers resolved: site placeholders such
	// as __SHOP__ are already replaced by the attempt's site URLs. RubricItems are
	// loaded for rubric-graded benchmarks.
	Task  *models.Task
	Final *models.Action // the final answer or stop action, nil if the episode ended without one
	HAR   io.Reader      // the episode's HAR (JSON), nil if none was recorded
	Steps int            // how many steps the episode took
	// PageState is what the runner read from the live page at the end of the
	// episode (original WebArena's url_match and program_html); nil when the
	// episode recorded none.
	PageState *PageState
	// Trajectory is the episode's steps in order, for judges.
	Trajectory []TrajectoryStep
	// ErrorClass and ErrorMessage say how the episode ended when it did not end
	// with an answer or stop (budget, agent error, …); empty otherwise.
	ErrorClass   string
	ErrorMessage string
}

// TrajectoryStep is one step of an episode as a judge sees it: the page the
// agent observed, what it did, and (through Screenshot) what the page looked like.
type TrajectoryStep struct {
	Index   int             // 0-based step number
	URL     string          // the active tab's URL when the agent observed it
	Title   string          // its title
	Action  json.RawMessage // the agent's action (models.Action as JSON)
	Thought string          // the agent's stated reasoning, if any
	Error   string          // why the action failed, if it did
	// Screenshot loads the step's full-size JPEG screenshot; nil when the step
	// has none. Judges downscale it with internal/jpegscale.
	Screenshot func(ctx context.Context) ([]byte, error)
	// Accessibility loads the accessibility text of the page the agent
	// observed (models.Step.AXTreeKey), cut to a size the loader caps; nil
	// when the step has none. Judges send it only when asked to, trimmed to
	// their token budget.
	Accessibility func(ctx context.Context) (string, error)
}

// PageProbe asks the runner to read a value from the live browser at the end
// of an episode, before its context closes: open URL (empty or "last": stay on
// the active tab) and evaluate the JavaScript expression Locator (empty: the
// page's whole visible text).
type PageProbe struct {
	URL     string `json:"url"`
	Locator string `json:"locator"`
}

// ProbeResult is a probe's outcome: the value read, or why it could not be read.
type ProbeResult struct {
	PageProbe
	Value string `json:"value"`
	Error string `json:"error,omitempty"`
}

// PageState is what the runner read from the live page at the end of an
// episode: the active tab's final URL and the answers to the task's probes.
type PageState struct {
	FinalURL string        `json:"final_url"`
	Probes   []ProbeResult `json:"probes"`
}

// Result is one evaluator's verdict on one attempt.
type Result struct {
	Evaluator string          // e.g. "webarena-verified", "llm-judge:gpt-4o:trajectory-v1"
	Version   string          // e.g. "webarena-verified@2"
	Verdict   string          // models.OutcomeSuccess, OutcomeFailure or OutcomeError
	Score     float64         // 1 for a success, 0 otherwise; the weighted score for rubrics
	Details   json.RawMessage // evaluator-specific JSON (Details for WebArena-Verified)
	// JudgeScore is an LLM judge's 1–5 score; nil for other evaluators.
	JudgeScore *int
	// Rubric holds one verdict per rubric item for rubric judges.
	Rubric []RubricVerdict
	// Usage is what judging cost (tokens and money); zero for deterministic checks.
	Usage models.Usage
}

// RubricVerdict is a judge's pass/fail on one rubric item.
type RubricVerdict struct {
	ItemID    int64  // models.RubricItem.ID
	Key       string // "R1", …
	Passed    bool
	Rationale string
	Steps     []int // step numbers that evidence the verdict
}

// Evaluator grades attempts. Evaluate returns a Result for every gradable
// input, including a broken evaluation spec or HAR (verdict error); it returns an
// error only when it could not run at all (a canceled context, a nil task).
type Evaluator interface {
	ID() string
	Evaluate(ctx context.Context, in Input) (*Result, error)
}

// FuzzyMatcher decides whether an answer means the same as a reference answer
// for a task (original WebArena's fuzzy_match). The LLM judge implements it.
type FuzzyMatcher interface {
	FuzzyMatch(ctx context.Context, intent, reference, answer string) (bool, models.Usage, error)
}

// Details is the shape of Result.Details, modelled on WebArena-Verified's
// eval_result.json: the task's status and score, then one entry per evaluator.
type Details struct {
	TaskID            string            `json:"task_id"`
	Status            string            `json:"status"` // success | failure | error
	Score             float64           `json:"score"`
	ErrorMsg          *string           `json:"error_msg,omitempty"` // why the spec could not be evaluated at all
	EvaluatorsResults []EvaluatorResult `json:"evaluators_results"`
}

// EvaluatorResult is one evaluator's part of Details.
type EvaluatorResult struct {
	EvaluatorName string          `json:"evaluator_name"`
	Status        string          `json:"status"` // success | failure | error
	Score         float64         `json:"score"`
	Actual        json.RawMessage `json:"actual"`
	// ActualNormalized is the actual value after the evaluator's type-aware
	// normalisation, the form it was compared in; null when there was none.
	ActualNormalized json.RawMessage `json:"actual_normalized,omitempty"`
	Expected         json.RawMessage `json:"expected"`
	Assertions       []Assertion     `json:"assertions"`
	ErrorMsg         *string         `json:"error_msg"`
	// ShouldNotExist is set for checks that pass only when the event is absent.
	ShouldNotExist *bool `json:"should_not_exist,omitempty"`
}

// Assertion is one named check inside an evaluator.
type Assertion struct {
	Name    string `json:"name"`
	Passed  bool   `json:"passed"`
	Message string `json:"message,omitempty"`
}

// ParseDetails decodes Result.Details.
func ParseDetails(raw json.RawMessage) (*Details, error) {
	var d Details
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// combine sets the task-level status and score from the evaluators' results: a
// task scores 1 only when every evaluator scores 1, and any evaluator error makes
// the whole task an error.
func combine(d *Details) {
	d.Status, d.Score = models.OutcomeSuccess, 1
	if d.ErrorMsg != nil || len(d.EvaluatorsResults) == 0 {
		d.Status, d.Score = models.OutcomeError, 0
		return
	}
	for _, r := range d.EvaluatorsResults {
		switch {
		case r.Status == models.OutcomeError:
			d.Status, d.Score = models.OutcomeError, 0
			return
		case r.Score < 1:
			d.Status, d.Score = models.OutcomeFailure, 0
		}
	}
}

// Finish sets the task-level status and score of d from its evaluators'
// results (see combine) and turns it into a Result.
func Finish(evaluator, version string, d *Details) (*Result, error) {
	combine(d)
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &Result{Evaluator: evaluator, Version: version, Verdict: d.Status, Score: d.Score, Details: raw}, nil
}
