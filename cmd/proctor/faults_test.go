package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
)

// The fault suite hurts a deployment mid-run the way an unlucky operator's
// is hurt — a process killed with SIGKILL, the S3 server or PostgreSQL
// stopped and started again, the artifact disk full — and checks what
// must hold afterwards: the run completes (attempts the fault broke end as
// platform errors and complete once retried), no step is lost or
// duplicated, every artifact a row points at exists, and housekeeping
// removes what superseded tries left. How long recovery took is logged
// here and reported by `make bench` (BenchmarkRecovery); it is not asserted.

// faultLease is the worker lease in the fault tests, short to keep them
// quick; BenchmarkRecovery measures with the default.
const faultLease = "4s"

// faultRig is a deployment under test: its database and artifact store (from
// env), the sandbox sites served slowly enough that a fault lands mid-episode,
// and a team with a replay agent.
type faultRig struct {
	env            testEnv
	app            *App
	queue          *runner.Runner // insert-only, in the test process
	member, system context.Context
}

// slowSandbox serves the sandbox sites with a delay on every request, so
// that each episode lasts a few seconds.
func slowSandbox(t testing.TB, delay time.Duration) *httptest.Server {
	box := sandbox.New(sandbox.Options{})
	t.Cleanup(func() { box.Close() })
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		box.ServeHTTP(w, r)
	}))
	t.Cleanup(site.Close)
	return site
}

// newFaultRig migrates env's database and store and sets up the sandbox
// benchmark, its sites, a team and its replay agent.
func newFaultRig(t testing.TB, env testEnv) *faultRig {
	t.Helper()
	site := slowSandbox(t, 80*time.Millisecond)
	app := env.openMigrated(t)
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(withFaultSubset(t, sandbox.Benchmark())), nil)
	require.NoError(t, err)
	_, err = app.DB.ImportBenchmark(system, sandbox.Slug, ds, "benchmark.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, app.DB.SetRevealReferences(system, sandbox.Slug, true))
	for name, u := range sandbox.SiteURLs(site.URL) {
		_, err := app.DB.UpdateSite(system, sandbox.Slug, name, u, "", 0)
		require.NoError(t, err)
	}
	user, err := app.DB.CreateUser(ctx, "faults@example.org", "Faults", "correct horse battery", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: user.ID, Email: user.Email})
	_, err = servicetest.Teams(app.DB).CreateTeam(member, "Faults", "faults", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(app.DB, member, "faults", &models.Agent{Name: "Replayer", Kind: models.AgentReplay}, nil))
	p := &Program{Getenv: func(k string) string { return env[k] }}
	q, err := p.newRunner(app, 0, "")
	require.NoError(t, err)
	return &faultRig{env: env, app: app, queue: q, member: member, system: system}
}

// faultSubset is four sandbox tasks of four steps each, one per site and a
// second on the shop: runs long enough to be hurt mid-episode, short enough
// for the suite to be quick.
const faultSubset = "faults"

// withFaultSubset adds faultSubset to the sandbox benchmark's header line.
func withFaultSubset(t testing.TB, bench []byte) []byte {
	t.Helper()
	header, rest, ok := bytes.Cut(bench, []byte("\n"))
	require.True(t, ok)
	var h map[string]any
	require.NoError(t, json.Unmarshal(header, &h))
	h["subsets"].(map[string]any)[faultSubset] = map[string]any{
		"task_ids": []string{"shop-keyboard-price", "shop-admin-price", "forum-comment", "data-max-pm25"},
	}
	header, err := json.Marshal(h)
	require.NoError(t, err)
	return append(append(header, '\n'), rest...)
}

// queueRun queues a run of a subset of the sandbox benchmark.
func (r *faultRig) queueRun(t testing.TB, subset string, parallelism int) int64 {
	t.Helper()
	run, err := r.app.runService(r.queue).QueueRun(r.member, models.RunRequest{TeamSlug: "faults", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug,
		Subset: subset, Parallelism: parallelism, MaxEpisodeSeconds: 60})
	require.NoError(t, err)
	return run.ID
}

