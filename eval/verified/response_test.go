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

// TestAgentResponse covers how final answers are read: structured, as text
// with the sloppiness agents show, or missing; each outcome is classified
// with a message naming the cause.
func TestAgentResponse(t *testing.T) {
	t.Parallel()
	price := retrieveSpec(`{"type":"number","format":"currency"}`, `[79]`, "")
	text := func(s string) *models.Action { return &models.Action{Type: models.ActAnswer, Text: s} }
	cases := []struct {
		name    string
		lenient bool // graded by the lenient evaluator instead of the official reading
		spec    string
		final   *models.Action
		verdict string
		failed  []string
		note    string // a passed assertion's message must contain it
		message string // a failed assertion's message must contain it
	}{
		{"Structured", false, price, retrieved(`["$79.00"]`), models.OutcomeSuccess, nil, "", ""},
		{"JSONText", false, price, text(`{"task_type":"retrieve","status":"success","retrieved_data":[79]}`), models.OutcomeSuccess, nil, "", ""},
		{"CodeFence", false, price, text("Here you go:\n```json\n{\"task_type\":\"retrieve\",\"status\":\"SUCCESS\",\"retrieved_data\":[79]}\n```\nThanks"), models.OutcomeSuccess, nil, "", ""},
		{"CodeFenceUpperCaseLanguage", false, price, text("```JSON\n{\"task_type\":\"retrieve\",\"status\":\"SUCCESS\",\"retrieved_data\":[79]}\n```"), models.OutcomeFailure,
			[]string{"agent_response_invalid_format"}, "", "not a JSON object"},
		{"StrayText", false, price, text(`Final answer: {"task_type":"retrieve","status":"SUCCESS","retrieved_data":[79]} -- done.`), models.OutcomeFailure,
			[]string{"agent_response_invalid_format"}, "", "JSON with text around it is not read"},
		{"TrailingText", false, price, text(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[79]} done`), models.OutcomeFailure,
			[]string{"agent_response_invalid_format"}, "", "not a JSON object"},
		{"ByteOrderMark", false, price, text("\ufeff" + `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeFailure,
			[]string{"agent_response_invalid_format"}, "", "byte order mark"},
		{"KeyCase", false, price, answer(`{"Task_Type":"Retrieve","STATUS":"Success","retrievedData":[79]}`), models.OutcomeFailure,
			[]string{"agent_response_keys_mismatch", "retrieved_data_missing_or_null"}, "", "Missing keys"},
		{"LegacyPerformedOperation", false, price, answer(`{"performed_operation":"RETRIEVE","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeSuccess, nil, "performed_operation", ""},
		{"CyrillicTaskType", false, price, answer(`{"task_type":"r\u0435triev\u0435","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeSuccess, nil, "", ""},
		{"LenientCodeFence", true, price, text("Here you go:\n```json\n{\"task_type\":\"retrieve\",\"status\":\"SUCCESS\",\"retrieved_data\":[79]}\n```\nThanks"), models.OutcomeSuccess, nil, "code fence", ""},
		{"LenientStrayText", true, price, text(`Final answer: {"task_type":"retrieve","status":"SUCCESS","retrieved_data":[79]} -- done.`), models.OutcomeSuccess, nil, "surrounding text", ""},
		{"LenientByteOrderMark", true, price, text("\ufeff" + `{"task_type":"retrieve","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeSuccess, nil, "", ""},
		{"LenientKeyCase", true, price, answer(`{"Task_Type":"Retrieve","STATUS":"Success","retrievedData":[79]}`), models.OutcomeSuccess, nil, `read key "Task_Type"`, ""},
		{"TaskTypeMismatch", false, price, answer(`{"task_type":"navigate","status":"SUCCESS","retrieved_data":[79]}`), models.OutcomeFailure,
			[]string{"agent_response.task_type_mismatch"}, "", "Expected retrieve, got navigate"},
		{"StatusMismatch", false, price, answer(`{"task_type":"retrieve","status":"NOT_FOUND_ERROR","retrieved_data":null}`), models.OutcomeFailure,
			[]string{"agent_response.status_mismatch", "retrieved_data_missing_or_null"}, "", "Expected success, got not_found_error"},
		{"MissingStatus", false, price, answer(`{"task_type":"retrieve","retrieved_data":[79]}`), models.OutcomeFailure,
			[]string{"agent_response_keys_mismatch"}, "", "Missing keys"},
		{"StatusNotAString", false, price, answer(`{"task_type":"retrieve","status":1,"retrieved_data":[79]}`), models.OutcomeFailure,
			[]string{"agent_response.status_mismatch"}, "", "Expected success"},
		{"WrongValue", false, price, retrieved(`["$89.00"]`), models.OutcomeFailure, []string{"retrieved_data_array_values_mismatch"}, "", "Expected: [79]"},
		{"PlainText", false, price, text("The price is $79."), models.OutcomeFailure, []string{"agent_response_invalid_format"}, "", "plain text"},
		{"JSONList", false, price, text(`[79]`), models.OutcomeFailure, []string{"agent_response_invalid_format"}, "", "a list"},
		{"BrokenFence", false, price, text("```json\n{\"task_type\": \"retrieve\",\n```"), models.OutcomeFailure, []string{"agent_response_invalid_format"}, "", "not a JSON object"},
		{"EmptyText", false, price, text("   "), models.OutcomeFailure, []string{"agent_response_none_mismatch"}, "", "empty"},
		{"Stop", false, price, &models.Action{Type: models.ActStop, Reason: "site is down"}, models.OutcomeFailure, []string{"agent_response_none_mismatch"}, "", "site is down"},
		{"NoFinalAction", false, price, nil, models.OutcomeFailure, []string{"agent_response_none_mismatch"}, "", "without an answer"},
		{"NotFoundTask", false, `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"retrieve","status":"NOT_FOUND_ERROR","retrieved_data":null}}]`,
			answer(`{"task_type":"retrieve","status":"not_found_error","retrieved_data":[]}`), models.OutcomeSuccess, nil, "", ""},
		{"NotFoundTaskAnsweredWithData", false, `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"retrieve","status":"NOT_FOUND_ERROR","retrieved_data":null}}]`,
			answer(`{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["Espresso Machine"]}`), models.OutcomeFailure,
			[]string{"agent_response.status_mismatch", "retrieved_data_unexpected"}, "", "Expected no retrieved_data"},
		{"MutateIgnoresData", false, "[" + mutateAgent + "]", answer(`{"task_type":"MUTATE","status":"SUCCESS","retrieved_data":["whatever"]}`), models.OutcomeSuccess, nil, "", ""},
		{"MissingRetrievedData", false, price, answer(`{"task_type":"retrieve","status":"SUCCESS"}`), models.OutcomeFailure, []string{"retrieved_data_missing_or_null"}, "", "None or empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := verified.New()
			if tc.lenient {
				ev = verified.NewLenient()
			}
			verdict, d := grade(t, ev, tc.spec, tc.final, nil)
			require.Equal(t, tc.verdict, verdict, "%s", dump(d))
			r := d.EvaluatorsResults[0]
			require.Equal(t, verified.AgentResponseEvaluator, r.EvaluatorName)
			require.ElementsMatch(t, tc.failed, failedNames(d), "%s", dump(d))
			var notes, failures []string
			for _, a := range r.Assertions {
				if a.Passed {
					notes = append(notes, a.Message)
				} else {
					failures = append(failures, a.Message)
					require.NotEmpty(t, a.Message, a.Name)
				}
			}
			if tc.note != "" {
				require.Contains(t, strings.Join(notes, "\n"), tc.note)
			} else {
				require.Empty(t, notes)
			}
			if tc.message != "" {
				require.Contains(t, strings.Join(failures, "\n"), tc.message)
			}
		})
	}
}

// TestDetailsShape: the details follow WebArena-Verified's eval_result.json.
func TestDetailsShape(t *testing.T) {
	t.Parallel()
	res, err := verified.New().Evaluate(context.Background(), eval.Input{
		Task:  &models.Task{ExternalID: "7", EvalSpec: retrieveSpec(`{"type":"string","format":"month"}`, `["January"]`, "")},
		Final: retrieved(`["Feb"]`),
	})
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(res.Details, &raw))
	for _, k := range []string{"task_id", "status", "score", "evaluators_results"} {
		require.Contains(t, raw, k)
	}
	er := raw["evaluators_results"].([]any)[0].(map[string]any)
	for _, k := range []string{"evaluator_name", "status", "score", "actual", "actual_normalized", "expected", "assertions", "error_msg"} {
		require.Contains(t, er, k)
	}
	require.Equal(t, []any{"February"}, er["actual_normalized"].(map[string]any)["retrieved_data"])
	require.Equal(t, []any{"January"}, er["expected"].(map[string]any)["retrieved_data"])
}

func TestEvaluator_Contract(t *testing.T) {
	t.Parallel()
	var e eval.Evaluator = verified.New()
	require.Equal(t, models.EvaluatorWebArenaVerified, e.ID())
	require.Equal(t, "webarena-verified@2", verified.Version)
	var lenient eval.Evaluator = verified.NewLenient()
	require.Equal(t, models.EvaluatorWebArenaVerifiedLenient, lenient.ID())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := verified.New().Evaluate(ctx, eval.Input{Task: &models.Task{EvalSpec: "[]"}})
	require.ErrorIs(t, err, context.Canceled)
	_, err = verified.New().Evaluate(context.Background(), eval.Input{})
	require.Error(t, err)
}
