package verified

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"unicode"

	"proctor/models"
)

// agentAnswer is the final answer as the AgentResponseEvaluator reads it.
type agentAnswer struct {
	present bool            // false: the episode ended without an answer
	actual  json.RawMessage // what the agent sent, for the report
	obj     map[string]any  // the response object with canonical keys; nil when the answer is not one
	value   any             // the answer when it is not an object (text, a list, …)
	why     string          // why there is no object, for the failure message
	notes   []string        // how the object was recovered from a sloppy answer
}

// answerFromAction reads the final action: a structured `response` object, or
// `text` holding the response as JSON. How text is read depends on the
// evaluator: as the official evaluator reads it, or leniently.
func (e *Evaluator) answerFromAction(final *models.Action) agentAnswer {
	switch {
	case final == nil:
		return agentAnswer{actual: json.RawMessage("null"), why: "the episode ended without an answer"}
	case final.Type == models.ActStop:
		why := "the agent stopped without answering"
		if final.Reason != "" {
			why += ": " + final.Reason
		}
		return agentAnswer{actual: json.RawMessage("null"), why: why}
	case final.Type != models.ActAnswer:
		return agentAnswer{actual: json.RawMessage("null"), why: fmt.Sprintf("the episode ended with a %s action, not an answer", final.Type)}
	case len(bytes.TrimSpace(final.Response)) > 0:
		a := e.parseAnswerText(string(final.Response))
		a.actual = final.Response
		return a
	}
	a := e.parseAnswerText(final.Text)
	a.actual, _ = json.Marshal(final.Text)
	return a
}

func (e *Evaluator) parseAnswerText(text string) agentAnswer {
	if e.lenient {
		return lenientAnswer(text)
	}
	return officialAnswer(text)
}

// officialAnswer reads an agent response as WebArena-Verified 1.2.3 does: the
// text without surrounding white space, or the inside of its first ``` code
// block, decoded as JSON when it is JSON and kept as text otherwise. Only an
// object is a response; its keys are read as written (the legacy
// performed_operation stands in for a missing task_type). A response that
// is empty, null, 0, false, "" or {} is no response.
func officialAnswer(text string) agentAnswer {
	t := pyStrip(text)
	if inner, ok := codeBlock(text); ok {
		t = pyStrip(inner)
	}
	var v any = t
	if d, err := decodeJSON([]byte(t)); err == nil {
		v = d
	}
	if falsy(v) {
		why := "the answer is empty"
		if t != "" {
			why = fmt.Sprintf("the answer is %s", describe(v))
		}
		return agentAnswer{why: why}
	}
	a := agentAnswer{present: true}
	obj, ok := v.(map[string]any)
	if !ok {
		a.value = v
		if s, isText := v.(string); isText {
			switch {
			case strings.HasPrefix(s, "\ufeff"):
				a.why = "the answer starts with a byte order mark, so it is not read as JSON"
			case strings.Contains(s, "{"):
				a.why = "the answer is not a JSON object: JSON with text around it is not read (only a whole JSON answer or the first ``` code block is)"
			default:
				a.why = "the answer is plain text, not a JSON agent response object"
			}
		} else {
			a.why = fmt.Sprintf("the answer is %s, not a JSON agent response object", describe(v))
		}
		return a
	}
	a.obj = obj
	if _, ok := obj["task_type"]; !ok {
		if legacy, ok := obj["performed_operation"]; ok {
			a.obj = maps.Clone(obj)
			a.obj["task_type"] = legacy
			a.notes = []string{"read the legacy key \"performed_operation\" as \"task_type\""}
		}
	}
	return a
}

// codeBlock finds the first Markdown code block as the official evaluator's
// pattern ```(?:json)?\s*\n?(.*?)\n?``` does: after an opening ``` and an
// optional lower-case "json" and white space, the shortest text up to the
// next ``` (a newline right before it excluded).
func codeBlock(text string) (string, bool) {
	for from := 0; ; {
		i := strings.Index(text[from:], "```")
		if i < 0 {
			return "", false
		}
		open := from + i
		body := open + 3
		if strings.HasPrefix(text[body:], "json") {
			body += 4
		}
		body += len(text[body:]) - len(strings.TrimLeftFunc(text[body:], pyIsSpace))
		if j := strings.Index(text[body:], "```"); j >= 0 {
			inner := text[body : body+j]
			return strings.TrimSuffix(inner, "\n"), true
		}
		from = open + 1
	}
}