// proctorProcess is `proctor serve` or `proctor worker` run as a child of
// the test binary.
type proctorProcess struct {
	cmd *exec.Cmd
	out *syncBuffer
}

// start runs a proctor verb in a child process; it is stopped (SIGTERM)
// when the test ends, and its output logged if the test failed.
func (e testEnv) start(t testing.TB, args string) *proctorProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"PROCTOR_TEST_SUBPROCESS=1", "PROCTOR_TEST_ARGS=" + args, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &proctorProcess{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("proctor %s (pid %d) output:\n%s", args, cmd.Process.Pid, out.String())
		}
	})
	return p
}

// kill9 kills the process with SIGKILL and waits for it to be gone.
func (p *proctorProcess) kill9(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	_ = p.cmd.Wait()
}

// attemptState is an attempt's status and try.
type attemptState struct {
	ID     int64
	Status string
	Tries  int
}

func (r *faultRig) attempts(t testing.TB, runID int64) []attemptState {
	t.Helper()
	var out []attemptState
	require.NoError(t, r.app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", runID).Order("id").
		Select("id, status, tries").Scan(&out).Error)
	return out
}

// waitInFlight waits until an episode of the run is under way (running,
// with a step recorded) and returns the running attempts with their tries.
func (r *faultRig) waitInFlight(t testing.TB, runID int64) map[int64]int {
	t.Helper()
	var held map[int64]int
	require.Eventually(t, func() bool {
		held = map[int64]int{}
		var withSteps int64
		require.NoError(t, r.app.DB.Gorm().Model(&models.Step{}).
			Where("attempt_id IN (SELECT id FROM attempts WHERE run_id = ? AND status = ?)", runID, models.AttemptRunning).
			Count(&withSteps).Error)
		for _, a := range r.attempts(t, runID) {
			if a.Status == models.AttemptRunning {
				held[a.ID] = a.Tries
			}
		}
		return withSteps > 0 && len(held) > 0
	}, 3*time.Minute, 100*time.Millisecond, "no episode of the run got under way")
	return held
}

// waitStepAfter waits until a step of the run is recorded after since (the
// run works again after an outage) and returns how long that took.
func (r *faultRig) waitStepAfter(t testing.TB, runID int64, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	within = testenv.Scaled(t, within)
	require.Eventually(t, func() bool {
		var n int64
		err := r.app.DB.Gorm().Model(&models.Step{}).
			Where("created_at > ? AND attempt_id IN (SELECT id FROM attempts WHERE run_id = ?)", since.UTC(), runID).Count(&n).Error
		return err == nil && n > 0
	}, within, 100*time.Millisecond, "no step was recorded after the outage")
	return time.Since(since)
}

// holding counts the run's attempts a process runs (its lease names its pid).
func (r *faultRig) holding(t testing.TB, runID int64, p *proctorProcess) int64 {
	t.Helper()
	var n int64
	require.NoError(t, r.app.DB.Gorm().Model(&models.Attempt{}).
		Where("run_id = ? AND status = ? AND worker_id LIKE ?", runID, models.AttemptRunning, fmt.Sprintf("%%-%d-%%", p.cmd.Process.Pid)).
		Count(&n).Error)
	return n
}

// waitHolding waits until the process runs an episode of the run and
// returns how many it runs.
func (r *faultRig) waitHolding(t testing.TB, runID int64, p *proctorProcess) int64 {
	t.Helper()
	var n int64
	require.Eventually(t, func() bool { n = r.holding(t, runID, p); return n > 0 }, 3*time.Minute, 50*time.Millisecond,
		"the process never ran an episode of the run")
	return n
}

// waitReleased waits until the attempts a killed process held are released
// and returns how long that took from since.
func (r *faultRig) waitReleased(t testing.TB, runID int64, p *proctorProcess, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	within = testenv.Scaled(t, within)
	require.Eventually(t, func() bool { return r.holding(t, runID, p) == 0 }, within, 50*time.Millisecond,
		"the killed process's attempts were not released")
	return time.Since(since)
}

