package verified_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/verified"
	"proctor/models"
)

const site = "http://127.0.0.1:8080/sandbox/a1t1/shop"

// harJSON builds a small HAR from entries.
func harJSON(t *testing.T, entries ...map[string]any) *strings.Reader {
	t.Helper()
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": entries}})
	require.NoError(t, err)
	return strings.NewReader(string(b))
}

func get(url string, status int, mime string) map[string]any {
	return map[string]any{
		"request":  map[string]any{"method": "GET", "url": url, "headers": []any{}},
		"response": map[string]any{"status": status, "content": map[string]any{"mimeType": mime}},
	}
}

func postForm(url, body string, status int) map[string]any {
	return map[string]any{
		"request": map[string]any{"method": "POST", "url": url, "headers": []any{},
			"postData": map[string]any{"mimeType": "application/x-www-form-urlencoded", "text": body}},
		"response": map[string]any{"status": status, "content": map[string]any{"mimeType": "text/html"}},
	}
}

func answer(t *testing.T, resp string) *models.Action {
	t.Helper()
	a := &models.Action{Type: models.ActAnswer, Response: json.RawMessage(resp)}
	require.NoError(t, a.Validate())
	return a
}

func evaluate(t *testing.T, spec string, final *models.Action, har *strings.Reader) (*eval.Result, *eval.Details) {
	t.Helper()
	in := eval.Input{Task: &models.Task{ExternalID: "t1", EvalSpec: spec}, Final: final}
	if har != nil {
		in.HAR = har
	}
	res, err := verified.New().Evaluate(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "webarena-verified", res.Evaluator)
	require.Equal(t, verified.Version, res.Version)
	d, err := eval.ParseDetails(res.Details)
	require.NoError(t, err)
	require.Equal(t, res.Verdict, d.Status)
	require.Equal(t, res.Score, d.Score)
	require.Equal(t, "t1", d.TaskID)
	return res, d
}

func retrieveSpec(data string, extra string) string {
	return `[{"evaluator":"AgentResponseEvaluator"` + extra + `,"results_schema":{"type":"array"},"expected":{"task_type":"retrieve","status":"SUCCESS","retrieved_data":` + data + `}}]`
}

