package models

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// AttemptSteps is an attempt with its task's public fields and its steps in
// order: what the timeline's per-step endpoints and its artifact download read.
type AttemptSteps struct {
	Attempt Attempt
	Task    Task // public fields only
	Steps   []Step
	// Unredacted says the caller may have the attempt's artifacts whole
	// (administrators): for anyone else a download leaves out what the
	// browser loaded after the last step (the checks' live-page reads, whose
	// addresses come from the hidden evaluation spec) and keeps only the final
	// URL of the page state. The run service sets it.
	Unredacted bool
}

// NetworkRequest is one request of an attempt's HAR, as the timeline lists it.
type NetworkRequest struct {
	Started    time.Time
	Method     string
	URL        string
	Status     int    // 0 when no response was recorded
	MIMEType   string // of the response
	DurationMS float64
}

// MaxStepRequests caps the requests listed for one step; busy pages make
// hundreds, and the count says how many were left out.
const MaxStepRequests = 200

// StepNetwork is the network requests made during one step of an attempt.
type StepNetwork struct {
	Step     int  // numbered from 1
	HasHAR   bool // false when the attempt recorded no network log
	Requests []NetworkRequest
	Total    int       // requests during the step, before the cap
	Start    time.Time // when the step began (its observation)
}

// StepWindow is the span of time a step covers: from the start of its
// observation to the start of the next step's. Start is zero for the first
// step, which also owns what the browser loaded before it (the start page);
// the last step ends when it was saved.
type StepWindow struct {
	Start time.Time
	End   time.Time
}

// StepStart is when a step began: its row is saved right after its action, so
// it began its observe, agent and act times before it was saved.
func StepStart(s Step) time.Time {
	return s.CreatedAt.Add(-time.Duration(s.ObserveMS+s.AgentMS+s.ActMS) * time.Millisecond)
}

// StepWindows returns the window of each step, in the order given (step
// order). Starts never go backwards, so clock jitter between rows cannot make
// windows overlap.
func StepWindows(steps []Step) []StepWindow {
	out := make([]StepWindow, len(steps))
	starts := make([]time.Time, len(steps))
	for i, s := range steps {
		starts[i] = StepStart(s)
		if i > 0 && starts[i].Before(starts[i-1]) {
			starts[i] = starts[i-1]
		}
	}
	for i := range steps {
		if i > 0 {
			out[i].Start = starts[i]
		}
		if i+1 < len(steps) {
			out[i].End = starts[i+1]
		} else {
			out[i].End = steps[i].CreatedAt
			if out[i].End.Before(starts[i]) {
				out[i].End = starts[i]
			}
		}
	}
	return out
}

// StepOfTime returns the index of the window holding t, or -1 when t is after
// the last step ended: what the browser did after the episode (the live-page
// reads some checks make) belongs to no step.
func StepOfTime(windows []StepWindow, t time.Time) int {
	for i, w := range windows {
		last := i == len(windows)-1
		if (w.Start.IsZero() || !t.Before(w.Start)) && (t.Before(w.End) || (last && t.Equal(w.End))) {
			return i
		}
	}
	return -1
}

// AssignRequests groups requests by the step they started in: the result has
// one list per step, each in start order.
func AssignRequests(steps []Step, reqs []NetworkRequest) [][]NetworkRequest {
	windows := StepWindows(steps)
	out := make([][]NetworkRequest, len(steps))
	for _, r := range reqs {
		if i := StepOfTime(windows, r.Started); i >= 0 {
			out[i] = append(out[i], r)
		}
	}
	for _, list := range out {
		sortRequests(list)
	}
	return out
}

// sortRequests orders requests by start time, stably (insertion sort: the HAR
// is nearly in order already).
func sortRequests(reqs []NetworkRequest) {
	for i := 1; i < len(reqs); i++ {
		for j := i; j > 0 && reqs[j].Started.Before(reqs[j-1].Started); j-- {
			reqs[j], reqs[j-1] = reqs[j-1], reqs[j]
		}
	}
}

// ExpectedAnswer is what a task expects of the agent's final answer, read
// from its hidden fields: for administrators only.
type ExpectedAnswer struct {
	Source string // where it comes from: "reference answers" or "evaluation spec"
	JSON   string // indented JSON
}

// ExpectedAnswerOf reads a task's expected answer: its reference answers
// (original WebArena, Proctor bundles), else the expected value of the
// AgentResponseEvaluator in a WebArena-Verified evaluation spec. nil when the
// task states neither. The task must carry its hidden fields.
func ExpectedAnswerOf(t Task) *ExpectedAnswer {
	if js, ok := indentedJSON(t.ReferenceAnswers); ok {
		return &ExpectedAnswer{Source: "reference answers", JSON: js}
	}
	var evaluators []struct {
		Evaluator string          `json:"evaluator"`
		Expected  json.RawMessage `json:"expected"`
	}
	if json.Unmarshal([]byte(t.EvalSpec), &evaluators) != nil {
		return nil
	}
	for _, e := range evaluators {
		if e.Evaluator != "AgentResponseEvaluator" {
			continue
		}
		if js, ok := indentedJSON(string(e.Expected)); ok {
			return &ExpectedAnswer{Source: "evaluation spec", JSON: js}
		}
	}
	return nil
}

// indentedJSON indents a JSON value; false when it is empty, null or not JSON.
func indentedJSON(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	switch raw {
	case "", "null", "{}", "[]", `""`:
		return "", false
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(raw), "", "  ") != nil {
		return "", false
	}
	return b.String(), true
}
