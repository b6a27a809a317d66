package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"proctor/models"
)

// Public error sentences. An evaluator's own error message may quote the
// task's hidden answers (a reference value that could not be read, a judge's
// reply or an endpoint's error body echoing the prompt, a program_html URL or
// locator), so viewers who are not administrators get a fixed sentence chosen
// by category instead.
const (
	publicSpecError      = "The task's evaluation spec could not be read; administrators can see why."
	publicEvaluatorError = "The evaluator could not grade this attempt; administrators can see why."
	publicFuzzyError     = "The fuzzy-match judge could not grade the answer; administrators can see why."
	publicRecordingError = "The episode did not record what this check reads; administrators can see why."
	publicJudgeFailed    = "The judge could not grade this attempt; administrators can see why."
	publicJudgeRefused   = "The judge model declined to grade this attempt."
	publicJudgeOffFormat = "The judge's reply was not in the format asked for."
	publicJudgeTimeout   = "The judge did not reply in time."
	publicJudgeDown      = "The judge's endpoint was unavailable."
	publicJudgeRejected  = "The judge's endpoint refused the request or did not answer with a chat completion."
)

// publicEvaluationDetails is what viewers who are not administrators see of an
// evaluation's details JSON. It is rebuilt from scratch out of fields known to
// be safe rather than by deleting known-hidden ones: evaluators quote the
// task's hidden answers (Task.EvalSpec, ReferenceAnswers) in many places
// (expected values, messages, error text, actual values shaped by the spec,
// assertion names), and a new field must stay hidden until it is known to be
// safe. kind is the evaluation's kind; an unknown kind or details that are not
// a JSON object give "".
func publicEvaluationDetails(kind, raw string) string {
	obj, ok := decodeDetails(raw)
	if !ok {
		return ""
	}
	var public any
	switch kind {
	case models.EvaluationCheck:
		public = publicCheckDetails(obj)
	case models.EvaluationJudge, models.EvaluationRubric:
		public = publicJudgeDetails(obj)
	default:
		return ""
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the agent's answer reads as written; pages escape it
	if err := enc.Encode(public); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// decodeDetails decodes a details JSON object, keeping numbers as written.
func decodeDetails(raw string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // trailing data: not one JSON value
	}
	return obj, true
}

// publicCheck is the public part of a deterministic check's details (the
// eval_result.json shape of eval.Details).
type publicCheck struct {
	TaskID            string                  `json:"task_id,omitempty"`
	Status            string                  `json:"status,omitempty"`
	Score             *json.Number            `json:"score,omitempty"`
	ErrorMsg          string                  `json:"error_msg,omitempty"`
	EvaluatorsResults []publicEvaluatorResult `json:"evaluators_results"`
}

type publicEvaluatorResult struct {
	EvaluatorName string       `json:"evaluator_name"`
	Status        string       `json:"status,omitempty"`
	Score         *json.Number `json:"score,omitempty"`
	// Actual is the agent's own answer, and only for the evaluators whose
	// actual value is that answer: the others' actual values are shaped by the
	// spec (the requests matching its URL, the pages and locators it names).
	Actual           any               `json:"actual,omitempty"`
	ActualNormalized any               `json:"actual_normalized,omitempty"`
	Assertions       []publicAssertion `json:"assertions"`
	ErrorMsg         string            `json:"error_msg,omitempty"`
}

type publicAssertion struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
}

// Evaluator names the checks report. Any other name is not shown: WebArena
// reports an unsupported eval type under the type's name, which comes from
// the spec.
const (
	agentResponseEvaluator = "AgentResponseEvaluator" // WebArena-Verified: the agent's response
	networkEventEvaluator  = "NetworkEventEvaluator"  // WebArena-Verified: a request in the HAR
	stringEvaluator        = "StringEvaluator"        // WebArena: the answer's text
	urlEvaluator           = "URLEvaluator"           // WebArena: the final URL
	htmlContentEvaluator   = "HTMLContentEvaluator"   // WebArena: values read from pages
	unknownEvaluator       = "unknown"
)

