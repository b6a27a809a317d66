package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/eval"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// runBundle is a database with the sandbox benchmark served by a test server,
// a team with a replay agent, and a runner with a real browser.
type runBundle struct {
	db        *storage.DB
	artifacts artifact.Store
	runner    *runner.Runner
	member    context.Context
	system    context.Context
}

func browserOptions(t testing.TB) episode.BrowserOptions {
	t.Helper()
	opts := episode.BrowserOptionsFromEnv(os.Getenv)
	err := opts.Check()
	why := "episode tests need Chromium and the Playwright driver (make deps)"
	if err != nil {
		why += ": " + err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, why)
	return opts
}

func setupRun(t testing.TB, db *storage.DB, episodes int) *runBundle {
	t.Helper()
	return setupRunWith(t, db, episodes, nil)
}

// setupRunWith is setupRun with LLM judges (nil: none configured).
func setupRunWith(t testing.TB, db *storage.DB, episodes int, judges runner.JudgeFactory) *runBundle {
	t.Helper()
	return setupRunFrom(t, db, episodes, judges, evaltest.Registry(), sandbox.Benchmark())
}

// setupRunFrom is setupRunWith with the evaluator registry the import and
// the runner use, and the benchmark file imported as the sandbox benchmark.
func setupRunFrom(t testing.TB, db *storage.DB, episodes int, judges runner.JudgeFactory, kinds *eval.Registry, benchmark []byte) *runBundle {
	t.Helper()
	return setupRunOn(t, db, episodes, judges, kinds, benchmark, browserOptions(t))
}

// setupRunOn is setupRunFrom with the runner's browser options.
func setupRunOn(t testing.TB, db *storage.DB, episodes int, judges runner.JudgeFactory, kinds *eval.Registry, benchmark []byte, opts episode.BrowserOptions) *runBundle {
	t.Helper()
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(v)

	box := sandbox.New(sandbox.Options{})
	srv := httptest.NewServer(box)
	t.Cleanup(srv.Close)
	ds, err := importer.Parse(kinds, models.FormatProctor, bytes.NewReader(benchmark), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(system, sandbox.Slug, ds, "benchmark.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, db.SetRevealReferences(system, sandbox.Slug, true))
	for site, url := range sandbox.SiteURLs(srv.URL) {
		_, err := db.UpdateSite(system, sandbox.Slug, site, url, "", 0)
		require.NoError(t, err)
	}

	u, err := db.CreateUser(ctx, "runner@example.org", "Runner", "correct horse battery", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
	_, err = servicetest.Teams(db).CreateTeam(member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(db, member, "lab", &models.Agent{Name: "Replayer", Kind: models.AgentReplay}, nil))

	store, err := artifact.NewLocal(filepath.Join(t.TempDir(), "artifacts"), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "http://proctor.test")
	require.NoError(t, err)
	r, err := runner.New(runner.Config{Evaluators: kinds,
		DB: db, Artifacts: store, Browser: opts,
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Judges:      judges,
		Options:     runner.Options{Episodes: episodes, CancelPoll: 200 * time.Millisecond},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(stopCtx))
	})
	return &runBundle{db: db, artifacts: store, runner: r, member: member, system: system}
}

// waitRun waits until the run reaches a final status and returns it.
func (b *runBundle) waitRun(t *testing.T, runID int64, limit time.Duration) models.Run {
	t.Helper()
	limit = testenv.Scaled(t, limit) // the limit of an event's wait, not a duration measured
	require.Eventually(t, func() bool {
		status, err := b.db.RunStatus(b.system, runID)
		require.NoError(t, err)
		return status == models.RunCompleted || status == models.RunFailed || status == models.RunCanceled
	}, limit, 100*time.Millisecond, "run %d did not finish within %s", runID, limit)
	var run models.Run
	require.NoError(t, b.db.Gorm().First(&run, runID).Error)
	return run
}

// TestRunner_SandboxReplay runs every sandbox task in Chromium with the replay
// agent, on SQLite and PostgreSQL: every reference script passes its
// deterministic check, and every step's artifacts exist.
func TestRunner_SandboxReplay(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		b := setupRun(t, db, 4)
		run, err := runService(b.db, b.runner).QueueRun(b.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Parallelism: 4})
		require.NoError(t, err)
		requireEveryTaskPassed(t, b, run.ID)

		// No judge is configured: only the deterministic check graded.
		var kinds []string
		require.NoError(t, db.Gorm().Model(&models.Evaluation{}).Joins("JOIN attempts a ON a.id = evaluations.attempt_id").
			Where("a.run_id = ?", run.ID).Distinct().Pluck("evaluations.kind", &kinds).Error)
		require.Equal(t, []string{models.EvaluationCheck}, kinds, "no judge, so nothing is judged")
	})
}