// pyStrip trims what Python's str.strip() trims: Unicode white space
// (including the separators \x1c–\x1f), but not a byte order mark.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// lenientAnswer reads an agent response as the lenient evaluator does:
// beyond the official reading, it finds a response object inside
// surrounding prose and reads keys regardless of case and spelling
// ("Task_Type", "taskType"), noting each repair in the result.
func lenientAnswer(text string) agentAnswer {
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "\ufeff"))
	if t == "" {
		return agentAnswer{why: "the answer is empty"}
	}
	a := agentAnswer{present: true}
	if v, err := decodeJSON([]byte(t)); err == nil {
		return a.with(v, nil)
	}
	if inner, ok := fenced(t); ok {
		if v, err := decodeJSON([]byte(inner)); err == nil {
			note := "read the JSON inside a ``` code fence"
			if len(strings.TrimSpace(strings.Replace(t, "```", "", 2))) > len(inner)+8 {
				note += "; text around the fence ignored"
			}
			return a.with(v, []string{note})
		}
	}
	if obj, skipped, ok := embeddedObject(t); ok {
		return a.with(obj, []string{fmt.Sprintf("found the JSON response object inside surrounding text (%d characters ignored)", skipped)})
	}
	a.value = t
	a.why = "the answer is plain text, not a JSON agent response object"
	return a
}

// with sets the decoded answer, canonicalising an object's keys.
func (a agentAnswer) with(v any, notes []string) agentAnswer {
	a.notes = notes
	obj, ok := v.(map[string]any)
	if !ok {
		a.value = v
		a.why = fmt.Sprintf("the answer is %s, not a JSON agent response object", describe(v))
		return a
	}
	a.obj, a.notes = canonicalKeys(obj, a.notes)
	return a
}

// responseKeys are the agent response's fields by their key with case, "_",
// "-" and spaces removed.
func responseKey(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(k)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	switch b.String() {
	case "tasktype":
		return "task_type"
	case "performedoperation":
		return "performed_operation"
	case "status":
		return "status"
	case "retrieveddata":
		return "retrieved_data"
	case "errordetails":
		return "error_details"
	}
	return k
}

// canonicalKeys renames keys to their canonical spelling; an exact key wins
// over a respelled duplicate.
func canonicalKeys(obj map[string]any, notes []string) (map[string]any, []string) {
	out := make(map[string]any, len(obj))
	for _, k := range sortedKeys(obj) {
		c := responseKey(k)
		if c == k {
			out[k] = obj[k]
		}
	}
	for _, k := range sortedKeys(obj) {
		c := responseKey(k)
		if c == k {
			continue
		}
		if _, taken := out[c]; taken {
			notes = append(notes, fmt.Sprintf("ignored key %q: the response also has %q", k, c))
			continue
		}
		out[c] = obj[k]
		notes = append(notes, fmt.Sprintf("read key %q as %q", k, c))
	}
	if _, ok := out["task_type"]; !ok {
		if v, legacy := out["performed_operation"]; legacy {
			out["task_type"] = v
			notes = append(notes, "read the legacy key \"performed_operation\" as \"task_type\"")
		}
	}
	return out, notes
}

// fenced returns the content of the first Markdown code fence in t.
func fenced(t string) (string, bool) {
	start := strings.Index(t, "```")
	if start < 0 {
		return "", false
	}
	rest := t[start+3:]
	rest = strings.TrimPrefix(rest, "json")
	rest = strings.TrimPrefix(rest, "JSON")
	end := strings.Index(rest, "```")
	if end < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:end]), true
}