func TestDeterministic_AgentResponse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		spec    string
		final   *models.Action
		verdict string
	}{
		{"ExactString", retrieveSpec(`["Arc Desk Lamp"]`, ""),
			answer(t, `{"task_type":"RETRIEVE","status":"success","retrieved_data":["  arc   desk LAMP "]}`), models.OutcomeSuccess},
		{"WrongString", retrieveSpec(`["Arc Desk Lamp"]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["Floor Lamp"]}`), models.OutcomeFailure},
		{"NumbersCompareNumerically", retrieveSpec(`[12, 4.5, 1234.5]`, `,"ordered":true`),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["12.0", "4.50", "$1,234.50"]}`), models.OutcomeSuccess},
		{"UnorderedByDefault", retrieveSpec(`["a", "b", "c"]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["c", "a", "b"]}`), models.OutcomeSuccess},
		{"OrderedWhenAsked", retrieveSpec(`["a", "b", "c"]`, `,"ordered":true`),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["c", "a", "b"]}`), models.OutcomeFailure},
		{"MultisetCountsDuplicates", retrieveSpec(`["a", "a"]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["a", "b"]}`), models.OutcomeFailure},
		{"LengthMismatch", retrieveSpec(`["a"]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["a", "a"]}`), models.OutcomeFailure},
		{"Objects", retrieveSpec(`[{"name":"Cast Iron Skillet","rating":4.7}]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[{"Name":"cast iron skillet","rating":"4.70"}]}`), models.OutcomeSuccess},
		{"ObjectsMissingKey", retrieveSpec(`[{"name":"Cast Iron Skillet","rating":4.7}]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[{"name":"Cast Iron Skillet"}]}`), models.OutcomeFailure},
		{"NestedListIsAlternatives", retrieveSpec(`[["2024-07", "July 2024", "July"]]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["july"]}`), models.OutcomeSuccess},
		{"ScalarAnswerIsWrapped", retrieveSpec(`[79]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":"$79.00"}`), models.OutcomeSuccess},
		{"MissingData", retrieveSpec(`[79]`, ""),
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":null}`), models.OutcomeFailure},
		{"TaskTypeMismatch", retrieveSpec(`[79]`, ""),
			answer(t, `{"task_type":"navigate","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeFailure},
		{"PlainTextAnswer", retrieveSpec(`[79]`, ""),
			&models.Action{Type: models.ActAnswer, Text: " 79 "}, models.OutcomeSuccess},
		{"PlainTextHoldingJSON", retrieveSpec(`[79]`, ""),
			&models.Action{Type: models.ActAnswer, Text: "```json\n{\"task_type\":\"retrieve\",\"status\":\"SUCCESS\",\"retrieved_data\":[79]}\n```"}, models.OutcomeSuccess},
		{"Stop", retrieveSpec(`[79]`, ""),
			&models.Action{Type: models.ActStop, Reason: "gave up"}, models.OutcomeFailure},
		{"NoFinalAction", retrieveSpec(`[79]`, ""), nil, models.OutcomeFailure},
		{"NotFound", `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"retrieve","status":"NOT_FOUND_ERROR","retrieved_data":null}}]`,
			answer(t, `{"task_type":"retrieve","status":"not_found_error","retrieved_data":null}`), models.OutcomeSuccess},
		{"NotFoundAnsweredWithData", `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"retrieve","status":"NOT_FOUND_ERROR","retrieved_data":null}}]`,
			answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["Espresso Machine"]}`), models.OutcomeFailure},
		{"MutateIgnoresData", `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}}]`,
			answer(t, `{"task_type":"MUTATE","status":"SUCCESS","retrieved_data":["whatever"]}`), models.OutcomeSuccess},
		{"LegacyPerformedOperation", `[{"evaluator":"AgentResponseEvaluator","expected":{"task_type":"mutate","status":"SUCCESS"}}]`,
			answer(t, `{"performed_operation":"mutate","status":"SUCCESS"}`), models.OutcomeSuccess},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, d := evaluate(t, tc.spec, tc.final, nil)
			require.Equal(t, tc.verdict, res.Verdict, string(res.Details))
			require.Len(t, d.EvaluatorsResults, 1)
			r := d.EvaluatorsResults[0]
			require.Equal(t, "AgentResponseEvaluator", r.EvaluatorName)
			require.NotEmpty(t, r.Assertions)
			if tc.verdict == models.OutcomeSuccess {
				require.InDelta(t, 1.0, res.Score, 0)
			} else {
				require.InDelta(t, 0.0, res.Score, 0)
				failed := false
				for _, a := range r.Assertions {
					if !a.Passed {
						failed = true
						require.NotEmpty(t, a.Message, a.Name)
					}
				}
				require.True(t, failed)
			}
		})
	}
}

func TestDeterministic_DetailsShape(t *testing.T) {
	t.Parallel()
	res, _ := evaluate(t, retrieveSpec(`["x"]`, ""), answer(t, `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["y"]}`), nil)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(res.Details, &raw))
	for _, k := range []string{"task_id", "status", "score", "evaluators_results"} {
		require.Contains(t, raw, k)
	}
	er := raw["evaluators_results"].([]any)[0].(map[string]any)
	for _, k := range []string{"evaluator_name", "status", "score", "actual", "expected", "assertions", "error_msg"} {
		require.Contains(t, er, k)
	}
	a := er["assertions"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "passed"} {
		require.Contains(t, a, k)
	}
}

const mutateAgent = `{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}}`

func mutateSpec(network ...string) string {
	return "[" + mutateAgent + "," + strings.Join(network, ",") + "]"
}

func mutated(t *testing.T) *models.Action {
	return answer(t, `{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}`)
}

func TestDeterministic_NetworkEvent(t *testing.T) {
	t.Parallel()
	addToCart := `{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/cart/add","http_method":"POST","post_data":{"product_id":"water-bottle","quantity":2},"response_status":303}}`
	cases := []struct {
		name    string
		spec    string
		har     []map[string]any
		verdict string
	}{
		{"Match", mutateSpec(addToCart), []map[string]any{
			get(site+"/products/water-bottle", 200, "text/html"),
			get(site+"/style.css", 200, "text/css"),
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=2", 303),
			get(site+"/cart", 200, "text/html"),
		}, models.OutcomeSuccess},
		{"QueryStringIgnoredInURL", mutateSpec(addToCart), []map[string]any{
			postForm(site+"/cart/add?from=list", "quantity=2.0&product_id=Water-Bottle", 303),
		}, models.OutcomeSuccess},
		{"WrongPostValue", mutateSpec(addToCart), []map[string]any{
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=1", 303),
		}, models.OutcomeFailure},
		{"WrongStatus", mutateSpec(addToCart), []map[string]any{
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=2", 400),
		}, models.OutcomeFailure},
		{"WrongMethod", mutateSpec(addToCart), []map[string]any{
			get(site+"/cart/add?product_id=water-bottle&quantity=2", 303, "text/html"),
		}, models.OutcomeFailure},
		{"OtherHost", mutateSpec(addToCart), []map[string]any{
			postForm("http://127.0.0.1:9999/sandbox/a1t1/shop/cart/add", "product_id=water-bottle&quantity=2", 303),
		}, models.OutcomeFailure},
		{"NoRequest", mutateSpec(addToCart), []map[string]any{
			get(site+"/cart", 200, "text/html"),
		}, models.OutcomeFailure},
		{"LastEventOnlyByDefault", mutateSpec(addToCart), []map[string]any{
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=2", 303),
			postForm(site+"/cart/add", "product_id=desk-lamp&quantity=1", 303),
		}, models.OutcomeFailure},
		{"AnyEventWhenLastEventOnlyFalse", mutateSpec(strings.Replace(addToCart, `"evaluator":"NetworkEventEvaluator"`, `"evaluator":"NetworkEventEvaluator","last_event_only":false`, 1)), []map[string]any{
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=2", 303),
			postForm(site+"/cart/add", "product_id=desk-lamp&quantity=1", 303),
		}, models.OutcomeSuccess},
		{"JSONBody", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/api/notes","http_method":"POST","post_data":{"$.note.body":"lgtm","kind":"review"}}}`), []map[string]any{{
			"request": map[string]any{"method": "POST", "url": site + "/api/notes",
				"postData": map[string]any{"mimeType": "application/json", "text": `{"kind":"review","note":{"body":"LGTM"}}`}},
			"response": map[string]any{"status": 201, "content": map[string]any{"mimeType": "application/json"}},
		}}, models.OutcomeSuccess},
		{"ParamsWhenNoText", mutateSpec(addToCart), []map[string]any{{
			"request": map[string]any{"method": "POST", "url": site + "/cart/add",
				"postData": map[string]any{"mimeType": "application/x-www-form-urlencoded", "params": []any{
					map[string]any{"name": "product_id", "value": "water-bottle"}, map[string]any{"name": "quantity", "value": "2"}}}},
			"response": map[string]any{"status": 303},
		}}, models.OutcomeSuccess},
		{"ShouldNotExistPasses", mutateSpec(`{"evaluator":"NetworkEventEvaluator","should_not_exist":true,"expected":{"url":"` + site + `/checkout","http_method":"POST"}}`), []map[string]any{
			postForm(site+"/cart/add", "product_id=water-bottle&quantity=2", 303),
		}, models.OutcomeSuccess},
		{"ShouldNotExistFails", mutateSpec(`{"evaluator":"NetworkEventEvaluator","should_not_exist":true,"expected":{"url":"` + site + `/checkout","http_method":"POST"}}`), []map[string]any{
			postForm(site+"/checkout", "address=x", 303),
		}, models.OutcomeFailure},
		{"URLAlternatives", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":["` + site + `/a","` + site + `/b/"],"http_method":"GET"}}`), []map[string]any{
			get(site+"/b", 200, "text/html"),
		}, models.OutcomeSuccess},
		{"QueryParams", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/products?category=outdoor","query_params":{"sort":["price_asc"]}}}`), []map[string]any{
			get(site+"/products?q=&category=outdoor&sort=price_asc", 200, "text/html"),
		}, models.OutcomeSuccess},
		{"QueryParamsMismatch", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/products?category=outdoor","query_params":{"sort":["price_asc"]}}}`), []map[string]any{
			get(site+"/products?category=outdoor&sort=price_desc", 200, "text/html"),
		}, models.OutcomeFailure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, d := evaluate(t, tc.spec, mutated(t), harJSON(t, tc.har...))
			require.Equal(t, tc.verdict, res.Verdict, string(res.Details))
			require.Len(t, d.EvaluatorsResults, 2)
			require.Equal(t, "NetworkEventEvaluator", d.EvaluatorsResults[1].EvaluatorName)
		})
	}
}

