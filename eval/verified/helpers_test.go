package verified_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/models"
)

func jsonReader(s string) io.Reader { return strings.NewReader(s) }

// testSites are the site URLs the network tests resolve placeholders with.
func testSites() verified.Sites {
	return verified.Sites{"shop": {"http://shop.test:7770"}, "gitlab": {"http://gitlab.test:8023"}, "__SHOP_ADMIN__": {"http://shop.test:7780/admin"}}
}

// grade evaluates a spec and returns the verdict and details.
func grade(t *testing.T, ev *verified.Evaluator, spec string, final *models.Action, har io.Reader) (string, *eval.Details) {
	t.Helper()
	in := eval.Input{Task: &models.Task{ExternalID: "t1", Sites: []string{"shop", "gitlab", "shop_admin"}, EvalSpec: spec}, Final: final, HAR: har}
	res, err := ev.Evaluate(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, ev.ID(), res.Evaluator)
	if ev.ID() == models.EvaluatorWebArenaVerified {
		require.Equal(t, verified.Version, res.Version)
	} else {
		require.Equal(t, verified.LenientVersion, res.Version)
	}
	d, err := eval.ParseDetails(res.Details)
	require.NoError(t, err)
	require.Equal(t, res.Verdict, d.Status)
	require.Equal(t, res.Score, d.Score)
	return res.Verdict, d
}

// answer is a structured final answer.
func answer(resp string) *models.Action {
	return &models.Action{Type: models.ActAnswer, Response: json.RawMessage(resp)}
}

// retrieved answers a retrieve task with data (JSON).
func retrieved(data string) *models.Action {
	return answer(`{"task_type":"RETRIEVE","status":"SUCCESS","retrieved_data":` + data + `}`)
}

// retrieveSpec is a retrieve task whose results_schema items are itemSchema.
func retrieveSpec(itemSchema, expected string, extra string) string {
	return `[{"evaluator":"AgentResponseEvaluator"` + extra + `,"results_schema":{"type":"array","items":` + itemSchema +
		`},"expected":{"task_type":"retrieve","status":"SUCCESS","retrieved_data":` + expected + `}}]`
}

const mutateAgent = `{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}}`

func mutated() *models.Action {
	return answer(`{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}`)
}

// network wraps NetworkEventEvaluator entries into a mutate task's spec.
func network(checks ...string) string {
	return "[" + mutateAgent + "," + strings.Join(checks, ",") + "]"
}

// entry is one HAR entry.
type entry map[string]any

func req(method, url string, status int) entry {
	return entry{
		"request":  map[string]any{"method": method, "url": url, "headers": []any{}},
		"response": map[string]any{"status": status, "content": map[string]any{"mimeType": "text/html"}, "cookies": []any{}},
	}
}

func (e entry) header(name, value string) entry {
	r := e["request"].(map[string]any)
	r["headers"] = append(r["headers"].([]any), map[string]any{"name": name, "value": value})
	return e
}

func (e entry) form(body string) entry {
	e["request"].(map[string]any)["postData"] = map[string]any{"mimeType": "application/x-www-form-urlencoded", "text": body}
	return e
}

// multipart sets a multipart/form-data body of name, value pairs, as
// Chromium writes it (its boundaries are mixed-case).
func (e entry) multipart(boundary string, nameValues ...string) entry {
	var b strings.Builder
	for i := 0; i+1 < len(nameValues); i += 2 {
		b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + nameValues[i] + "\"\r\n\r\n" + nameValues[i+1] + "\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	e["request"].(map[string]any)["postData"] = map[string]any{"mimeType": "multipart/form-data; boundary=" + boundary, "text": b.String()}
	return e
}

func (e entry) jsonBody(body string) entry {
	e["request"].(map[string]any)["postData"] = map[string]any{"mimeType": "application/json", "text": body}
	return e
}

func (e entry) respond(mime, text string) entry {
	e["response"].(map[string]any)["content"] = map[string]any{"mimeType": mime, "text": text}
	return e
}

func (e entry) cookie(name, value string) entry {
	r := e["response"].(map[string]any)
	r["cookies"] = append(r["cookies"].([]any), map[string]any{"name": name, "value": value})
	return e
}

// page is a top-level navigation as Chromium records it.
func page(url string) entry {
	return req("GET", url, 200).header("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8").
		header("Sec-Fetch-Dest", "document").header("Sec-Fetch-Mode", "navigate").header("Sec-Fetch-User", "?1")
}

func harOf(t *testing.T, entries ...entry) io.Reader {
	t.Helper()
	if entries == nil {
		entries = []entry{}
	}
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": entries}})
	require.NoError(t, err)
	return strings.NewReader(string(b))
}

// failedNames lists the failed assertions of every evaluator.
func failedNames(d *eval.Details) []string {
	var out []string
	for _, r := range d.EvaluatorsResults {
		for _, a := range r.Assertions {
			if !a.Passed {
				out = append(out, a.Name)
			}
		}
	}
	return out
}

// errorMessages joins every error message of the details.
func errorMessages(d *eval.Details) string {
	var msgs []string
	if d.ErrorMsg != nil {
		msgs = append(msgs, *d.ErrorMsg)
	}
	for _, r := range d.EvaluatorsResults {
		if r.ErrorMsg != nil {
			msgs = append(msgs, *r.ErrorMsg)
		}
	}
	return strings.Join(msgs, "; ")
}

// dump renders details for failure messages.
func dump(d *eval.Details) string {
	b, _ := json.MarshalIndent(d, "", " ")
	return string(b)
}
