package verified

import (
	"encoding/json"
	"fmt"
	"strings"

	"proctor/eval"
	"proctor/models"
)

// agentExpected is the `expected` block of an AgentResponseEvaluator.
type agentExpected struct {
	TaskType      string          `json:"task_type"`
	Status        string          `json:"status"`
	RetrievedData json.RawMessage `json:"retrieved_data"`
}

// checkAgentResponse compares the final answer with the expected agent response:
// task type and status case-insensitively, and for retrieve tasks the retrieved
// data as lists of normalised values (ordered only when the spec says so).
func checkAgentResponse(s evaluatorSpec, final *models.Action) eval.EvaluatorResult {
	var exp agentExpected
	if err := json.Unmarshal(s.Expected, &exp); err != nil {
		return errorResult(s, fmt.Sprintf("expected is not an agent response object: %v", err))
	}
	if exp.TaskType == "" || exp.Status == "" {
		return errorResult(s, "expected needs a task_type and a status")
	}
	var expData any
	if !isJSONNull(exp.RetrievedData) {
		v, err := decodeJSON(exp.RetrievedData)
		if err != nil {
			return errorResult(s, fmt.Sprintf("expected.retrieved_data: %v", err))
		}
		expData = v
	}

	actual, raw, ok := agentResponse(final, exp.TaskType)
	if !ok {
		msg := "the episode ended without an answer"
		if final != nil && final.Type == models.ActStop {
			msg = "the agent stopped without answering"
			if final.Reason != "" {
				msg += ": " + final.Reason
			}
		}
		return scoredResult(s, nil, []eval.Assertion{{Name: "agent_response_missing", Message: msg}})
	}

	var assertions []eval.Assertion
	gotType := stringField(actual, "task_type")
	if gotType == "" {
		gotType = stringField(actual, "performed_operation") // WebArena-Verified's legacy name
	}
	assertions = append(assertions, enumAssertion("agent_response.task_type", exp.TaskType, gotType))
	assertions = append(assertions, enumAssertion("agent_response.status", exp.Status, stringField(actual, "status")))

	if strings.EqualFold(exp.TaskType, models.TaskRetrieve) && expData != nil {
		assertions = append(assertions, retrievedDataAssertion(s, expData, actual["retrieved_data"]))
	}
	return scoredResult(s, raw, assertions)
}

// agentResponse reads the final action as an agent response object with lower-
// cased keys. A structured `response` is used as is; plain `text` that holds a
// JSON agent response (optionally in a ```json fence) is decoded; any other text
// is the answer itself: retrieved_data [text], status SUCCESS and the expected
// task type.
func agentResponse(final *models.Action, expectedType string) (map[string]any, json.RawMessage, bool) {
	if final == nil || final.Type != models.ActAnswer {
		return nil, nil, false
	}
	if len(final.Response) > 0 {
		if obj, ok := responseObject(final.Response); ok {
			return obj, final.Response, true
		}
		return nil, nil, false
	}
	text := strings.TrimSpace(final.Text)
	if text == "" {
		return nil, nil, false
	}
	if obj, ok := responseObject([]byte(unfence(text))); ok && (obj["task_type"] != nil || obj["status"] != nil) {
		return obj, json.RawMessage(unfence(text)), true
	}
	synth := map[string]any{"task_type": expectedType, "status": "SUCCESS", "retrieved_data": []any{text}}
	return synth, mustJSON(synth), true
}

// responseObject decodes a JSON object and folds its keys.
func responseObject(raw []byte) (map[string]any, bool) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]any, len(obj))
	for k, val := range obj {
		out[strings.ToLower(strings.TrimSpace(k))] = val
	}
	return out, true
}

// unfence strips a Markdown code fence around text, if there is one.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	t = strings.TrimSuffix(strings.TrimPrefix(t, "```"), "```")
	t = strings.TrimPrefix(t, "json")
	return strings.TrimSpace(t)
}

func stringField(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return strings.TrimSpace(s)
}

func enumAssertion(name, expected, actual string) eval.Assertion {
	a := eval.Assertion{Name: name, Passed: strings.EqualFold(strings.TrimSpace(expected), actual)}
	if !a.Passed {
		got := actual
		if got == "" {
			got = "nothing"
		}
		a.Message = fmt.Sprintf("Expected %s, got %s", strings.ToLower(expected), strings.ToLower(got))
	}
	return a
}

// retrievedDataAssertion compares expected and actual retrieved data.
func retrievedDataAssertion(s evaluatorSpec, expected, actual any) eval.Assertion {
	a := eval.Assertion{Name: "retrieved_data"}
	exp := asList(normalize(expected))
	act := asList(normalize(actual))
	if len(exp) == 0 {
		a.Passed = len(act) == 0
		if !a.Passed {
			a.Message = fmt.Sprintf("Expected no retrieved_data, got %s", compactJSON(actual))
		}
		return a
	}
	if len(act) == 0 {
		a.Message = fmt.Sprintf("Expected retrieved_data to be %s, but got none", compactJSON(expected))
		return a
	}
	ordered := s.Ordered != nil && *s.Ordered
	a.Passed = matchLists(exp, act, ordered)
	if !a.Passed {
		how := "in any order"
		if ordered {
			how = "in this order"
		}
		a.Message = fmt.Sprintf("Expected retrieved_data %s (%s), got %s", compactJSON(expected), how, compactJSON(actual))
	}
	return a
}

func compactJSON(v any) string {
	return string(mustJSON(v))
}

func isJSONNull(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}
