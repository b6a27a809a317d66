package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/sandbox"
	"proctor/storage/storagetest"
)

// fakeGrader is an evaluator the standard registry does not know: it passes
// an attempt whose episode read the page through the probe its record asks
// for, and says how much text the probe read.
type fakeGrader struct{}

func (fakeGrader) ID() string { return "fake-grader" }

func (fakeGrader) Evaluate(_ context.Context, in eval.Input) (*eval.Result, error) {
	verdict, score, read := models.OutcomeFailure, 0.0, 0
	if in.PageState != nil && len(in.PageState.Probes) == 1 && in.PageState.Probes[0].Value != "" {
		verdict, score, read = models.OutcomeSuccess, 1, len(in.PageState.Probes[0].Value)
	}
	details, err := json.Marshal(map[string]any{"task": in.Task.ExternalID, "probe_chars": read})
	if err != nil {
		return nil, err
	}
	return &eval.Result{Evaluator: "fake-grader", Version: "fake-grader@1", Verdict: verdict, Score: score, Details: details}, nil
}

// withEvaluatorAndSubset rewrites a proctor file's header to name evaluator
// and to declare a subset "one" of its first task.
func withEvaluatorAndSubset(t *testing.T, file []byte, evaluator string) ([]byte, string) {
	t.Helper()
	lines := bytes.SplitN(file, []byte("\n"), 3)
	var header map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &header))
	var first struct{ ID string }
	require.NoError(t, json.Unmarshal(lines[1], &first))
	header["evaluator"] = evaluator
	header["subsets"] = map[string]any{"one": map[string]any{"task_ids": []string{first.ID}}}
	b, err := json.Marshal(header)
	require.NoError(t, err)
	return bytes.Join([][]byte{b, lines[1], lines[2]}, []byte("\n")), first.ID
}

// TestRunner_NewEvaluatorThroughTheRegistry: an evaluator added through the
// registry alone (one record, here a fake) checks the specs of a benchmark
// file that names it at import, reads the page probes it asks for at the end
// of the episode, and grades the attempt as the run's primary verdict; the
// standard registry refuses the same file, naming the evaluators it knows.
func TestRunner_NewEvaluatorThroughTheRegistry(t *testing.T) {
	t.Parallel()
	var checked atomic.Int32
	fake := eval.Kind{
		ID: "fake-grader", Version: "fake-grader@1",
		Check: func(where string, task *models.Task, _ json.RawMessage) error {
			checked.Add(1)
			if task.Intent == "" {
				return models.Errorf(models.EINVALID, "%s: the fake grader needs an intent", where)
			}
			return nil
		},
		New:    func(eval.Tools) eval.Evaluator { return fakeGrader{} },
		Probes: func(*models.Task) ([]eval.PageProbe, error) { return []eval.PageProbe{{}}, nil }, // the page's visible text
	}
	file, taskID := withEvaluatorAndSubset(t, sandbox.Benchmark(), fake.ID)

	_, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(file), nil)
	require.Equal(t, models.EINVALID, models.ErrorCode(err))
	require.ErrorContains(t, err, `"fake-grader" is not one of webarena-verified, webarena, rubric, llm-judge, hidden-tests, none`)

	kinds := evaltest.Registry(fake)
	db := storagetest.OpenSQLite(t)
	b := setupRunFrom(t, db, 1, nil, kinds, file)
	require.EqualValues(t, bytes.Count(bytes.TrimSpace(file), []byte("\n")), checked.Load(), "every task's spec is checked by the record")

	run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer",
		BenchmarkSlug: sandbox.Slug, Subset: "one", Parallelism: 1})
	require.NoError(t, err)
	got := b.waitRun(t, run.ID, 2*time.Minute)
	require.Equal(t, models.RunCompleted, got.Status)
	require.Equal(t, 1, got.TasksTotal)
	require.Equal(t, 1, got.Successes)

	var evs []models.Evaluation
	require.NoError(t, db.Gorm().Table("evaluations e").Select("e.*").Joins("JOIN attempts a ON a.id = e.attempt_id").
		Where("a.run_id = ?", run.ID).Find(&evs).Error)
	require.Len(t, evs, 1, "no judge is configured: the fake's verdict is the only one")
	ev := evs[0]
	require.True(t, ev.IsPrimary)
	require.Equal(t, "fake-grader", ev.Evaluator)
	require.Equal(t, "fake-grader@1", ev.EvaluatorVersion)
	require.Equal(t, models.EvaluationCheck, ev.Kind)
	require.Equal(t, models.OutcomeSuccess, ev.Verdict)
	var details struct {
		Task       string `json:"task"`
		ProbeChars int    `json:"probe_chars"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.Details), &details))
	require.Equal(t, taskID, details.Task)
	require.Positive(t, details.ProbeChars, "the episode read the probe the record asked for")
}
