package runner_test

import (
	"testing"

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
	requireEveryTaskPassed(t, b, run.ID)
}
