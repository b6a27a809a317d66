package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/storage/storagetest"
)

// TestRunner_RemoteBrowser runs the sandbox benchmark with the worker's
// browser on a run-server: no Chromium is launched by the worker (its local
// path does not exist), one endpoint listed is down and the worker goes past
// it, and every episode is recorded and graded as with a local browser (HAR,
// screenshots, the deterministic checks).
func TestRunner_RemoteBrowser(t *testing.T) {
	t.Parallel()
	opts := browserOptions(t)
	ws := testenv.StartRunServer(t, opts.DriverDir)
	opts.RemoteExecutablePath = opts.ExecutablePath
	opts.ExecutablePath = "/nonexistent/chromium"
	opts.WSEndpoints = []string{"ws://127.0.0.1:1/", ws}
	require.NoError(t, opts.Check(), "with browser servers, no local Chromium is needed")

	db := storagetest.OpenSQLite(t)
	b := setupRunOn(t, db, 2, nil, evaltest.Registry(), sandbox.Benchmark(), opts)
	run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Parallelism: 2})
	require.NoError(t, err)
	got := b.waitRun(t, run.ID, 5*time.Minute)
	require.Equal(t, models.RunCompleted, got.Status)

	var attempts []models.Attempt
	require.NoError(t, db.Gorm().Preload("Task").Where("run_id = ?", run.ID).Find(&attempts).Error)
	require.Len(t, attempts, got.TasksTotal)
	for _, a := range attempts {
		require.Equal(t, models.OutcomeSuccess, a.Outcome, "task %s: %s %s", a.Task.ExternalID, a.ErrorClass, a.ErrorMessage)
		require.NotEmpty(t, a.HARKey, "task %s", a.Task.ExternalID)
		_, err := b.artifacts.Stat(context.Background(), a.HARKey)
		require.NoError(t, err, "task %s HAR", a.Task.ExternalID)
		var steps []models.Step
		require.NoError(t, db.Gorm().Where("attempt_id = ?", a.ID).Find(&steps).Error)
		require.Len(t, steps, a.Steps)
		for _, s := range steps {
			_, err := b.artifacts.Stat(context.Background(), s.ScreenshotKey)
			require.NoError(t, err, "task %s step %d screenshot", a.Task.ExternalID, s.Index)
		}
	}
	require.Equal(t, got.TasksTotal, got.Successes)
}