// waitContinued waits until the run goes on after a fault at since: a try
// starts after it (the dead process's claims no longer hold the run's
// parallelism slots), and returns how long that took.
func (r *faultRig) waitContinued(t testing.TB, runID int64, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	within = testenv.Scaled(t, within)
	require.Eventually(t, func() bool {
		var n int64
		require.NoError(t, r.app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ? AND started_at > ?", runID, since.UTC()).Count(&n).Error)
		return n > 0
	}, within, 100*time.Millisecond, "the run did not go on after the fault")
	return time.Since(since)
}

// waitFinished waits until the run is no longer queued or running.
func (r *faultRig) waitFinished(t testing.TB, runID int64, within time.Duration) models.Run {
	t.Helper()
	within = testenv.Scaled(t, within)
	var run models.Run
	ok := assert.Eventually(t, func() bool {
		require.NoError(t, r.app.DB.Gorm().First(&run, runID).Error)
		return run.Finished()
	}, within, 200*time.Millisecond, "the run did not finish")
	if !ok {
		t.Logf("attempts: %+v", r.attempts(t, runID))
		var jobs []struct {
			ID          int64
			Kind, State string
			Attempt     int
		}
		r.app.DB.Gorm().Raw("SELECT id, kind, state, attempt FROM river_job ORDER BY id").Scan(&jobs)
		t.Logf("jobs: %+v", jobs)
		t.FailNow()
	}
	return run
}

// checkIntegrity asserts what must hold of a finished run after any fault:
// every attempt is done, its steps are numbered 0…n-1 with neither gap nor
// duplicate, every artifact a row points at exists under the attempt's
// current try, and once housekeeping has run no earlier try left anything.
// It returns how many attempts ended in a platform error.
func (r *faultRig) checkIntegrity(t testing.TB, runID int64) (platformErrors int) {
	t.Helper()
	ctx := context.Background()
	var attempts []models.Attempt
	require.NoError(t, r.app.DB.Gorm().Where("run_id = ?", runID).Order("id").Find(&attempts).Error)
	require.NotEmpty(t, attempts)
	exists := func(key, what string, a models.Attempt) {
		if key == "" {
			return
		}
		_, err := r.app.Artifacts.Stat(ctx, key)
		require.NoError(t, err, "attempt %d: %s %s", a.ID, what, key)
		require.True(t, strings.HasPrefix(key, storage.TryPrefix(runID, a.ID, a.Tries)+"/"), "attempt %d: %s %s belongs to its current try %d", a.ID, what, key, a.Tries)
	}
	for _, a := range attempts {
		require.Equal(t, models.AttemptDone, a.Status, "attempt %d", a.ID)
		if a.ErrorClass == models.ErrorClassPlatform {
			platformErrors++
		}
		var steps []models.Step
		require.NoError(t, r.app.DB.Gorm().Where("attempt_id = ?", a.ID).Order("step_index").Find(&steps).Error)
		require.Len(t, steps, a.Steps, "attempt %d has exactly the steps it counts", a.ID)
		for i, s := range steps {
			require.Equal(t, i, s.Index, "attempt %d: steps numbered without gaps or duplicates", a.ID)
			exists(s.ScreenshotKey, "screenshot", a)
			exists(s.ThumbnailKey, "thumbnail", a)
			exists(s.AXTreeKey, "page text", a)
		}
		exists(a.HARKey, "HAR", a)
		exists(a.PageStateKey, "page state", a)
	}
	removed, err := r.queue.RemoveSupersededTries(models.WithActor(ctx, models.SystemActor()), time.Now().UTC().Add(time.Second))
	require.NoError(t, err)
	for _, a := range attempts {
		stored, err := r.app.Artifacts.List(ctx, fmt.Sprintf("runs/%d/attempts/%d/", runID, a.ID))
		require.NoError(t, err)
		for _, s := range stored {
			require.True(t, strings.HasPrefix(s.Key, storage.TryPrefix(runID, a.ID, a.Tries)+"/"),
				"attempt %d: %s of a superseded try is left after housekeeping (%d tries removed)", a.ID, s.Key, removed)
		}
	}
	return platformErrors
}

// retryErrors retries the run's errored attempts, as a team would from the
// run's page.
func (r *faultRig) retryErrors(t testing.TB, runID int64) int {
	t.Helper()
	n, err := r.app.runService(r.queue).RetryAttempts(r.member, runID)
	require.NoError(t, err)
	return n
}

// embeddedEnv is the embedded default: SQLite and a local artifact folder.
func embeddedEnv(t testing.TB) testEnv {
	browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PROCTOR_SECRET_KEY"] = strings.Repeat("fault-secret-", 3)
	env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
	env["PROCTOR_LOG_LEVEL"] = "info"
	return env
}

// faultEnvs are the deployments the suite hurts: the embedded default
// (SQLite, local folder) and the scale-out one (PostgreSQL, S3).
func faultEnvs() map[string]func(t *testing.T) testEnv {
	return map[string]func(t *testing.T) testEnv{
		"sqlite": func(t *testing.T) testEnv { return embeddedEnv(t) },
		"postgres+s3": func(t *testing.T) testEnv {
			browserOptionsOrSkip(t)
			return scaleOutEnv(t)
		},
	}
}

// recovery is how a deployment came back from a killed or frozen process.
type recovery struct {
	held      int64         // attempts the process ran when it went
	released  time.Duration // until its claims were released
	continued time.Duration // until a try started after it went
}

// killServe runs the run on `proctor serve` (with its in-process worker),
// kills it with SIGKILL mid-episode and starts it again at once.
func (r *faultRig) killServe(t testing.TB, runID int64) recovery {
	t.Helper()
	serve := r.env.start(t, "serve")
	r.waitInFlight(t, runID)
	held := r.holding(t, runID, serve)
	serve.kill9(t)
	killed := time.Now()
	r.env.start(t, "serve")
	return recovery{held: held, released: r.waitReleased(t, runID, serve, killed, 3*time.Minute),
		continued: r.waitContinued(t, runID, killed, 3*time.Minute)}
}

// stopWorker runs the run on two `proctor worker` processes and, while one
// runs an episode, kills it with SIGKILL or, with freeze, stops it (SIGSTOP:
// its process lives on, as a worker cut off on another machine would look)
// and wakes it (SIGCONT) once its claims were released.
func (r *faultRig) stopWorker(t testing.TB, runID int64, freeze bool) recovery {
	t.Helper()
	victim := r.env.start(t, "worker --browsers 2")
	r.env.start(t, "worker --browsers 2")
	held := r.waitHolding(t, runID, victim)
	if freeze {
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGSTOP))
	} else {
		victim.kill9(t) // and reaped, as its parent (a shell, systemd) would
	}
	gone := time.Now()
	rec := recovery{held: held, released: r.waitReleased(t, runID, victim, gone, 3*time.Minute),
		continued: r.waitContinued(t, runID, gone, 3*time.Minute)}
	if freeze {
		require.NoError(t, victim.cmd.Process.Signal(syscall.SIGCONT))
	}
	return rec
}

