package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/migrations"
	"proctor/models"
	"proctor/runner"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// Subsets of the sandbox benchmark the faulty-agent tests run on.
const (
	subsetOne = "faulty-one" // shop-keyboard-price
	subsetTwo = "faulty-two" // shop-keyboard-price and forum-top-post
)

// faultyBundle is a runBundle whose episodes run on a worker runner with the
// test's own options, with agents on loopback allowed by the SSRF guard and
// small subsets of the sandbox benchmark.
type faultyBundle struct {
	*runBundle
	worker *runner.Runner
	logs   *syncBuffer // the worker's log
}

// setupFaulty prepares the database with setupRun (whose runner only inserts
// jobs), allows agents on 127.0.0.1, re-imports the sandbox benchmark with the
// faulty-one and faulty-two subsets, and starts a worker runner with opts.
func setupFaulty(t *testing.T, db *storage.DB, opts runner.Options) *faultyBundle {
	t.Helper()
	b := setupRun(t, db, 0)

	// The same key as setupRun's vault, so secrets sealed there still open.
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(v)

	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(sandbox.Benchmark()), []importer.SubsetFile{
		{Name: subsetOne, R: strings.NewReader(`{"description": "one shop task", "task_ids": ["shop-keyboard-price"]}`)},
		{Name: subsetTwo, R: strings.NewReader(`{"description": "a shop and a forum task", "task_ids": ["shop-keyboard-price", "forum-top-post"]}`)},
	})
	require.NoError(t, err)
	res, err := db.ImportBenchmark(b.system, sandbox.Slug, ds, "benchmark.jsonl", 0)
	require.NoError(t, err)
	require.True(t, res.Created, "the subsets make a new benchmark version")

	if opts.CancelPoll == 0 {
		opts.CancelPoll = 200 * time.Millisecond
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
		DB: db, Artifacts: b.artifacts, Browser: browserOptions(t),
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Options:     opts,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(stopCtx))
	})
	return &faultyBundle{runBundle: b, worker: r, logs: logs}
}

// syncBuffer collects the worker's log, shown when a test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// scriptedAgent is an http agent served by httptest: reply decides each answer.
type scriptedAgent struct {
	slug     string
	calls    atomic.Int64
	inFlight atomic.Int64

	mu         sync.Mutex
	lastErrors []string // the last_action_error of each step the agent was asked
}

// seen returns the last_action_error of every step the agent was asked.
func (a *scriptedAgent) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lastErrors...)
}

// addAgent serves reply on a loopback test server and registers it as an http
// agent of the team "lab" named name.
func (f *faultyBundle) addAgent(t *testing.T, name string, reply func(w http.ResponseWriter, r *http.Request, req *models.StepRequest)) *scriptedAgent {
	t.Helper()
	return f.addAgentWithSecrets(t, name, nil, reply)
}

// addAgentWithSecrets is addAgent for an agent with secrets (such as its
// bearer token).
func (f *faultyBundle) addAgentWithSecrets(t *testing.T, name string, secrets map[string]string, reply func(w http.ResponseWriter, r *http.Request, req *models.StepRequest)) *scriptedAgent {
	t.Helper()
	a := &scriptedAgent{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		a.inFlight.Add(1)
		defer a.inFlight.Add(-1)
		var req models.StepRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Protocol != models.AgentProtocol {
			http.Error(w, fmt.Sprintf("bad step request (%v, protocol %q)", err, req.Protocol), http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.lastErrors = append(a.lastErrors, req.Observation.LastActionError)
		a.mu.Unlock()
		reply(w, r, &req)
	}))
	t.Cleanup(srv.Close)
	ag := &models.Agent{Name: name, Kind: models.AgentHTTP, EndpointURL: srv.URL + "/step", Config: `{"screenshot": false}`}
	require.NoError(t, servicetest.CreateAgent(f.db, f.member, "lab", ag, secrets))
	a.slug = ag.Slug
	return a
}

