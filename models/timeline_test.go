package models_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestStepWindows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	steps := []models.Step{
		{ObserveMS: 100, AgentMS: 200, ActMS: 300, CreatedAt: at(1000)}, // began at 400
		{ObserveMS: 100, AgentMS: 200, ActMS: 300, CreatedAt: at(2000)}, // began at 1400
		// Saved with timings that would start it before the previous one
		// (clock jitter): it starts where the previous one did.
		{ObserveMS: 5000, CreatedAt: at(3000)},
		{ObserveMS: 100, AgentMS: 100, CreatedAt: at(4000)}, // began at 3800
	}
	w := models.StepWindows(steps)
	require.Equal(t, []models.StepWindow{
		{Start: time.Time{}, End: at(1400)},
		{Start: at(1400), End: at(1400)},
		{Start: at(1400), End: at(3800)},
		{Start: at(3800), End: at(4000)},
	}, w)
	for name, tc := range map[string]struct {
		ms   int
		want int
	}{
		"before the first step": {-5000, 0},
		"during the first":      {500, 0},
		"at a step's start":     {1400, 2}, // step 2's window is empty
		"during the third":      {3799, 2},
		"the last step's start": {3800, 3},
		"the last step's save":  {4000, 3},
		"after the episode":     {4001, -1},
	} {
		require.Equal(t, tc.want, models.StepOfTime(w, at(tc.ms)), name)
	}
	require.Empty(t, models.StepWindows(nil))
	require.Equal(t, -1, models.StepOfTime(nil, t0))
}

func TestAssignRequestsOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	steps := []models.Step{{CreatedAt: t0.Add(time.Second), ActMS: 500}}
	reqs := []models.NetworkRequest{
		{URL: "b", Started: t0.Add(700 * time.Millisecond)},
		{URL: "a", Started: t0.Add(600 * time.Millisecond)},
		{URL: "c", Started: t0.Add(700 * time.Millisecond)},
		{URL: "late", Started: t0.Add(2 * time.Second)},
	}
	got := models.AssignRequests(steps, reqs)
	require.Len(t, got, 1)
	var urls []string
	for _, r := range got[0] {
		urls = append(urls, r.URL)
	}
	require.Equal(t, []string{"a", "b", "c"}, urls, "by start time, ties in HAR order")
}

func TestExpectedAnswerOf(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		task         models.Task
		source, json string
	}{
		"reference answers": {
			task:   models.Task{ReferenceAnswers: `{"exact_match":"1843"}`, EvalSpec: `{"eval_types":["string_match"]}`},
			source: "reference answers", json: "{\n  \"exact_match\": \"1843\"\n}",
		},
		"WebArena-Verified": {
			task: models.Task{EvalSpec: `[{"evaluator":"NetworkEventEvaluator","expected":{"url":"/x"}},` +
				`{"evaluator":"AgentResponseEvaluator","results_schema":{},"expected":{"task_type":"retrieve","status":"SUCCESS","retrieved_data":["Jan"]}}]`},
			source: "evaluation spec",
			json:   "{\n  \"task_type\": \"retrieve\",\n  \"status\": \"SUCCESS\",\n  \"retrieved_data\": [\n    \"Jan\"\n  ]\n}",
		},
		"empty reference answers fall back to the spec": {
			task:   models.Task{ReferenceAnswers: "null", EvalSpec: `[{"evaluator":"AgentResponseEvaluator","expected":{"status":"NOT_FOUND_ERROR"}}]`},
			source: "evaluation spec", json: "{\n  \"status\": \"NOT_FOUND_ERROR\"\n}",
		},
		"nothing":         {task: models.Task{}},
		"a spec object":   {task: models.Task{EvalSpec: `{"check":"cart_contains"}`}},
		"no expected":     {task: models.Task{EvalSpec: `[{"evaluator":"AgentResponseEvaluator"}]`}},
		"not JSON":        {task: models.Task{ReferenceAnswers: "must include 42"}},
		"empty object {}": {task: models.Task{ReferenceAnswers: "{}"}},
	} {
		got := models.ExpectedAnswerOf(tc.task)
		if tc.source == "" {
			require.Nil(t, got, name)
			continue
		}
		require.NotNil(t, got, name)
		require.Equal(t, tc.source, got.Source, name)
		require.Equal(t, tc.json, got.JSON, name)
	}
}