func TestDeterministic_NavigateUsesLastPage(t *testing.T) {
	t.Parallel()
	spec := `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"navigate","status":"SUCCESS","retrieved_data":null}},
		{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/users/frank"}}]`
	nav := answer(t, `{"task_type":"navigate","status":"SUCCESS"}`)

	res, _ := evaluate(t, spec, nav, harJSON(t,
		get(site+"/users/frank", 200, "text/html; charset=utf-8"),
		get(site+"/style.css", 200, "text/css"),
		get(site+"/logo.png", 200, "image/png"),
	))
	require.Equal(t, models.OutcomeSuccess, res.Verdict, string(res.Details))

	res, d := evaluate(t, spec, nav, harJSON(t,
		get(site+"/users/frank", 200, "text/html"),
		get(site+"/users/alice", 200, "text/html"),
	))
	require.Equal(t, models.OutcomeFailure, res.Verdict)
	require.Contains(t, d.EvaluatorsResults[1].Assertions[0].Message, "last page loaded")

	// Redirects and downloads are not pages; sub-resources by fetch destination are not either.
	iframe := get(site+"/embed", 200, "text/html")
	iframe["request"].(map[string]any)["headers"] = []any{map[string]any{"name": "Sec-Fetch-Dest", "value": "iframe"}}
	res, _ = evaluate(t, spec, nav, harJSON(t,
		postForm(site+"/users/frank/follow", "x=1", 303),
		get(site+"/users/frank", 200, "text/html"),
		get(site+"/data.csv", 200, "text/csv"),
		iframe,
	))
	require.Equal(t, models.OutcomeSuccess, res.Verdict, string(res.Details))
}