// requireEveryTaskPassed waits for the run to complete and checks that every
// attempt succeeded with its HAR and every step's screenshot stored.
func requireEveryTaskPassed(t *testing.T, b *runBundle, runID int64) {
	t.Helper()
	got := b.waitRun(t, runID, 5*time.Minute)
	require.Equal(t, models.RunCompleted, got.Status)
	var attempts []models.Attempt
	require.NoError(t, b.db.Gorm().Preload("Task").Where("run_id = ?", runID).Find(&attempts).Error)
	require.Len(t, attempts, got.TasksTotal)
	for _, a := range attempts {
		t.Logf("task %s: %d steps in %d ms", a.Task.ExternalID, a.Steps, a.DurationMS)
		if a.Outcome != models.OutcomeSuccess {
			logWhyNot(t, b, a)
		}
		require.Equal(t, models.OutcomeSuccess, a.Outcome, "task %s: %s %s", a.Task.ExternalID, a.ErrorClass, a.ErrorMessage)
		require.NotEmpty(t, a.HARKey, "task %s", a.Task.ExternalID)
		_, err := b.artifacts.Stat(context.Background(), a.HARKey)
		require.NoError(t, err, "task %s HAR", a.Task.ExternalID)
		var steps []models.Step
		require.NoError(t, b.db.Gorm().Where("attempt_id = ?", a.ID).Order("step_index").Find(&steps).Error)
		require.Len(t, steps, a.Steps, "task %s", a.Task.ExternalID)
		for i, s := range steps {
			t.Logf("  step %d: observe %d ms, agent %d ms, act %d ms: %s", i, s.ObserveMS, s.AgentMS, s.ActMS, s.Action)
			require.Equal(t, i, s.Index)
			_, err := b.artifacts.Stat(context.Background(), s.ScreenshotKey)
			require.NoError(t, err, "task %s step %d screenshot", a.Task.ExternalID, i)
		}
	}
	require.Equal(t, got.TasksTotal, got.Successes)
}

// logWhyNot logs why an attempt did not succeed: its evaluations' details
// and every request its HAR holds, with the status recorded for it (-1 for
// a request still in flight when the browser context closed).
func logWhyNot(t *testing.T, b *runBundle, a models.Attempt) {
	t.Helper()
	var evals []models.Evaluation
	require.NoError(t, b.db.Gorm().Where("attempt_id = ?", a.ID).Find(&evals).Error)
	for _, e := range evals {
		t.Logf("task %s: %s %s: %s", a.Task.ExternalID, e.Evaluator, e.Verdict, e.Details)
	}
	rc, _, err := b.artifacts.Get(context.Background(), a.HARKey)
	require.NoError(t, err)
	defer rc.Close()
	var har struct {
		Log struct {
			Entries []struct {
				Pageref string `json:"pageref"`
				Request struct {
					Method string `json:"method"`
					URL    string `json:"url"`
				} `json:"request"`
				Response struct {
					Status int `json:"status"`
				} `json:"response"`
			} `json:"entries"`
		} `json:"log"`
	}
	require.NoError(t, json.NewDecoder(rc).Decode(&har))
	for _, e := range har.Log.Entries {
		t.Logf("task %s: HAR %s %s %s: %d", a.Task.ExternalID, e.Pageref, e.Request.Method, e.Request.URL, e.Response.Status)
	}
}

// runService is the run service over db, enqueuing on r's queue, as main wires it.
func runService(db *storage.DB, r *runner.Runner) *service.Runs {
	return service.NewRuns(db, r.Jobs(), service.RunOptions{})
}