func publicCheckDetails(obj map[string]any) publicCheck {
	out := publicCheck{
		TaskID:            stringField(obj, "task_id"),
		Status:            verdictField(obj, "status"),
		Score:             numberField(obj, "score"),
		EvaluatorsResults: []publicEvaluatorResult{},
	}
	if _, ok := obj["error_msg"].(string); ok {
		out.ErrorMsg = publicSpecError
	}
	results, _ := obj["evaluators_results"].([]any)
	for _, r := range results {
		if m, ok := r.(map[string]any); ok {
			out.EvaluatorsResults = append(out.EvaluatorsResults, publicEvaluatorResultOf(m))
		}
	}
	return out
}

func publicEvaluatorResultOf(m map[string]any) publicEvaluatorResult {
	name := stringField(m, "evaluator_name")
	switch name {
	case agentResponseEvaluator, networkEventEvaluator, stringEvaluator, urlEvaluator, htmlContentEvaluator:
	default:
		name = unknownEvaluator
	}
	out := publicEvaluatorResult{
		EvaluatorName: name,
		Status:        verdictField(m, "status"),
		Score:         numberField(m, "score"),
		Assertions:    []publicAssertion{},
	}
	switch name {
	case agentResponseEvaluator:
		out.Actual = m["actual"]
		out.ActualNormalized = m["actual_normalized"]
	case stringEvaluator:
		out.Actual = publicStringActual(m["actual"])
	}
	assertions, _ := m["assertions"].([]any)
	for _, a := range assertions {
		am, ok := a.(map[string]any)
		if !ok {
			continue
		}
		passed, _ := am["passed"].(bool)
		out.Assertions = append(out.Assertions, publicAssertion{Name: publicAssertionName(stringField(am, "name")), Passed: passed})
	}
	if msg, ok := m["error_msg"].(string); ok {
		out.ErrorMsg = publicCheckError(msg)
	}
	return out
}

// publicStringActual keeps the fields of WebArena's StringEvaluator actual
// value, all of them the agent's answer or why there is none.
func publicStringActual(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, k := range []string{"answer", "cleaned", "note"} {
		if s, ok := m[k].(string); ok {
			out[k] = s
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// publicCheckError chooses the public sentence for an evaluator's error. The
// message only selects among fixed sentences; none of it is shown.
func publicCheckError(msg string) string {
	switch {
	case strings.HasPrefix(msg, "fuzzy_match judge failed"), strings.HasPrefix(msg, "fuzzy_match needs an LLM judge"):
		return publicFuzzyError
	case strings.HasPrefix(msg, "the episode recorded no "):
		return publicRecordingError
	}
	return publicEvaluatorError
}

// publicAssertionName keeps the parts of an assertion's name that the
// evaluators' code fixes. Bracketed parts are dropped (they name the reference
// URL's query parameters, or count reference values), and so is everything
// from the first part that is not a known word (keys of expected objects), but
// the outcome suffix ("_mismatch") is kept: "url_match.query[order]" becomes
// "url_match.query", "retrieved_data[0].price_mismatch" "retrieved_data_mismatch".
func publicAssertionName(name string) string {
	parts := strings.Split(withoutBrackets(name), ".")
	var kept []string
	suffix := ""
	for _, p := range parts {
		if knownAssertionWord(p) {
			kept = append(kept, p)
			continue
		}
		if stem, _, ok := cutOutcomeSuffix(p); ok && knownAssertionWord(stem) {
			kept = append(kept, p)
			continue
		}
		if _, sfx, ok := cutOutcomeSuffix(parts[len(parts)-1]); ok {
			suffix = sfx
		}
		break
	}
	if len(kept) == 0 {
		return "check" + suffix
	}
	return strings.Join(kept, ".") + suffix
}

// withoutBrackets removes every "[…]" from s; an unclosed "[" ends it.
func withoutBrackets(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '[')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			return b.String()
		}
		s = s[i+j+1:]
	}
}

// knownAssertionWord reports whether w is a word of the assertion names that
// the WebArena and WebArena-Verified checks build from fixed text.
func knownAssertionWord(w string) bool {
	switch w {
	case "url_match", "base_path", "query", "program_html", "exact_match", "must_include", "fuzzy_match",
		"agent_response", "format", "task_type", "status", "retrieved_data", "network_event",
		"unexpected_navigation_event", "missing_navigation_event":
		return true
	}
	return false
}

