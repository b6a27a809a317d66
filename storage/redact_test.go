package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/eval/judge"
	"proctor/eval/verified"
	"proctor/eval/webarena"
	"proctor/models"
)

// hiddenMarker is written into every hidden field of the tasks below. It is
// lower-case letters only, so URL encoding, tokenizing and case folding by the
// evaluators leave it recognisable.
const hiddenMarker = "qzhidden"

func TestPublicEvaluationDetails(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kind string
		raw  string
		want string // JSON, or "" for nothing shown
	}{
		{name: "Empty", kind: models.EvaluationCheck, raw: "", want: ""},
		{name: "NotJSON", kind: models.EvaluationCheck, raw: "grader crashed: qzhidden", want: ""},
		{name: "NotAnObject", kind: models.EvaluationCheck, raw: `["qzhidden"]`, want: ""},
		{name: "TrailingData", kind: models.EvaluationCheck, raw: `{"status":"failure"} {"expected":"qzhidden"}`, want: ""},
		{name: "TrailingGarbage", kind: models.EvaluationCheck, raw: `{"status":"failure"} qzhidden`, want: ""},
		{name: "UnknownKind", kind: "oracle", raw: `{"status":"failure"}`, want: ""},
		{
			name: "CheckKeepsOnlyKnownFields",
			kind: models.EvaluationCheck,
			raw: `{"task_id":"t1","status":"failure","score":0,"extra":"qzhidden","evaluators_results":[` +
				`{"evaluator_name":"AgentResponseEvaluator","status":"failure","score":0,"actual":{"retrieved_data":["cable",4.50]},` +
				`"actual_normalized":{"retrieved_data":["cable"]},"expected":{"retrieved_data":["qzhidden"]},"should_not_exist":false,` +
				`"assertions":[{"name":"retrieved_data[0].qzhiddenkey_mismatch","passed":false,"message":"Expected qzhidden"},` +
				`{"name":"agent_response.format","passed":true,"message":"read key \"Status\" as \"status\""}],"error_msg":null},` +
				`{"evaluator_name":"NetworkEventEvaluator","status":"failure","score":0,"actual":[{"url":"http://shop.test/qzhidden"}],` +
				`"actual_normalized":[{"headers":{"x-qzhidden":"1"}}],"assertions":[{"name":"missing_navigation_event","passed":false,"message":"qzhidden"}]},` +
				`{"evaluator_name":"HTMLContentEvaluator","status":"error","score":0,"actual":[{"url":"http://shop.test/qzhidden","locator":"qzhidden","value":"x"}],` +
				`"assertions":[],"error_msg":"program_html[1] (url \"qzhidden\"): was not read"},` +
				`{"evaluator_name":"URLEvaluator","status":"failure","score":0,"actual":{"final_url":"http://shop.test/?qzhidden=1"},` +
				`"assertions":[{"name":"url_match.query[qzhidden]","passed":false},{"name":"url_match.base_path","passed":true}]},` +
				`{"evaluator_name":"StringEvaluator","status":"error","score":0,"actual":{"answer":"about 4 hours","cleaned":"about 4 hours","secret":"qzhidden"},` +
				`"assertions":[],"error_msg":"fuzzy_match judge failed: the reply quoted qzhidden"},` +
				`{"evaluator_name":"qzhidden_type","status":"qzhidden","actual":"qzhidden","error_msg":"eval type \"qzhidden_type\" is not supported"}]}`,
			want: `{"task_id":"t1","status":"failure","score":0,"evaluators_results":[` +
				`{"evaluator_name":"AgentResponseEvaluator","status":"failure","score":0,"actual":{"retrieved_data":["cable",4.50]},` +
				`"actual_normalized":{"retrieved_data":["cable"]},"assertions":[{"name":"retrieved_data_mismatch","passed":false},{"name":"agent_response.format","passed":true}]},` +
				`{"evaluator_name":"NetworkEventEvaluator","status":"failure","score":0,"assertions":[{"name":"missing_navigation_event","passed":false}]},` +
				`{"evaluator_name":"HTMLContentEvaluator","status":"error","score":0,"assertions":[],"error_msg":"` + publicEvaluatorError + `"},` +
				`{"evaluator_name":"URLEvaluator","status":"failure","score":0,"assertions":[{"name":"url_match.query","passed":false},{"name":"url_match.base_path","passed":true}]},` +
				`{"evaluator_name":"StringEvaluator","status":"error","score":0,"actual":{"answer":"about 4 hours","cleaned":"about 4 hours"},"assertions":[],"error_msg":"` + publicFuzzyError + `"},` +
				`{"evaluator_name":"unknown","assertions":[],"error_msg":"` + publicEvaluatorError + `"}]}`,
		},
		{
			name: "CheckSpecError",
			kind: models.EvaluationCheck,
			raw:  `{"task_id":"t1","status":"error","score":0,"error_msg":"reference qzhidden is malformed","evaluators_results":[]}`,
			want: `{"task_id":"t1","status":"error","score":0,"error_msg":"` + publicSpecError + `","evaluators_results":[]}`,
		},
		{
			name: "CheckOfAnotherShape",
			kind: models.EvaluationCheck,
			raw:  `{"verdict":"qzhidden","evaluators_results":"qzhidden"}`,
			want: `{"evaluators_results":[]}`,
		},
		{
			name: "JudgeDropsReplyAndErrorText",
			kind: models.EvaluationJudge,
			raw: `{"judge":"llm-judge:m:trajectory-v1","model":"m","prompt_version":"trajectory-v1","prompt_sha256":"ab","success":false,"score":2,` +
				`"rationale":"Added a cable, not the cheapest.","raw_reply":"qzhidden","images_sent":3,"images_failed":1,"steps_sent":4,"steps_total":9,` +
				`"estimated_input_tokens":1200,"attempts":2,"repair_cause":"qzhidden","error_kind":"","surprise":"qzhidden"}`,
			want: `{"judge":"llm-judge:m:trajectory-v1","model":"m","prompt_version":"trajectory-v1","success":false,"score":2,` +
				`"rationale":"Added a cable, not the cheapest.","images_sent":3,"steps_sent":4,"steps_total":9,"attempts":2}`,
		},
		{
			name: "JudgeError",
			kind: models.EvaluationJudge,
			raw:  `{"judge":"llm-judge:m:trajectory-v1","success":null,"score":null,"error_kind":"rejected","error_msg":"HTTP 400: invalid prompt qzhidden"}`,
			want: `{"judge":"llm-judge:m:trajectory-v1","error_kind":"rejected","error_msg":"` + publicJudgeRejected + `"}`,
		},
		{
			name: "JudgeErrorOfUnknownKind",
			kind: models.EvaluationJudge,
			raw:  `{"error_kind":"qzhidden","error_msg":"qzhidden"}`,
			want: `{"error_msg":"` + publicJudgeFailed + `"}`,
		},
		{
			name: "RubricItems",
			kind: models.EvaluationRubric,
			raw: `{"judge":"llm-judge:m:rubric-v1","success":false,"score":null,"rubric_score":0.6,"perfect":false,"weights":"given",` +
				`"items":[{"item_id":7,"key":"cart","weight":0.6,"passed":true,"rationale":"One cable.","steps":[1,2],"extra":"qzhidden"},` +
				`{"item_id":8,"key":"cheapest","weight":0.4,"passed":false,"rationale":"Dearer.","steps":null},"qzhidden"]}`,
			want: `{"judge":"llm-judge:m:rubric-v1","success":false,"rubric_score":0.6,"perfect":false,"items":[` +
				`{"key":"cart","passed":true,"rationale":"One cable.","steps":[1,2]},{"key":"cheapest","passed":false,"rationale":"Dearer.","steps":[]}]}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := publicEvaluationDetails(c.kind, c.raw)
			if c.want == "" {
				require.Empty(t, got)
				return
			}
			require.JSONEq(t, c.want, got)
			require.NotContains(t, got, hiddenMarker)
		})
	}
}

func TestPublicAssertionName(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"url_match.base_path":                       "url_match.base_path",
		"url_match.query[product_list_order]":       "url_match.query",
		"url_match.query[a.b]":                      "url_match.query",
		"url_match.query[a]b]":                      "url_match",
		"url_match.query[unclosed.qzhidden":         "url_match.query",
		"program_html[0].must_include[1]":           "program_html.must_include",
		"fuzzy_match[2]":                            "fuzzy_match",
		"exact_match":                               "exact_match",
		"agent_response.format":                     "agent_response.format",
		"agent_response_none_mismatch":              "agent_response_none_mismatch",
		"agent_response.task_type_mismatch":         "agent_response.task_type_mismatch",
		"retrieved_data[0]_mismatch":                "retrieved_data_mismatch",
		"retrieved_data_array_values_mismatch":      "retrieved_data_array_values_mismatch",
		"retrieved_data.qzhidden_keys_mismatch":     "retrieved_data_keys_mismatch",
		"retrieved_data[3].qzhidden.price_mismatch": "retrieved_data_mismatch",
		"network_event.headers.x-qzhidden_mismatch": "network_event_mismatch",
		"missing_navigation_event":                  "missing_navigation_event",
		"qzhidden_mismatch":                         "check_mismatch",
		"qzhidden":                                  "check",
		"":                                          "check",
	}
	for name, want := range cases {
		require.Equal(t, want, publicAssertionName(name), name)
	}
}

// TestPublicJudgeErrorKinds ties the public sentences to the judge's error
// kinds: every kind has its own sentence.
func TestPublicJudgeErrorKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{judge.KindRefused, judge.KindOffFormat, judge.KindTimeout, judge.KindUnavailable, judge.KindRejected, judge.KindBadResponse} {
		shown, sentence := publicJudgeError(kind)
		require.Equal(t, kind, shown)
		require.NotEqual(t, publicJudgeFailed, sentence, kind)
	}
}

// fuzzyStub is a fuzzy matcher that agrees, disagrees or fails with an error
// quoting the reference, as judges' replies and endpoints' error bodies can.
type fuzzyStub struct{ mode string }

func (f fuzzyStub) FuzzyMatch(_ context.Context, _, reference, _ string) (bool, models.Usage, error) {
	switch f.mode {
	case "agree":
		return true, models.Usage{}, nil
	case "disagree":
		return false, models.Usage{}, nil
	}
	return false, models.Usage{}, fmt.Errorf("judge off-format: reply %q", "the answer matches "+reference)
}

// TestPublicEvaluationDetails_RealEvaluators grades attempts with the real
// WebArena-Verified and WebArena evaluators on tasks whose every hidden field
// carries hiddenMarker, and checks that the full details quote it (so the case
// reaches a leak) while the public details never do, yet still show the
// agent's own answer and each assertion's outcome.
func TestPublicEvaluationDetails_RealEvaluators(t *testing.T) {
	t.Parallel()
	const (
		shop = "http://shop.test:7770"
		m    = hiddenMarker
	)
	har := func(entries ...string) string {
		return `{"log":{"version":"1.2","entries":[` + strings.Join(entries, ",") + `]}}`
	}
	request := func(method, url, headers, post string, status int) string {
		pd := ""
		if post != "" {
			b, _ := json.Marshal(post)
			pd = `,"postData":{"mimeType":"application/json","text":` + string(b) + `}`
		}
		return fmt.Sprintf(`{"request":{"method":%q,"url":%q,"headers":[%s]%s},"response":{"status":%d,"content":{"mimeType":"text/html"},"cookies":[]}}`,
			method, url, headers, pd, status)
	}
	mutate := `{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}}`
	network := `{"evaluator":"NetworkEventEvaluator","expected":{"url":"` + shop + `/` + m + `/notes","http_method":"POST",` +
		`"headers":{"x-` + m + `":"` + m + `yes"},"query_params":{"` + m + `q":["` + m + `v"]},` +
		`"post_data":{"$.note.` + m + `":"` + m + `text","$.note.kind":"` + m + `kind"}}}`
	noteURL := shop + "/" + m + "/notes?" + m + "q=" + m + "v"
	rightNote := request("POST", noteURL, `{"name":"x-`+m+`","value":"`+m+`yes"}`, `{"note":{"`+m+`":"`+m+`text","kind":"`+m+`kind"}}`, 200)
	wrongNote := request("POST", noteURL, `{"name":"x-`+m+`","value":"no"}`, `{"note":{"`+m+`":"lgtm","kind":"Issue"}}`, 200)
	mutated := &models.Action{Type: models.ActAnswer, Response: json.RawMessage(`{"task_type":"mutate","status":"SUCCESS","retrieved_data":null}`)}
	retrieve := func(schema, expected string) string {
		return `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"array","items":` + schema +
			`},"expected":{"task_type":"retrieve","status":"SUCCESS","retrieved_data":` + expected + `}}]`
	}
	answerText := func(s string) *models.Action { return &models.Action{Type: models.ActAnswer, Text: s} }
	bio := func(url, locator, contents string) string {
		return `{"eval_types":["program_html"],"reference_answers":null,"reference_url":"","program_html":[` +
			`{"url":"` + url + `","locator":"` + locator + `","required_contents":` + contents + `}]}`
	}
	bioSpec := bio("http://reddit.test/user/"+m, `document.querySelector(\".`+m+`\").outerText`, `{"exact_match":"`+m+` developer"}`)
	probed := func(t *testing.T, spec, value, probeErr string) *eval.PageState {
		probes, err := webarena.Probes(&models.Task{ExternalID: "t", EvalSpec: spec})
		require.NoError(t, err)
		ps := &eval.PageState{FinalURL: "http://reddit.test/"}
		for _, p := range probes {
			ps.Probes = append(ps.Probes, eval.ProbeResult{PageProbe: p, Value: value, Error: probeErr})
		}
		return ps
	}
	fuzzySpec := `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":["` + m + ` 3h 30min"]},"reference_url":"","program_html":[]}`
	urlSpec := `{"eval_types":["url_match"],"reference_answers":null,"reference_url":"` + shop + `/` + m + `/result/?` + m + `order=` + m + `price","program_html":[]}`

	cases := []struct {
		name      string
		evaluator eval.Evaluator
		spec      string
		final     *models.Action
		har       string // "" for none
		state     func(t *testing.T) *eval.PageState
		verdict   string
		shown     []string // must appear in the public details
	}{
		// WebArena-Verified.
		{name: "VerifiedRetrieveWrong", evaluator: verified.New(), spec: retrieve(`{"type":"string"}`, `["`+m+` cable"]`),
			final:   &models.Action{Type: models.ActAnswer, Response: json.RawMessage(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["usb hub"]}`)},
			verdict: models.OutcomeFailure, shown: []string{"usb hub", `"passed":false`}},
		{name: "VerifiedRetrieveObjectKeys", evaluator: verified.New(),
			spec:    retrieve(`{"type":"object","properties":{"`+m+`name":{"type":"string"}}}`, `[{"`+m+`name":"`+m+`"}]`),
			final:   &models.Action{Type: models.ActAnswer, Response: json.RawMessage(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[{"name":"usb hub"}]}`)},
			verdict: models.OutcomeFailure, shown: []string{"usb hub", `"passed":false`}},
		{name: "VerifiedAnswerInProse", evaluator: verified.New(), spec: retrieve(`{"type":"string"}`, `["`+m+`"]`),
			final: answerText("I think it is the usb hub"), verdict: models.OutcomeFailure, shown: []string{"I think it is the usb hub", "agent_response_invalid_format"}},
		{name: "VerifiedExpectedNotNormalisable", evaluator: verified.New(), spec: retrieve(`{"type":"string","format":"date"}`, `["the fifth of `+m+`"]`),
			final:   &models.Action{Type: models.ActAnswer, Response: json.RawMessage(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["2023-05-05"]}`)},
			verdict: models.OutcomeError, shown: []string{publicEvaluatorError}},
		{name: "VerifiedBadTaskType", evaluator: verified.New(),
			spec:  `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"` + m + `","status":"SUCCESS","retrieved_data":null}}]`,
			final: mutated, verdict: models.OutcomeError, shown: []string{publicEvaluatorError}},
		{name: "VerifiedUnsupportedEvaluator", evaluator: verified.New(), spec: `[` + mutate + `,{"evaluator":"` + m + `Evaluator","expected":{}}]`,
			final: mutated, verdict: models.OutcomeError, shown: []string{`"evaluator_name":"unknown"`, publicEvaluatorError}},
		{name: "VerifiedNetworkMatches", evaluator: verified.New(), spec: `[` + mutate + `,` + network + `]`,
			final: mutated, har: har(rightNote), verdict: models.OutcomeSuccess, shown: []string{`"evaluator_name":"NetworkEventEvaluator","status":"success"`}},
		{name: "VerifiedNetworkMismatch", evaluator: verified.New(), spec: `[` + mutate + `,` + network + `]`,
			final: mutated, har: har(wrongNote), verdict: models.OutcomeFailure, shown: []string{`"name":"missing_navigation_event","passed":false`}},
		{name: "VerifiedNetworkShouldNotExist", evaluator: verified.New(),
			spec:  `[` + mutate + `,` + strings.Replace(network, `"expected"`, `"should_not_exist":true,"expected"`, 1) + `]`,
			final: mutated, har: har(rightNote), verdict: models.OutcomeFailure, shown: []string{`"name":"unexpected_navigation_event","passed":false`}},
		{name: "VerifiedNetworkWithoutHAR", evaluator: verified.New(), spec: `[` + mutate + `,` + network + `]`,
			final: mutated, verdict: models.OutcomeError, shown: []string{publicRecordingError}},

		// WebArena.
		{name: "FuzzyAgrees", evaluator: webarena.New(fuzzyStub{"agree"}), spec: fuzzySpec, final: answerText("about 4 hours"),
			verdict: models.OutcomeSuccess, shown: []string{"about 4 hours", `"name":"fuzzy_match","passed":true`}},
		{name: "FuzzyDisagrees", evaluator: webarena.New(fuzzyStub{"disagree"}), spec: fuzzySpec, final: answerText("about 4 hours"),
			verdict: models.OutcomeFailure, shown: []string{"about 4 hours", `"name":"fuzzy_match","passed":false`}},
		{name: "FuzzyJudgeFails", evaluator: webarena.New(fuzzyStub{"fail"}), spec: fuzzySpec, final: answerText("about 4 hours"),
			verdict: models.OutcomeError, shown: []string{publicFuzzyError}},
		{name: "FuzzyWithoutJudge", evaluator: webarena.New(nil), spec: fuzzySpec, final: answerText("about 4 hours"),
			verdict: models.OutcomeError, shown: []string{publicFuzzyError}},
		{name: "NotAchievableReason", evaluator: webarena.New(fuzzyStub{"disagree"}),
			spec:  `{"eval_types":["string_match"],"reference_answers":{"fuzzy_match":"N/A"},"reference_url":"","program_html":[],"string_note":"` + m + ` is gone"}`,
			final: answerText("done"), verdict: models.OutcomeFailure, shown: []string{`"answer":"done"`}},
		{name: "ExactAndMustInclude", evaluator: webarena.New(nil),
			spec:  `{"eval_types":["string_match"],"reference_answers":{"exact_match":"` + m + `","must_include":["` + m + `a","` + m + `b"]},"reference_url":"","program_html":[]}`,
			final: answerText("usb hub"), verdict: models.OutcomeFailure, shown: []string{"usb hub", `"name":"exact_match","passed":false`, `"name":"must_include","passed":false`}},
		{name: "UnknownReferenceKind", evaluator: webarena.New(nil),
			spec:  `{"eval_types":["string_match"],"reference_answers":{"` + m + `_match":["x"]},"reference_url":"","program_html":[]}`,
			final: answerText("usb hub"), verdict: models.OutcomeError, shown: []string{publicEvaluatorError}},
		{name: "UnsupportedEvalType", evaluator: webarena.New(nil), spec: `{"eval_types":["` + m + `_match"],"reference_answers":null}`,
			final: answerText("usb hub"), verdict: models.OutcomeError, shown: []string{`"evaluator_name":"unknown"`}},
		{name: "URLMatchWrong", evaluator: webarena.New(nil), spec: urlSpec, final: answerText(""),
			state: func(*testing.T) *eval.PageState {
				return &eval.PageState{FinalURL: shop + "/catalogsearch/result/?q=desk"}
			},
			verdict: models.OutcomeFailure, shown: []string{`"name":"url_match.base_path","passed":false`, `"name":"url_match.query","passed":false`}},
		{name: "URLMatchRight", evaluator: webarena.New(nil), spec: urlSpec, final: answerText(""),
			state: func(*testing.T) *eval.PageState {
				return &eval.PageState{FinalURL: shop + "/" + m + "/result/?" + m + "order=" + m + "price"}
			},
			verdict: models.OutcomeSuccess, shown: []string{`"name":"url_match.query","passed":true`}},
		{name: "URLMatchNoFinalURL", evaluator: webarena.New(nil), spec: urlSpec, final: answerText(""),
			verdict: models.OutcomeError, shown: []string{publicRecordingError}},
		{name: "ProgramHTMLWrong", evaluator: webarena.New(nil), spec: bioSpec, final: answerText(""),
			state:   func(t *testing.T) *eval.PageState { return probed(t, bioSpec, "value:Junior dev", "") },
			verdict: models.OutcomeFailure, shown: []string{`"name":"program_html.exact_match","passed":false`}},
		{name: "ProgramHTMLRight", evaluator: webarena.New(nil), spec: bioSpec, final: answerText(""),
			state:   func(t *testing.T) *eval.PageState { return probed(t, bioSpec, "value:"+m+" developer", "") },
			verdict: models.OutcomeSuccess, shown: []string{`"name":"program_html.exact_match","passed":true`}},
		{name: "ProgramHTMLProbeFailed", evaluator: webarena.New(nil), spec: bioSpec, final: answerText(""),
			state:   func(t *testing.T) *eval.PageState { return probed(t, bioSpec, "", "page "+m+" did not load") },
			verdict: models.OutcomeError, shown: []string{publicEvaluatorError}},
		{name: "ProgramHTMLNotProbed", evaluator: webarena.New(nil), spec: bioSpec, final: answerText(""),
			state:   func(*testing.T) *eval.PageState { return &eval.PageState{FinalURL: "http://reddit.test/"} },
			verdict: models.OutcomeError, shown: []string{publicEvaluatorError}},
		{name: "ProgramHTMLNoPageState", evaluator: webarena.New(nil), spec: bioSpec, final: answerText(""),
			verdict: models.OutcomeError, shown: []string{publicRecordingError}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := eval.Input{Task: &models.Task{ExternalID: "t1", Intent: "Do the task.", EvalSpec: c.spec}, Final: c.final}
			if c.har != "" {
				in.HAR = strings.NewReader(c.har)
			}
			if c.state != nil {
				in.PageState = c.state(t)
			}
			res, err := c.evaluator.Evaluate(context.Background(), in)
			require.NoError(t, err)
			full := string(res.Details)
			require.Equal(t, c.verdict, res.Verdict, full)
			require.Contains(t, strings.ToLower(full), hiddenMarker, "the full details quote the hidden spec, so this case tests a leak")

			public := publicEvaluationDetails(models.EvaluationCheck, full)
			require.NotEmpty(t, public)
			require.NotContains(t, strings.ToLower(public), hiddenMarker, "public details: %s\nfull details: %s", public, full)
			require.Contains(t, public, `"status":"`+c.verdict+`"`)
			for _, s := range c.shown {
				require.Contains(t, public, s, public)
			}
		})
	}
}

// TestPublicEvaluationDetails_JudgeDetails checks the judges' own details
// type: the reply, the repair cause and the error text are never public.
func TestPublicEvaluationDetails_JudgeDetails(t *testing.T) {
	t.Parallel()
	success, score, rubricScore, perfect := false, 2, 0.5, false
	msg := "endpoint answered HTTP 400: " + hiddenMarker
	d := judge.Details{
		Judge: "llm-judge:m:rubric-v1", Model: "m", PromptVersion: "rubric-v1", PromptSHA256: "ab", Success: &success, Score: &score,
		Rationale: "The cart holds a dearer cable.", RawReply: `{"rationale":"` + hiddenMarker + `"}`, ImagesSent: 2, StepsSent: 3, StepsTotal: 3,
		EstimatedInputTokens: 900, Attempts: 2, RepairCause: "unknown field " + hiddenMarker, ErrorKind: judge.KindOffFormat, ErrorMsg: &msg,
		RubricScore: &rubricScore, Perfect: &perfect, Weights: "given",
		Items: []judge.ItemDetail{{ItemID: 1, Key: "cart", Weight: 1, Passed: true, Rationale: "One cable is in the cart.", Steps: []int{2}}},
	}
	raw, err := json.Marshal(d)
	require.NoError(t, err)
	require.Contains(t, string(raw), hiddenMarker)
	for _, kind := range []string{models.EvaluationJudge, models.EvaluationRubric} {
		public := publicEvaluationDetails(kind, string(raw))
		require.NotContains(t, public, hiddenMarker, kind)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(public), &got))
		require.Equal(t, "The cart holds a dearer cable.", got["rationale"])
		require.Equal(t, publicJudgeOffFormat, got["error_msg"])
		require.Equal(t, judge.KindOffFormat, got["error_kind"])
		require.Equal(t, []any{map[string]any{"key": "cart", "passed": true, "rationale": "One cable is in the cart.", "steps": []any{2.0}}}, got["items"])
		for _, hidden := range []string{"raw_reply", "repair_cause", "estimated_input_tokens", "prompt_sha256"} {
			require.NotContains(t, got, hidden)
		}
	}
}
