// Package webarena grades attempts the way the original WebArena benchmark
// does: string_match on the final answer (exact_match, must_include and, through
// an LLM judge, fuzzy_match), url_match on the final page's URL and
// program_html on values read from the live pages at the end of the episode.
//
// The runner reads those pages: Probes lists what a task needs read, and
// Evaluate finds the values in eval.Input.PageState. The task's evaluation spec
// is WebArena's `eval` object as the importer stores it, with site placeholders
// already resolved.
package webarena

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

// Version is recorded with every verdict; bump it when the rules change so
// re-scored attempts can be told apart.
const Version = "webarena@1"

// WebArena's evaluation types (eval.eval_types).
const (
	TypeStringMatch = "string_match"
	TypeURLMatch    = "url_match"
	TypeProgramHTML = "program_html"
)

// Evaluator names in the report, as WebArena's evaluation harness names its classes.
const (
	StringEvaluator      = "StringEvaluator"
	URLEvaluator         = "URLEvaluator"
	HTMLContentEvaluator = "HTMLContentEvaluator"
)

// Evaluator grades attempts of original WebArena tasks.
type Evaluator struct {
	fuzzy eval.FuzzyMatcher
}

// New returns the WebArena evaluator. fuzzy judges fuzzy_match references (and
// the reasons given for "N/A" answers); without one, tasks that need it get an
// error verdict.
func New(fuzzy eval.FuzzyMatcher) *Evaluator { return &Evaluator{fuzzy: fuzzy} }

// ID names the evaluator: the benchmark evaluator kind it grades.
func (*Evaluator) ID() string { return id }

// id is what benchmarks name this evaluator by.
const id = models.EvaluatorWebArena

// spec is WebArena's `eval` object. Each evaluator decodes its own part, so a
// malformed part fails only the evaluator that reads it.
type spec struct {
	EvalTypes        []string        `json:"eval_types"`
	ReferenceAnswers json.RawMessage `json:"reference_answers"`
	ReferenceURL     json.RawMessage `json:"reference_url"`
	URLNote          json.RawMessage `json:"url_note"`
	StringNote       json.RawMessage `json:"string_note"`
	ProgramHTML      json.RawMessage `json:"program_html"`
}

// parseSpec reads the evaluation spec and checks that it names what to evaluate.
func parseSpec(raw string) (*spec, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("the task has no evaluation spec")
	}
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("the evaluation spec is not WebArena's eval object: %v", err)
	}
	if len(s.EvalTypes) == 0 {
		return nil, errors.New("the evaluation spec has no eval_types")
	}
	return &s, nil
}

// has reports whether the spec asks for an evaluation type.
func (s *spec) has(evalType string) bool {
	for _, t := range s.EvalTypes {
		if t == evalType {
			return true
		}
	}
	return false
}

// Evaluate grades one attempt. Every evaluation type of the task gives one
// evaluator result; the task succeeds only when all of them do. A spec the
// evaluator cannot apply, a missing page state or an unavailable judge gives
// the verdict error; only a canceled context or a missing task is a Go error.
func (e *Evaluator) Evaluate(ctx context.Context, in eval.Input) (*eval.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if in.Task == nil {
		return nil, errors.New("evaluate: no task given")
	}
	det := &eval.Details{TaskID: in.Task.ExternalID, EvaluatorsResults: []eval.EvaluatorResult{}}
	s, err := parseSpec(in.Task.EvalSpec)
	if err != nil {
		msg := err.Error()
		det.ErrorMsg = &msg
		return eval.Finish(e.ID(), Version, det)
	}
	var usage models.Usage
	seen := map[string]bool{}
	for _, t := range s.EvalTypes {
		if seen[t] {
			continue // WebArena would run it twice with the same outcome
		}
		seen[t] = true
		var r eval.EvaluatorResult
		switch t {
		case TypeStringMatch:
			var u models.Usage
			r, u, err = e.checkString(ctx, s, in)
			if err != nil {
				return nil, err
			}
			usage.InputTokens += u.InputTokens
			usage.OutputTokens += u.OutputTokens
			usage.Cost += u.Cost
		case TypeURLMatch:
			r = checkURL(s, in.PageState)
		case TypeProgramHTML:
			r = checkHTML(s, in.PageState)
		default:
			r = errorResult(t, nil, fmt.Sprintf("eval type %q is not supported (WebArena knows string_match, url_match and program_html)", t))
		}
		det.EvaluatorsResults = append(det.EvaluatorsResults, r)
	}
	res, err := eval.Finish(e.ID(), Version, det)
	if err != nil {
		return nil, err
	}
	res.Usage = usage
	return res, nil
}

// errorResult is an evaluator that could not run.
func errorResult(name string, expected json.RawMessage, msg string) eval.EvaluatorResult {
	return eval.EvaluatorResult{
		EvaluatorName: name,
		Status:        models.OutcomeError,
		Actual:        json.RawMessage("null"),
		Expected:      rawOrNull(expected),
		Assertions:    []eval.Assertion{},
		ErrorMsg:      &msg,
	}
}

// scoredResult is an evaluator that ran: it succeeds when every assertion
// passed (WebArena multiplies the 0/1 scores of its checks).
func scoredResult(name string, actual any, expected json.RawMessage, assertions []eval.Assertion) eval.EvaluatorResult {
	r := eval.EvaluatorResult{
		EvaluatorName: name,
		Status:        models.OutcomeSuccess,
		Score:         1,
		Actual:        mustJSON(actual),
		Expected:      rawOrNull(expected),
		Assertions:    assertions,
	}
	for _, a := range assertions {
		if !a.Passed {
			r.Status, r.Score = models.OutcomeFailure, 0
		}
	}
	return r
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func rawOrNull(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage("null")
	}
	return raw
}

// optionalString decodes a JSON string that may be absent or null.
func optionalString(raw json.RawMessage, field string) (string, bool, error) {
	if isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%s must be a string", field)
	}
	return s, true, nil
}

// mustJSON encodes v, which holds only strings, numbers and decoded JSON; a
// failure is reported in place of the value.
func mustJSON(v any) json.RawMessage {
	if raw, ok := v.(json.RawMessage); ok {
		return rawOrNull(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		out, _ := json.Marshal(map[string]string{"unencodable": err.Error()})
		return out
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// excerpt shortens long page values for the report.
func excerpt(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit]) + fmt.Sprintf("… (%d more characters)", len(r)-limit)
}