// processFault is a process fault of the suite, played on some of the
// deployments of faultEnvs.
type processFault struct {
	envs        []string          // names in faultEnvs
	env         map[string]string // added to each deployment's environment
	parallelism int
	hurt        func(r *faultRig, t testing.TB, runID int64) recovery
	what        string // how the log line names the fault
}

// play runs the fault on each of its deployments, in parallel: it hurts a
// run mid-episode, logs the recovery, and checks the run completes intact
// with no attempt in a platform error. check adds the fault's own checks.
func (f processFault) play(t *testing.T, check func(t *testing.T, rec recovery)) {
	envs := faultEnvs()
	for _, name := range f.envs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := envs[name](t)
			maps.Copy(env, f.env)
			rig := newFaultRig(t, env)
			runID := rig.queueRun(t, faultSubset, f.parallelism)
			rec := f.hurt(rig, t, runID)
			t.Logf("%s with %d episodes running: its claims released %.1f s and the run went on %.1f s after", f.what, rec.held, rec.released.Seconds(), rec.continued.Seconds())
			if check != nil {
				check(t, rec)
			}
			rig.waitFinished(t, runID, 4*time.Minute)
			require.Zero(t, rig.checkIntegrity(t, runID), "no attempt ends in a platform error")
		})
	}
}