// answerJSON writes a step response with the given action.
func answerJSON(w http.ResponseWriter, action string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"action": `+action+`}`)
}

// sleepFor waits d or until the request is abandoned by the client.
func sleepFor(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// queue queues a run of agent on subset with the given budgets.
func (f *faultyBundle) queue(t *testing.T, a *scriptedAgent, subset string, maxSteps, maxCallSeconds int) int64 {
	t.Helper()
	run, err := runService(f.db, f.worker).QueueRun(f.member, models.RunRequest{
		TeamSlug: "lab", AgentSlug: a.slug, BenchmarkSlug: sandbox.Slug, Subset: subset,
		MaxSteps: maxSteps, MaxEpisodeSeconds: 60, MaxAgentCallSeconds: maxCallSeconds, Parallelism: 2,
		Notes: "faulty agent " + a.slug,
	})
	require.NoError(t, err)
	return run.ID
}

// finished is a run that ended, as its team member sees it.
type finished struct {
	run       models.Run
	page      *models.RunPage
	timelines map[string]*models.Timeline // by task external id
}

// attempt returns the timeline of the run's attempt on task.
func (o *finished) attempt(t *testing.T, task string) *models.Timeline {
	t.Helper()
	tl, ok := o.timelines[task]
	require.True(t, ok, "run %d has no attempt on %s", o.run.ID, task)
	return tl
}

// only returns the timeline of the run's single attempt.
func (o *finished) only(t *testing.T) *models.Timeline {
	t.Helper()
	require.Len(t, o.timelines, 1)
	for _, tl := range o.timelines {
		return tl
	}
	return nil
}

// finish waits for the run to end and checks what every run must satisfy
// however its agent behaved: it reached a final status, every attempt is done
// with its outcome and error class visible to the team, the run's counters
// match its attempts, and every attempt's steps are intact (indices 0..n-1,
// as many rows as the attempt counts; a canceled attempt may have one more).
func (f *faultyBundle) finish(t *testing.T, runID int64, limit time.Duration) *finished {
	t.Helper()
	run := f.waitRun(t, runID, limit)
	require.Contains(t, []string{models.RunCompleted, models.RunCanceled}, run.Status)
	require.NotNil(t, run.FinishedAt)
	// The last evaluation and the run's completion share a transaction, so the
	// totals are final once the status is.
	page, err := f.db.RunPage(f.member, models.RunScopeFor(models.ActorFrom(f.member)), runID, 1, 50)
	require.NoError(t, err)
	require.Equal(t, run.Status, page.Progress.Run.Status)
	require.Equal(t, run.TasksTotal, page.AttemptsTotal)
	require.Equal(t, run.TasksTotal, page.Progress.Done, "every attempt is done")
	require.Equal(t, run.TasksTotal, run.TasksDone)
	require.Equal(t, run.TasksTotal, run.Successes+run.Failures+run.Errors)
	errorsBy := 0
	for _, n := range page.Progress.ErrorsBy {
		errorsBy += n
	}
	require.Equal(t, run.Errors, errorsBy, "errors by class %v", page.Progress.ErrorsBy)

	out := &finished{run: run, page: page, timelines: map[string]*models.Timeline{}}
	steps := 0
	for _, a := range page.Attempts {
		require.Equal(t, models.AttemptDone, a.Status, "attempt %d", a.ID)
		require.NotEmpty(t, a.Outcome, "attempt %d", a.ID)
		if a.Outcome == models.OutcomeError {
			require.NotEmpty(t, a.ErrorClass, "attempt %d ended in error without a class", a.ID)
			require.NotEmpty(t, a.ErrorMessage, "attempt %d ended in error without a message", a.ID)
		}
		tl, err := servicetest.Runs(f.db, 0).AttemptTimeline(f.member, a.ID)
		require.NoError(t, err)
		for i, s := range tl.Steps {
			require.Equal(t, i, s.Step.Index, "attempt %d: step indices are not consecutive", a.ID)
		}
		var rows int64
		require.NoError(t, f.db.Gorm().Model(&models.Step{}).Where("attempt_id = ?", a.ID).Count(&rows).Error)
		require.EqualValues(t, len(tl.Steps), rows, "attempt %d", a.ID)
		if a.ErrorClass == models.ErrorClassCanceled {
			// CancelRun counts the steps saved so far; the episode may save the
			// step in flight in the moment before it notices the cancellation.
			require.LessOrEqual(t, a.Steps, len(tl.Steps), "attempt %d", a.ID)
		} else {
			require.Equal(t, a.Steps, len(tl.Steps), "attempt %d: step rows and the attempt's count differ", a.ID)
		}
		steps += a.Steps
		t.Logf("run %d, task %s: %s/%s after %d steps in %d ms (try %d): %s", runID, a.TaskExternalID, a.Outcome, a.ErrorClass, a.Steps, a.DurationMS, a.Tries, a.ErrorMessage)
		out.timelines[a.TaskExternalID] = tl
	}
	if run.Status == models.RunCompleted {
		require.Equal(t, steps, run.StepsSum)
	}
	return out
}

// requireError checks that tl ended in an error of class with a message holding
// every part.
func requireError(t *testing.T, tl *models.Timeline, class string, parts ...string) {
	t.Helper()
	a := tl.Attempt
	require.Equal(t, models.OutcomeError, a.Outcome, "attempt %d: %s %s", a.ID, a.ErrorClass, a.ErrorMessage)
	require.Equal(t, class, a.ErrorClass, "attempt %d: %s", a.ID, a.ErrorMessage)
	for _, p := range parts {
		require.Contains(t, a.ErrorMessage, p)
	}
}

// TestFaulty_Agents runs one sandbox task in Chromium with HTTP agents that
// misbehave in every way the issue names. Each run finishes, and each attempt
// ends as a classified error with a clear message (or, for recoverable
// mistakes, with the mistake shown on the next step) and intact steps.
func TestFaulty_Agents(t *testing.T) {
	t.Parallel()
	f := setupFaulty(t, storagetest.OpenSQLite(t), runner.Options{Episodes: 3})
	const runLimit = 2 * time.Minute

	// agentError runs an agent that fails at its first step and checks the
	// attempt's class and message.
	agentError := func(name string, maxCallSeconds int, reply func(w http.ResponseWriter, r *http.Request, req *models.StepRequest), parts ...string) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := f.addAgent(t, name, reply)
			start := time.Now()
			out := f.finish(t, f.queue(t, a, subsetOne, 10, maxCallSeconds), runLimit)
			t.Logf("%s: run finished in %s", name, time.Since(start).Round(time.Millisecond))
			require.Equal(t, models.RunCompleted, out.run.Status)
			require.Equal(t, 1, out.run.Errors)
			require.Equal(t, map[string]int{models.ErrorClassAgent: 1}, out.page.Progress.ErrorsBy)
			tl := out.only(t)
			requireError(t, tl, models.ErrorClassAgent, parts...)
			require.Len(t, tl.Steps, 1, "the step whose answer failed is kept")
			require.Nil(t, tl.Steps[0].Action, "the failed answer has no action")
			require.EqualValues(t, 1, a.calls.Load(), "a failed answer is not asked again")
		})
	}

	agentError("timeout", 1, func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
		sleepFor(r, 10*time.Second)
		answerJSON(w, `{"type": "stop"}`)
	}, "within 1s", "timeout")

	agentError("http-500", 10, func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		http.Error(w, "model server exploded", http.StatusInternalServerError)
	}, "HTTP 500 Internal Server Error", "model server exploded")

	agentError("garbage", 10, func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>I am not JSON</body></html>")
	}, "malformed", "not a JSON object")

	huge := `{"action": {"type": "answer", "text": "` + strings.Repeat("x", 2<<20) + `"}}`
	agentError("huge-chunked", 10, func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, huge) // no Content-Length: the cap is found while reading
	}, "too_large", "larger than 1048576 bytes")

	agentError("huge-declared", 10, func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
		_, _ = io.WriteString(w, huge)
	}, "too_large", fmt.Sprintf("is %d bytes; at most 1048576", len(huge)))

	agentError("invalid-action", 10, func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		answerJSON(w, `{"type": "teleport", "url": "__SHOP__"}`)
	}, "invalid_action", `"teleport" is not one of`)

	t.Run("loop", func(t *testing.T) {
		t.Parallel()
		a := f.addAgent(t, "loop", func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
			answerJSON(w, `{"type": "scroll", "delta_y": 300}`)
		})
		out := f.finish(t, f.queue(t, a, subsetOne, 4, 10), runLimit)
		require.Equal(t, models.RunCompleted, out.run.Status)
		// Running out of steps is a failure of its own class, not an error.
		require.Equal(t, 0, out.run.Errors)
		require.Equal(t, 1, out.run.Failures)
		require.Empty(t, out.page.Progress.ErrorsBy)
		require.Equal(t, 1, out.page.Progress.OutOfBudget)
		tl := out.only(t)
		require.Equal(t, models.OutcomeFailure, tl.Attempt.Outcome)
		require.Equal(t, models.ErrorClassBudget, tl.Attempt.ErrorClass)
		require.Contains(t, tl.Attempt.ErrorMessage, "step budget of 4 exhausted")
		require.Len(t, tl.Steps, 4)
		for _, s := range tl.Steps {
			require.NotNil(t, s.Action)
			require.Equal(t, models.ActScroll, s.Action.Type)
			require.Empty(t, s.Step.Error)
		}
		require.EqualValues(t, 4, a.calls.Load())
	})

	t.Run("off-site", func(t *testing.T) {
		t.Parallel()
		a := f.addAgent(t, "off-site", func(w http.ResponseWriter, _ *http.Request, req *models.StepRequest) {
			if req.Step == 0 {
				answerJSON(w, `{"type": "goto", "url": "https://example.com/"}`)
				return
			}
			answerJSON(w, `{"type": "answer", "text": "79"}`)
		})
		out := f.finish(t, f.queue(t, a, subsetOne, 10, 10), runLimit)
		require.Equal(t, models.RunCompleted, out.run.Status)
		require.Equal(t, 0, out.run.Errors, "a refused navigation costs a step, not the episode")
		tl := out.only(t)
		require.NotEqual(t, models.OutcomeError, tl.Attempt.Outcome, "%s: %s", tl.Attempt.ErrorClass, tl.Attempt.ErrorMessage)
		require.Empty(t, tl.Attempt.ErrorClass)
		require.Len(t, tl.Steps, 2)
		blocked := "blocked: https://example.com/ is not one of the benchmark's sites"
		require.Equal(t, []string{"https://example.com/"}, tl.Steps[0].Blocked, "the refused request is noted on its step")
		require.Empty(t, tl.Steps[0].Step.Error)
		require.Equal(t, blocked, tl.Steps[1].Step.Error, "the refusal is shown on the next step")
		require.Contains(t, tl.Steps[1].Step.URL, "/shop", "the tab stayed on the shop")
		require.Equal(t, []string{"", blocked}, a.seen(), "the agent was told")
		require.NotNil(t, tl.FinalAction)
		require.Equal(t, models.ActAnswer, tl.FinalAction.Type)
	})

	t.Run("missing-element", func(t *testing.T) {
		t.Parallel()
		a := f.addAgent(t, "missing-element", func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
			answerJSON(w, `{"type": "click", "target": {"element_id": "e99999"}}`)
		})
		out := f.finish(t, f.queue(t, a, subsetOne, 20, 10), runLimit)
		require.Equal(t, models.RunCompleted, out.run.Status)
		require.Equal(t, 1, out.run.Errors)
		tl := out.only(t)
		missing := "click failed: no element [e99999] on this page"
		requireError(t, tl, models.ErrorClassAgent, "5 actions in a row failed", missing)
		require.Len(t, tl.Steps, 5)
		require.Empty(t, tl.Steps[0].Step.Error)
		for _, s := range tl.Steps[1:] {
			require.Contains(t, s.Step.Error, missing, "step %d", s.Step.Index)
		}
		require.EqualValues(t, 5, a.calls.Load())
	})

	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		a := f.addAgent(t, "slow", func(w http.ResponseWriter, r *http.Request, _ *models.StepRequest) {
			sleepFor(r, 500*time.Millisecond)
			answerJSON(w, `{"type": "scroll", "delta_y": 100}`)
		})
		runID := f.queue(t, a, subsetOne, 200, 10)
		var attemptID int64
		require.Eventually(t, func() bool {
			var attempts []models.Attempt
			require.NoError(t, f.db.Gorm().Where("run_id = ? AND status = ?", runID, models.AttemptRunning).Find(&attempts).Error)
			if len(attempts) == 0 {
				return false
			}
			attemptID = attempts[0].ID
			var steps int64
			require.NoError(t, f.db.Gorm().Model(&models.Step{}).Where("attempt_id = ?", attemptID).Count(&steps).Error)
			return steps >= 2
		}, runLimit, 50*time.Millisecond, "the slow agent's attempt never got going")

		canceled := time.Now()
		require.NoError(t, servicetest.Runs(f.db, 0).CancelRun(f.member, runID))
		status, err := f.db.RunStatus(f.system, runID)
		require.NoError(t, err)
		require.Equal(t, models.RunCanceled, status)
		require.Eventually(t, func() bool {
			return a.inFlight.Load() == 0 && !episodeRunning(t, f.db, attemptID)
		}, testenv.Scaled(t, 10*time.Second), 50*time.Millisecond, "the episode did not stop after its run was canceled")
		stopped := time.Since(canceled)
		calls := a.calls.Load()
		t.Logf("cancel: the episode stopped %s after the run was canceled, after %d agent calls", stopped.Round(time.Millisecond), calls)

		out := f.finish(t, runID, runLimit)
		require.Equal(t, models.RunCanceled, out.run.Status)
		require.Equal(t, 1, out.run.Errors)
		require.Equal(t, map[string]int{models.ErrorClassCanceled: 1}, out.page.Progress.ErrorsBy)
		tl := out.only(t)
		requireError(t, tl, models.ErrorClassCanceled, "canceled")
		require.GreaterOrEqual(t, len(tl.Steps), 2)
		require.LessOrEqual(t, int64(len(tl.Steps)), calls, "no step without an agent call")
		require.Equal(t, calls, a.calls.Load(), "the stopped episode asks nothing more")
	})
}

// episodeRunning reports whether the queue still runs an episode job of attemptID.
func episodeRunning(t *testing.T, db *storage.DB, attemptID int64) bool {
	t.Helper()
	args := "args::text AS args" // jsonb on PostgreSQL
	if db.Dialect() == migrations.SQLite {
		args = "json(args) AS args" // River's SQLite driver stores binary JSONB
	}
	var jobs []struct {
		Args  string
		State string
	}
	require.NoError(t, db.Gorm().Table("river_job").Select(args+", state").Where("kind = ?", runner.EpisodeArgs{}.Kind()).Scan(&jobs).Error)
	for _, j := range jobs {
		var ep runner.EpisodeArgs
		require.NoError(t, json.Unmarshal([]byte(j.Args), &ep), "episode job args %q", j.Args)
		if ep.AttemptID == attemptID && j.State == "running" {
			return true
		}
	}
	return false
}

// TestFaulty_SiteDown runs a two-task run whose forum is down, on both
// databases: the forum attempt is retried once (EnvironmentRetries), then ends
// as an environment error naming the start URL, never charged to the agent;
// the shop attempt is unaffected and the run completes.
func TestFaulty_SiteDown(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := setupFaulty(t, db, runner.Options{Episodes: 2, EnvironmentRetries: 1})
		down := closedPort(t)
		_, err := f.db.UpdateSite(f.system, sandbox.Slug, "forum", "http://"+down+"/sandbox/{episode}/forum", "", 0)
		require.NoError(t, err)

		a := f.addAgent(t, "answerer", func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
			answerJSON(w, `{"type": "answer", "text": "79"}`)
		})
		start := time.Now()
		out := f.finish(t, f.queue(t, a, subsetTwo, 5, 10), 2*time.Minute)
		t.Logf("site down: run finished in %s", time.Since(start).Round(time.Millisecond))
		require.Equal(t, models.RunCompleted, out.run.Status)
		require.Equal(t, 1, out.run.Errors)
		require.Equal(t, map[string]int{models.ErrorClassEnvironment: 1}, out.page.Progress.ErrorsBy)

		forum := out.attempt(t, "forum-top-post")
		requireError(t, forum, models.ErrorClassEnvironment, "start URL http://"+down+"/sandbox/", "/forum did not load", "ERR_CONNECTION_REFUSED")
		require.Equal(t, 2, forum.Attempt.Tries, "retried once before the failure counts")
		require.Empty(t, forum.Steps, "the agent was never asked")

		shop := out.attempt(t, "shop-keyboard-price")
		require.Empty(t, shop.Attempt.ErrorClass, shop.Attempt.ErrorMessage)
		require.Equal(t, 1, shop.Attempt.Tries)
		require.Len(t, shop.Steps, 1)
		require.EqualValues(t, 1, a.calls.Load(), "only the shop attempt reached the agent")
	})
}

// closedPort returns a loopback host:port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestFaulty_SiteReset: a site's reset hook is called before each episode that
// uses the site, with the episode's namespace; a failing reset is an environment
// error, retried, never charged to the agent.
func TestFaulty_SiteReset(t *testing.T) {
	t.Parallel()
	f := setupFaulty(t, storagetest.OpenSQLite(t), runner.Options{Episodes: 2, EnvironmentRetries: 1})
	var resets atomic.Int64
	var lastPath atomic.Value
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resets.Add(1)
		lastPath.Store(r.URL.Path)
		if strings.Contains(r.URL.Path, "/forum") {
			http.Error(w, "reset failed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(reset.Close)
	sites, err := f.db.ListSites(f.system, sandbox.Slug, models.BenchmarkScopeFor(models.ActorFrom(f.system)))
	require.NoError(t, err)
	for _, s := range sites {
		_, err := f.db.UpdateSite(f.system, sandbox.Slug, s.Name, s.URL, reset.URL+"/reset/{episode}/"+s.Name, 0)
		require.NoError(t, err)
	}

	a := f.addAgent(t, "resetter", func(w http.ResponseWriter, _ *http.Request, _ *models.StepRequest) {
		answerJSON(w, `{"type": "answer", "text": "79"}`)
	})
	out := f.finish(t, f.queue(t, a, subsetTwo, 5, 10), 2*time.Minute)
	require.Equal(t, models.RunCompleted, out.run.Status)
	forum := out.attempt(t, "forum-top-post")
	requireError(t, forum, models.ErrorClassEnvironment, "reset of site forum failed: HTTP 500")
	require.Equal(t, 2, forum.Attempt.Tries, "retried once before the failure counts")
	shop := out.attempt(t, "shop-keyboard-price")
	require.Empty(t, shop.Attempt.ErrorClass, shop.Attempt.ErrorMessage)
	require.EqualValues(t, 3, resets.Load(), "one shop reset and two forum resets")
	require.Regexp(t, `^/reset/a\d+t\d+/`, lastPath.Load(), "the reset URL names the episode's namespace")
	require.EqualValues(t, 1, a.calls.Load(), "only the shop attempt reached the agent")
}
