package verified

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// Version is the version recorded with the deterministic check's
// verdicts; bump it when its rules change so re-scored attempts can be told apart.
const Version = "sandbox-check@1"

// Evaluator names inside a WebArena-Verified evaluation spec.
const (
	AgentResponseEvaluator = "AgentResponseEvaluator"
	NetworkEventEvaluator  = "NetworkEventEvaluator"
)

// Evaluator is a WebArena-Verified-style check covering what the sandbox
// tasks use: an AgentResponseEvaluator (task type, status and retrieved data of
// the final answer) and NetworkEventEvaluators (requests in the HAR: URL, method,
// query and post data, response status, should_not_exist, last_event_only).
// Spec features it does not implement (regular-expression URLs, headers,
// response content, …) make the verdict an error rather than a silent pass.
type Evaluator struct{}

// New returns the deterministic WebArena-Verified-style check.
func New() *Evaluator { return &Evaluator{} }

// ID names the evaluator: the benchmark evaluator kind it grades.
func (*Evaluator) ID() string { return models.EvaluatorWebArenaVerified }

// evaluatorSpec is one entry of a WebArena-Verified `eval` list.
type evaluatorSpec struct {
	Evaluator      string          `json:"evaluator"`
	Expected       json.RawMessage `json:"expected"`
	Ordered        *bool           `json:"ordered"`
	LastEventOnly  *bool           `json:"last_event_only"`
	ShouldNotExist bool            `json:"should_not_exist"`
}

// Evaluate grades one attempt. Problems with the spec or the HAR give a Result
// with the verdict error; only a canceled context or a missing task is an error.
func (d *Evaluator) Evaluate(ctx context.Context, in eval.Input) (*eval.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Task == nil {
		return nil, errors.New("evaluate: no task given")
	}
	det := &eval.Details{TaskID: in.Task.ExternalID, EvaluatorsResults: []eval.EvaluatorResult{}}
	specs, err := parseSpec(in.Task.EvalSpec)
	if err != nil {
		msg := err.Error()
		det.ErrorMsg = &msg
		return eval.Finish(d.ID(), Version, det)
	}

	taskType := strings.ToLower(in.Task.TaskType)
	for _, s := range specs {
		if s.Evaluator == AgentResponseEvaluator {
			var exp struct {
				TaskType string `json:"task_type"`
			}
			if json.Unmarshal(s.Expected, &exp) == nil && exp.TaskType != "" {
				taskType = strings.ToLower(exp.TaskType)
			}
		}
	}

	var (
		entries []harEntry
		harErr  error
		harRead bool
	)
	loadHAR := func() ([]harEntry, error) {
		if !harRead {
			harRead = true
			if in.HAR == nil {
				harErr = errors.New("the episode recorded no HAR")
			} else {
				entries, harErr = readHAR(in.HAR)
			}
		}
		return entries, harErr
	}

	for _, s := range specs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var r eval.EvaluatorResult
		switch s.Evaluator {
		case AgentResponseEvaluator:
			r = checkAgentResponse(s, in.Final)
		case NetworkEventEvaluator:
			es, err := loadHAR()
			if err != nil {
				r = errorResult(s, err.Error())
			} else {
				r = checkNetworkEvent(s, es, taskType)
			}
		default:
			r = errorResult(s, fmt.Sprintf("evaluator %q is not supported by the deterministic check", s.Evaluator))
		}
		det.EvaluatorsResults = append(det.EvaluatorsResults, r)
	}
	return eval.Finish(d.ID(), Version, det)
}

// parseSpec reads the evaluation spec: a list with exactly one
// AgentResponseEvaluator and any number of other evaluators.
func parseSpec(spec string) ([]evaluatorSpec, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("the task has no evaluation spec")
	}
	var specs []evaluatorSpec
	if err := json.Unmarshal([]byte(spec), &specs); err != nil {
		return nil, fmt.Errorf("the evaluation spec is not a list of evaluators: %v", err)
	}
	agents := 0
	for i, s := range specs {
		if s.Evaluator == "" {
			return nil, fmt.Errorf("eval[%d]: evaluator is missing", i)
		}
		if len(bytes.TrimSpace(s.Expected)) == 0 {
			return nil, fmt.Errorf("eval[%d] (%s): expected is missing", i, s.Evaluator)
		}
		if s.Evaluator == AgentResponseEvaluator {
			agents++
		}
	}
	if agents != 1 {
		return nil, fmt.Errorf("the evaluation spec needs exactly one %s, found %d", AgentResponseEvaluator, agents)
	}
	return specs, nil
}

// errorResult is an evaluator that could not run.
func errorResult(s evaluatorSpec, msg string) eval.EvaluatorResult {
	return eval.EvaluatorResult{
		EvaluatorName: s.Evaluator,
		Status:        models.OutcomeError,
		Actual:        json.RawMessage("null"),
		Expected:      rawOrNull(s.Expected),
		Assertions:    []eval.Assertion{},
		ErrorMsg:      &msg,
	}
}

// scoredResult is an evaluator that ran: it succeeds when every assertion passed.
func scoredResult(s evaluatorSpec, actual any, assertions []eval.Assertion) eval.EvaluatorResult {
	r := eval.EvaluatorResult{
		EvaluatorName: s.Evaluator,
		Status:        models.OutcomeSuccess,
		Score:         1,
		Actual:        mustJSON(actual),
		Expected:      rawOrNull(s.Expected),
		Assertions:    assertions,
	}
	for _, a := range assertions {
		if !a.Passed {
			r.Status, r.Score = models.OutcomeFailure, 0
		}
	}
	return r
}

func rawOrNull(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// mustJSON encodes v, which holds only decoded JSON values and never fails to
// encode; a failure is reported in place of the value.
func mustJSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return rawOrNull(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
	}
	return b
}