func TestDeterministic_Errors(t *testing.T) {
	t.Parallel()
	network := `{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/cart/add","http_method":"POST"}}`
	cases := []struct {
		name string
		spec string
		har  *strings.Reader
	}{
		{"NoSpec", "", nil},
		{"NotAList", `{"evaluator":"AgentResponseEvaluator"}`, nil},
		{"NoAgentResponseEvaluator", "[" + network + "]", nil},
		{"TwoAgentResponseEvaluators", "[" + mutateAgent + "," + mutateAgent + "]", nil},
		{"NoHAR", mutateSpec(network), nil},
		{"MalformedHAR", mutateSpec(network), strings.NewReader("{not json")},
		{"UnsupportedEvaluator", mutateSpec(`{"evaluator":"ProgramHtmlEvaluator","expected":{}}`), nil},
		{"UnsupportedField", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + site + `/x","headers":{"referer":"y"}}}`), strings.NewReader(`{"log":{"entries":[]}}`)},
		{"UnresolvedPlaceholder", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/cart/add"}}`), strings.NewReader(`{"log":{"entries":[]}}`)},
		{"RegexURL", mutateSpec(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"^` + site + `/.*$"}}`), strings.NewReader(`{"log":{"entries":[]}}`)},
		{"AgentExpectedWithoutStatus", `[{"evaluator":"AgentResponseEvaluator","expected":{"task_type":"mutate"}}]`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, d := evaluate(t, tc.spec, mutated(t), tc.har)
			require.Equal(t, models.OutcomeError, res.Verdict, string(res.Details))
			require.InDelta(t, 0.0, res.Score, 0)
			hasMsg := d.ErrorMsg != nil
			for _, r := range d.EvaluatorsResults {
				if r.ErrorMsg != nil {
					hasMsg = true
					require.NotEmpty(t, *r.ErrorMsg)
				}
			}
			require.True(t, hasMsg, string(res.Details))
		})
	}

	t.Run("CanceledContext", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := verified.New().Evaluate(ctx, eval.Input{Task: &models.Task{EvalSpec: "[]"}})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("NilTask", func(t *testing.T) {
		t.Parallel()
		_, err := verified.New().Evaluate(context.Background(), eval.Input{})
		require.Error(t, err)
	})
}

func TestDeterministic_Interface(t *testing.T) {
	t.Parallel()
	var e eval.Evaluator = verified.New()
	require.Equal(t, models.EvaluatorWebArenaVerified, e.ID())
}