// TestFault_ServeKilled: `proctor serve`, with its in-process worker, is
// killed with SIGKILL mid-episode and started again. The restarted process
// finds its predecessor dead on the same host and releases its claims at
// once: the run goes on without waiting for any lease or timeout.
func TestFault_ServeKilled(t *testing.T) {
	t.Parallel()
	processFault{envs: []string{"sqlite", "postgres+s3"}, env: map[string]string{"PROCTOR_EPISODES": "2"}, parallelism: 2,
		hurt: (*faultRig).killServe, what: "serve killed and started again at once"}.play(t, nil)
}

// TestFault_WorkerKilled: one of two `proctor worker` processes is killed
// with SIGKILL mid-episode and not restarted; the other, on the same host,
// finds its process gone and takes its episodes over at once.
func TestFault_WorkerKilled(t *testing.T) {
	t.Parallel()
	processFault{envs: []string{"sqlite", "postgres+s3"}, env: map[string]string{"PROCTOR_WORKER_LEASE": faultLease}, parallelism: 4,
		hurt: func(r *faultRig, t testing.TB, runID int64) recovery { return r.stopWorker(t, runID, false) },
		what: "a worker killed"}.play(t, nil)
}

// TestFault_WorkerFrozen: one of two workers stops answering mid-episode,
// on PostgreSQL (the scale-out database: SQLite serves one machine, where a
// frozen process holding its write lock stops every other). Once its lease
// lapses the other takes its episodes over (PostgreSQL ends the frozen
// process's open transaction, and its locks, first); when it wakes up, its
// superseded tries write nothing more and end, and the run completes
// without a step lost or duplicated.
func TestFault_WorkerFrozen(t *testing.T) {
	t.Parallel()
	processFault{envs: []string{"postgres+s3"}, env: map[string]string{"PROCTOR_WORKER_LEASE": faultLease}, parallelism: 4,
		hurt: func(r *faultRig, t testing.TB, runID int64) recovery { return r.stopWorker(t, runID, true) },
		what: "a worker frozen (lease " + faultLease + ")"}.play(t, func(t *testing.T, rec recovery) {
		require.GreaterOrEqual(t, rec.released, 3*time.Second, "a live process's lease holds until it lapses")
	})
}

// BenchmarkRecovery reports how long deployments take to come back from
// each process fault with the default lease (45 s): serve killed and
// started again on the embedded default, a worker killed and a worker frozen
// on the scale-out deployment (PostgreSQL, S3, two workers). Each is given
// in seconds and as a multiple of the median episode of the same run (the
// baseline: what an interrupted episode costs anyway). It runs each fault
// once whatever -benchtime says; scripts/bench.sh runs it with -benchtime 1x.
func BenchmarkRecovery(b *testing.B) {
	faults := []struct {
		name string
		env  func(b *testing.B) testEnv
		run  func(r *faultRig, b *testing.B, runID int64) recovery
	}{
		{"serve-killed-and-restarted", func(b *testing.B) testEnv { return embeddedEnv(b) },
			func(r *faultRig, b *testing.B, runID int64) recovery { return r.killServe(b, runID) }},
		{"worker-killed", func(b *testing.B) testEnv { browserOptionsOrSkip(b); return scaleOutEnv(b) },
			func(r *faultRig, b *testing.B, runID int64) recovery { return r.stopWorker(b, runID, false) }},
		{"worker-frozen", func(b *testing.B) testEnv { browserOptionsOrSkip(b); return scaleOutEnv(b) },
			func(r *faultRig, b *testing.B, runID int64) recovery { return r.stopWorker(b, runID, true) }},
	}
	for _, f := range faults {
		b.Run(f.name, func(b *testing.B) {
			rig := newFaultRig(b, f.env(b))
			runID := rig.queueRun(b, faultSubset, 4)
			rec := f.run(rig, b, runID)
			rig.waitFinished(b, runID, 10*time.Minute)
			rig.checkIntegrity(b, runID)
			episode := rig.medianEpisode(b, runID)
			b.ReportMetric(rec.released.Seconds(), "released-s")
			b.ReportMetric(rec.continued.Seconds(), "continued-s")
			b.ReportMetric(episode.Seconds(), "episode-s")
			b.ReportMetric(rec.continued.Seconds()/episode.Seconds(), "continued-x-episode")
			b.ReportMetric(rec.continued.Seconds()/runner.DefaultLeaseTTL.Seconds(), "continued-x-lease")
		})
	}
}