// cutOutcomeSuffix splits a name part into its stem and the outcome suffix
// WebArena-Verified's comparisons append.
func cutOutcomeSuffix(p string) (stem, suffix string, ok bool) {
	// Longest first: "_none_mismatch" also ends in "_mismatch".
	for _, sfx := range []string{"_array_values_mismatch", "_none_mismatch", "_keys_mismatch", "_invalid_format",
		"_missing_or_null", "_unexpected", "_mismatch"} {
		if s, found := strings.CutSuffix(p, sfx); found && s != "" {
			return s, sfx, true
		}
	}
	return "", "", false
}

// publicJudge is the public part of an LLM judge's details (judge.Details).
// The trajectory and rubric judges are shown the task's intent, the agent's
// steps and the rubric, never its hidden answers, so their verdicts and
// rationales are public; the raw reply, the repair cause and the error text are
// not (an endpoint's error body may echo anything).
type publicJudge struct {
	Judge         string             `json:"judge,omitempty"`
	Model         string             `json:"model,omitempty"`
	PromptVersion string             `json:"prompt_version,omitempty"`
	Success       *bool              `json:"success,omitempty"`
	Score         *json.Number       `json:"score,omitempty"`
	Rationale     string             `json:"rationale,omitempty"`
	RubricScore   *json.Number       `json:"rubric_score,omitempty"`
	Perfect       *bool              `json:"perfect,omitempty"`
	ImagesSent    *json.Number       `json:"images_sent,omitempty"`
	StepsSent     *json.Number       `json:"steps_sent,omitempty"`
	StepsTotal    *json.Number       `json:"steps_total,omitempty"`
	Attempts      *json.Number       `json:"attempts,omitempty"`
	ErrorKind     string             `json:"error_kind,omitempty"`
	ErrorMsg      string             `json:"error_msg,omitempty"`
	Items         []publicRubricItem `json:"items,omitempty"`
}

type publicRubricItem struct {
	Key       string        `json:"key"`
	Passed    bool          `json:"passed"`
	Rationale string        `json:"rationale"`
	Steps     []json.Number `json:"steps"`
}

func publicJudgeDetails(obj map[string]any) publicJudge {
	out := publicJudge{
		Judge:         stringField(obj, "judge"),
		Model:         stringField(obj, "model"),
		PromptVersion: stringField(obj, "prompt_version"),
		Success:       boolField(obj, "success"),
		Score:         numberField(obj, "score"),
		Rationale:     stringField(obj, "rationale"),
		RubricScore:   numberField(obj, "rubric_score"),
		Perfect:       boolField(obj, "perfect"),
		ImagesSent:    numberField(obj, "images_sent"),
		StepsSent:     numberField(obj, "steps_sent"),
		StepsTotal:    numberField(obj, "steps_total"),
		Attempts:      numberField(obj, "attempts"),
	}
	kind := stringField(obj, "error_kind")
	_, hasMsg := obj["error_msg"].(string)
	if kind != "" || hasMsg {
		out.ErrorKind, out.ErrorMsg = publicJudgeError(kind)
	}
	items, _ := obj["items"].([]any)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		passed, _ := m["passed"].(bool)
		item := publicRubricItem{Key: stringField(m, "key"), Passed: passed, Rationale: stringField(m, "rationale"), Steps: []json.Number{}}
		steps, _ := m["steps"].([]any)
		for _, s := range steps {
			if n, ok := s.(json.Number); ok {
				item.Steps = append(item.Steps, n)
			}
		}
		out.Items = append(out.Items, item)
	}
	return out
}

// publicJudgeError maps a judge's error kind (judge.Kind…) to the kind shown
// and its sentence; a kind it does not know is not shown.
func publicJudgeError(kind string) (string, string) {
	switch kind {
	case "refused":
		return kind, publicJudgeRefused
	case "off_format":
		return kind, publicJudgeOffFormat
	case "timeout":
		return kind, publicJudgeTimeout
	case "unavailable":
		return kind, publicJudgeDown
	case "rejected", "bad_response":
		return kind, publicJudgeRejected
	}
	return "", publicJudgeFailed
}

func stringField(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func numberField(m map[string]any, k string) *json.Number {
	if n, ok := m[k].(json.Number); ok {
		return &n
	}
	return nil
}

func boolField(m map[string]any, k string) *bool {
	if b, ok := m[k].(bool); ok {
		return &b
	}
	return nil
}

// verdictField reads a status, which is one of the verdicts or not shown.
func verdictField(m map[string]any, k string) string {
	switch s := stringField(m, k); s {
	case models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError:
		return s
	}
	return ""
}