// embeddedObject finds the first JSON object in text that looks like an agent
// response (it has a task_type, status or performed_operation key).
func embeddedObject(t string) (map[string]any, int, bool) {
	for i, tries := 0, 0; i < len(t) && tries < 64; i++ {
		if t[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(t[i:]))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for k := range obj {
			switch responseKey(k) {
			case "task_type", "status", "performed_operation":
				return obj, len(t) - int(dec.InputOffset()), true
			}
		}
	}
	return nil, 0, false
}

// checkAgentResponse is the AgentResponseEvaluator: the task type and status
// compare as case-insensitive strings; for retrieve tasks the retrieved data is
// normalised by the results_schema and compared, in order when the spec says
// `ordered`, else as a multiset.
func (r *run) checkAgentResponse(s *agentSpec, ans agentAnswer) result {
	exp := r.normalizer(true, urlOptions{})
	expRetrieved, err := exp.normalizeRetrieved(s.retrieved, s.schema)
	if err != nil {
		return errorResult(fmt.Sprintf("expected.retrieved_data cannot be normalised: %v", err))
	}
	expTaskType, _ := exp.newNorm(typeString, s.taskType)
	expStatus, _ := exp.newNorm(typeString, s.status)
	expected := map[string]any{"task_type": expTaskType, "status": expStatus, "retrieved_data": expRetrieved}

	res := result{actual: ans.actual, expected: expected}
	for _, n := range ans.notes {
		res.assertions = append(res.assertions, assertion{name: "agent_response.format", msgs: []string{n}, passed: true})
	}
	if ans.obj == nil {
		var actual any
		if ans.value != nil {
			actual = rawVal{ans.value}
		}
		res.actualNorm = actual
		if actual == nil {
			res.assertions = append(res.assertions, fail("agent_response_none_mismatch", "Expected an agent response, got none: "+ans.why))
		} else {
			res.assertions = append(res.assertions, fail("agent_response_invalid_format", "Expected a structured object, but got: "+kindName(actual)+" ("+ans.why+")"))
		}
		return res
	}

	act := r.normalizer(false, urlOptions{})
	actual := map[string]any{}
	for _, k := range []string{"task_type", "status"} {
		v, ok := ans.obj[k]
		if !ok {
			continue
		}
		str, isStr := v.(string)
		switch {
		case isStr && strings.TrimSpace(str) != "":
			actual[k], _ = act.newNorm(typeString, str)
		case isStr || v == nil:
			actual[k] = nil
		default:
			actual[k] = rawVal{v}
		}
	}
	retrieve := s.taskType == models.TaskRetrieve
	if retrieve && !s.hasRetrieved && !r.ev.lenient {
		// An upstream dataset defect (WebArena-Verified task 319): the
		// official evaluator fails every answer to a retrieve task whose
		// expected answer has no retrieved_data key.
		res.actualNorm = actual
		res.assertions = append(res.assertions, fail("agent_response_keys_mismatch",
			"The task's expected answer has no retrieved_data, so no answer to this retrieve task can pass (the official evaluator fails every answer to it)"))
		return res
	}
	if retrieve {
		got, err := act.normalizeRetrieved(ans.obj["retrieved_data"], s.schema)
		if err != nil {
			return errorResult(fmt.Sprintf("retrieved_data cannot be normalised: %v", err))
		}
		actual["retrieved_data"] = got
	} else {
		actual["retrieved_data"] = nil
	}
	res.actualNorm = actual
	res.assertions = append(res.assertions, compare(actual, expected, "agent_response", compareOpts{ignored: map[string]bool{"retrieved_data": true}})...)
	if !retrieve {
		return res
	}
	got := actual["retrieved_data"]
	switch {
	case expRetrieved == nil && got == nil:
	case expRetrieved == nil:
		res.assertions = append(res.assertions, fail("retrieved_data_unexpected", "Expected no retrieved_data, but got "+display(got)))
	case got == nil:
		res.assertions = append(res.assertions, fail("retrieved_data_missing_or_null",
			fmt.Sprintf("Expected retrieved_data to be %s, but got None or empty", display(expRetrieved))))
	default:
		res.assertions = append(res.assertions, compare(got, expRetrieved, "retrieved_data", compareOpts{ordered: s.ordered})...)
	}
	return res
}