// medianEpisode is the median duration of the run's episodes.
func (r *faultRig) medianEpisode(t testing.TB, runID int64) time.Duration {
	t.Helper()
	var ms []int64
	require.NoError(t, r.app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ? AND duration_ms > 0", runID).
		Order("duration_ms").Pluck("duration_ms", &ms).Error)
	require.NotEmpty(t, ms)
	return time.Duration(ms[len(ms)/2]) * time.Millisecond
}

// versitygwBinary is the S3 server `make deps` installs.
func versitygwBinary(t testing.TB) string {
	t.Helper()
	bin, err := filepath.Abs("../../.cache/bin/versitygw")
	require.NoError(t, err)
	_, err = os.Stat(bin)
	testenv.SkipUnlessAvailable(t, "s3", err == nil, "versitygw is not installed (make deps)")
	return bin
}

// s3Server is a versitygw process of the test's own, which it may stop and
// start again on the same port and data.
type s3Server struct {
	bin, dir, addr string
	cmd            *exec.Cmd
}

const faultS3Key, faultS3Secret = "faultaccess", "faultsecretkey"

func startS3(t testing.TB) *s3Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	s := &s3Server{bin: versitygwBinary(t), dir: t.TempDir(), addr: addr}
	require.NoError(t, os.MkdirAll(filepath.Join(s.dir, "data"), 0o755))
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *s3Server) start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(s.bin, "--access", faultS3Key, "--secret", faultS3Secret, "--port", s.addr, "--quiet", "posix", filepath.Join(s.dir, "data"))
	require.NoError(t, s.cmd.Start())
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "versitygw did not start")
}

func (s *s3Server) stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// TestFault_S3StoppedAndRestarted: the S3 server stops mid-run for a few
// seconds. Steps whose screenshots cannot be stored end their episodes as
// platform errors, with nothing recorded that points at a missing object;
// once S3 is back, retrying them completes the run.
func TestFault_S3StoppedAndRestarted(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	s3 := startS3(t)
	env := scaleOutEnv(t)
	env["PROCTOR_S3_ENDPOINT"] = s3.addr
	env["PROCTOR_S3_ACCESS_KEY"], env["PROCTOR_S3_SECRET_KEY"] = faultS3Key, faultS3Secret
	rig := newFaultRig(t, env)
	runID := rig.queueRun(t, faultSubset, 2)
	env.start(t, "worker --browsers 2")
	rig.waitInFlight(t, runID)
	s3.stop(t)
	stopped := time.Now()
	time.Sleep(5 * time.Second)
	s3.start(t)
	back := time.Now()
	working := rig.waitStepAfter(t, runID, back, 2*time.Minute)
	run := rig.waitFinished(t, runID, 4*time.Minute)
	t.Logf("S3 stopped for %.1f s: steps were recorded again %.1f s after it was back; %d attempts ended in errors and were retried",
		back.Sub(stopped).Seconds(), working.Seconds(), run.Errors)
	if run.Errors > 0 {
		require.Equal(t, run.Errors, rig.retryErrors(t, runID))
		rig.waitFinished(t, runID, 4*time.Minute)
	}
	require.Zero(t, rig.checkIntegrity(t, runID), "after the retry no attempt is left in a platform error")
}

// privatePostgres is a PostgreSQL server of the test's own (scripts/postgres.sh),
// which it may stop and start again on the same port.
type privatePostgres struct{ script, dir string }

