// Package eval grades finished episodes. An Evaluator looks at a task's hidden
// evaluation spec, the agent's final action and the episode's HAR, and returns a
// verdict with per-evaluator details.
//
// NewDeterministic is the WebArena-Verified-style check the bundled sandbox tasks
// use (webarena_*.go): an AgentResponseEvaluator over the final answer and
// NetworkEventEvaluators over the HAR. The full WebArena-Verified evaluator and
// the LLM judges implement the same interface.
package eval

import (
	"context"
	"encoding/json"
	"io"

	"proctor/models"
)

// Input is everything an evaluator may look at.
type Input struct {
	// Task has its EvalSpec and ReferenceAnswers resolved: site placeholders such
	// as __SHOP__ are already replaced by the attempt's site URLs.
	Task  *models.Task
	Final *models.Action // the final answer or stop action, nil if the episode ended without one
	HAR   io.Reader      // the episode's HAR (JSON), nil if none was recorded
	Steps int            // how many steps the episode took
}

// Result is one evaluator's verdict on one attempt.
type Result struct {
	Evaluator string          // e.g. "webarena-verified"
	Version   string          // e.g. "sandbox-check@1"
	Verdict   string          // models.OutcomeSuccess, OutcomeFailure or OutcomeError
	Score     float64         // 1 for a success, 0 otherwise
	Details   json.RawMessage // a Details value as JSON
}

// Evaluator grades attempts. Evaluate returns a Result for every gradable
// input, including a broken evaluation spec or HAR (verdict error); it returns an
// error only when it could not run at all (a canceled context, a nil task).
type Evaluator interface {
	ID() string
	Evaluate(ctx context.Context, in Input) (*Result, error)
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
	Expected      json.RawMessage `json:"expected"`
	Assertions    []Assertion     `json:"assertions"`
	ErrorMsg      *string         `json:"error_msg"`
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

// finish turns the Details into a Result.
func finish(evaluator, version string, d *Details) (*Result, error) {
	combine(d)
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &Result{Evaluator: evaluator, Version: version, Verdict: d.Status, Score: d.Score, Details: raw}, nil
}
