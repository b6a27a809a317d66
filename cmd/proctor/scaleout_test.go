package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
)

// TestMain lets the test binary stand in for the proctor binary: with
// PROCTOR_TEST_SUBPROCESS set, it runs the given verb instead of the tests, so
// multi-process tests need no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("PROCTOR_TEST_SUBPROCESS") == "1" {
		ctx, stop := signalContext()
		defer stop()
		p := &Program{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
		os.Exit(p.Run(ctx, strings.Fields(os.Getenv("PROCTOR_TEST_ARGS"))))
	}
	os.Exit(m.Run())
}

func randomName(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// scaleOutEnv is an environment on PostgreSQL (a schema of its own) and the S3
// test server (a bucket of its own).
func scaleOutEnv(t *testing.T) testEnv {
	t.Helper()
	pg := os.Getenv("PROCTOR_TEST_DATABASE_URL")
	s3 := os.Getenv("PROCTOR_TEST_S3_ENDPOINT")
	testenv.SkipUnlessAvailable(t, "postgres", pg != "", "PROCTOR_TEST_DATABASE_URL not set: the scale-out test needs PostgreSQL")
	testenv.SkipUnlessAvailable(t, "s3", s3 != "", "PROCTOR_TEST_S3_ENDPOINT not set: the scale-out test needs an S3 server")
	ctx := context.Background()
	schema := "scale_" + randomName(t)
	conn, err := pgx.Connect(ctx, pg)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	})
	u, err := url.Parse(pg)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	env := newTestEnv(t)
	env["PROCTOR_DATABASE_URL"] = u.String()
	env["PROCTOR_ARTIFACTS_URL"] = "s3://proctor-" + randomName(t) + "/runs"
	env["PROCTOR_S3_ENDPOINT"] = s3
	env["PROCTOR_S3_ACCESS_KEY"] = os.Getenv("PROCTOR_TEST_S3_ACCESS_KEY")
	env["PROCTOR_S3_SECRET_KEY"] = os.Getenv("PROCTOR_TEST_S3_SECRET_KEY")
	env["PROCTOR_S3_USE_SSL"] = "false"
	env["PROCTOR_SECRET_KEY"] = strings.Repeat("scale-out-secret-", 3)
	env["PROCTOR_RESCUE_AFTER"] = "20s"
	env["PROCTOR_LOG_LEVEL"] = "info"
	env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
	return env
}

// startWorker starts `proctor worker` as a child process of the test binary.
func (e testEnv) startWorker(t *testing.T, browsers string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"PROCTOR_TEST_SUBPROCESS=1", "PROCTOR_TEST_ARGS=worker --browsers " + browsers, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d output:\n%s", cmd.Process.Pid, out.String())
		}
	})
	return cmd
}

// TestScaleOut_TwoWorkersOneKilled: on PostgreSQL and S3, two worker processes
// share one sandbox run; one is killed mid-run. The run completes, every
// attempt succeeds, and each attempt's steps are intact and not duplicated.
func TestScaleOut_TwoWorkersOneKilled(t *testing.T) {
	t.Parallel()
	env := scaleOutEnv(t)
	browserOptionsOrSkip(t)
	box := sandbox.New(sandbox.Options{})
	t.Cleanup(func() { box.Close() })
	site := httptest.NewServer(box)
	t.Cleanup(site.Close)

	app := env.openMigrated(t)
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	ds, err := importer.Parse(models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), nil)
	require.NoError(t, err)
	_, err = app.DB.ImportBenchmark(system, sandbox.Slug, ds, "benchmark.jsonl")
	require.NoError(t, err)
	require.NoError(t, app.DB.SetRevealReferences(system, sandbox.Slug, true))
	for name, u := range sandbox.SiteURLs(site.URL) {
		_, err := app.DB.UpdateSite(system, sandbox.Slug, name, u, "", 0)
		require.NoError(t, err)
	}
	user, err := app.DB.CreateUser(ctx, "scale@example.org", "Scale", "correct horse battery", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: user.ID, Email: user.Email})
	_, err = app.DB.CreateTeam(member, "Scale", "scale", "")
	require.NoError(t, err)
	require.NoError(t, app.DB.CreateAgent(member, "scale", &models.Agent{Name: "Replayer", Kind: models.AgentReplay}, nil))

	p := &Program{Getenv: func(k string) string { return env[k] }}
	inserter, err := p.newRunner(app, 0) // this process only queues
	require.NoError(t, err)
	run, err := inserter.QueueRun(member, models.RunRequest{TeamSlug: "scale", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Parallelism: 4, MaxEpisodeSeconds: 30})
	require.NoError(t, err)

	victim := env.startWorker(t, "2")
	env.startWorker(t, "2")

	// Kill one worker once the run is under way (some attempts done or running).
	require.Eventually(t, func() bool {
		var done int64
		require.NoError(t, app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ? AND status = ?", run.ID, models.AttemptDone).Count(&done).Error)
		return done >= 3
	}, 3*time.Minute, 200*time.Millisecond, "the run made no progress")
	require.NoError(t, victim.Process.Kill())

	completed := func() bool {
		status, err := app.DB.RunStatus(system, run.ID)
		require.NoError(t, err)
		return status == models.RunCompleted
	}
	if !assert.Eventually(t, completed, 5*time.Minute, 500*time.Millisecond, "the run did not complete after a worker was killed") {
		var rows []struct {
			ID              int64
			Status, Outcome string
			ErrorClass      string
			Tries           int
		}
		app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Find(&rows)
		t.Logf("attempts: %+v", rows)
		var jobs []struct {
			ID          int64
			Kind, State string
			Attempt     int
			Errors      string
		}
		app.DB.Gorm().Raw("SELECT id, kind, state, attempt, errors::text AS errors FROM river_job ORDER BY id").Scan(&jobs)
		t.Logf("jobs: %+v", jobs)
		t.FailNow()
	}

	var attempts []models.Attempt
	require.NoError(t, app.DB.Gorm().Where("run_id = ?", run.ID).Find(&attempts).Error)
	restarted := 0
	for _, a := range attempts {
		require.Equal(t, models.OutcomeSuccess, a.Outcome, "attempt %d: %s %s", a.ID, a.ErrorClass, a.ErrorMessage)
		if a.Tries > 1 {
			restarted++
		}
		var idx []int
		require.NoError(t, app.DB.Gorm().Model(&models.Step{}).Where("attempt_id = ?", a.ID).Order("step_index").Pluck("step_index", &idx).Error)
		require.Len(t, idx, a.Steps, "attempt %d has exactly its steps", a.ID)
		for i, n := range idx {
			require.Equal(t, i, n, "attempt %d: steps numbered without gaps or duplicates", a.ID)
		}
		if a.HARKey != "" {
			_, err := app.Artifacts.Stat(ctx, a.HARKey)
			require.NoError(t, err)
			require.Contains(t, a.HARKey, "/try-")
		}
	}
	t.Logf("%d attempts, %d restarted after the kill", len(attempts), restarted)
}

// openMigrated opens the environment's database and store, migrating both.
func (e testEnv) openMigrated(t *testing.T) *App {
	t.Helper()
	p := &Program{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return e[k] }}
	app, err := p.openApp(context.Background(), &commonFlags{}, true)
	require.NoError(t, err)
	t.Cleanup(app.Close)
	return app
}