func startPostgres(t testing.TB) (*privatePostgres, string) {
	t.Helper()
	testenv.SkipUnlessAvailable(t, "postgres", os.Getenv("PROCTOR_TEST_DATABASE_URL") != "", "PROCTOR_TEST_DATABASE_URL not set: the test needs PostgreSQL installed")
	script, err := filepath.Abs("../../scripts/postgres.sh")
	require.NoError(t, err)
	// The server's user must reach the folder, and its socket path be short.
	dir, err := os.MkdirTemp("", "pgfault")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	pg := &privatePostgres{script: script, dir: dir}
	t.Cleanup(func() {
		_ = exec.Command(script, "stop", dir).Run()
		_ = os.RemoveAll(dir)
	})
	out := pg.run(t, "start")
	_, url, ok := strings.Cut(strings.TrimSpace(out), "PROCTOR_TEST_DATABASE_URL=")
	require.True(t, ok, "postgres.sh start printed %q", out)
	return pg, strings.Trim(url, "'")
}

func (pg *privatePostgres) run(t testing.TB, verb string) string {
	t.Helper()
	cmd := exec.Command(pg.script, verb, pg.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "postgres.sh %s: %s", verb, stderr.String())
	return string(out)
}

// TestFault_PostgresRestarted: PostgreSQL stops mid-run for a few seconds
// and starts again. Whatever the outage broke — a step or an outcome that
// could not be written, a job whose end River could not record — is
// handed back by the worker that lost track of it, and the run completes.
func TestFault_PostgresRestarted(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	pg, url := startPostgres(t)
	env := scaleOutEnv(t)
	env["PROCTOR_DATABASE_URL"] = url
	env["PROCTOR_WORKER_LEASE"] = faultLease
	rig := newFaultRig(t, env)
	runID := rig.queueRun(t, faultSubset, 2)
	env.start(t, "worker --browsers 2")
	rig.waitInFlight(t, runID)
	pg.run(t, "stop")
	stopped := time.Now()
	time.Sleep(5 * time.Second)
	pg.run(t, "start")
	back := time.Now()
	working := rig.waitStepAfter(t, runID, back, 2*time.Minute)
	run := rig.waitFinished(t, runID, 4*time.Minute)
	t.Logf("PostgreSQL stopped for %.1f s: steps were recorded again %.1f s after it was back; %d attempts ended in errors and were retried",
		back.Sub(stopped).Seconds(), working.Seconds(), run.Errors)
	if run.Errors > 0 {
		require.Equal(t, run.Errors, rig.retryErrors(t, runID))
		rig.waitFinished(t, runID, 4*time.Minute)
	}
	require.Zero(t, rig.checkIntegrity(t, runID), "after the retry no attempt is left in a platform error")
}

// TestFault_ArtifactDiskFull: the local artifact folder is a small tmpfs
// that fills up mid-run. Episodes that cannot store a screenshot end as
// platform errors and the database points at no missing file; once the
// disk is grown, retrying them completes the run.
func TestFault_ArtifactDiskFull(t *testing.T) {
	t.Parallel()
	env := embeddedEnv(t)
	disk := t.TempDir()
	err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk).Run()
	testenv.SkipUnlessAvailable(t, "tmpfs", err == nil, "cannot mount a tmpfs (needs root): the disk-full test needs a small file system")
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	env["PROCTOR_ARTIFACTS_URL"] = "file://" + disk
	env["PROCTOR_ARTIFACTS_MIN_FREE"] = "0"
	rig := newFaultRig(t, env)
	runID := rig.queueRun(t, "hard", 2)
	env.start(t, "serve")
	run := rig.waitFinished(t, runID, 4*time.Minute)
	require.Positive(t, run.Errors, "a 2 MiB disk fills up during the run")
	_, err = rig.app.Artifacts.Stat(context.Background(), "no/such/key")
	require.ErrorIs(t, err, artifact.ErrNotFound)
	require.Positive(t, rig.checkIntegrity(t, runID), "the full disk's failures are platform errors")
	t.Logf("a 2 MiB artifact disk filled up: %d of %d attempts ended in platform errors and were retried on a larger disk", run.Errors, run.TasksTotal)

	require.NoError(t, exec.Command("mount", "-o", "remount,size=256m", disk).Run())
	require.Equal(t, run.Errors, rig.retryErrors(t, runID))
	rig.waitFinished(t, runID, 4*time.Minute)
	require.Zero(t, rig.checkIntegrity(t, runID), "after the retry no attempt is left in a platform error")
}
