package runner_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/internal/testenv"
	"proctor/migrations"
	"proctor/models"
	"proctor/netguard"
	"proctor/runner"
	"proctor/runner/episode"
	"proctor/runner/hidden"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// hiddenSuiteTests are the sample suite's tests the job tests run: request,
// system and browser tests of every level, checkpoints, a journey with a
// second visitor, and two tests that restart the candidate, listed first so
// that they would overlap the others were they not held back to run alone.
var hiddenSuiteTests = []string{
	"b3-cart-survives-restart", "sys-restart",
	"req-home-page", "req-product-page", "req-unknown-page", "req-add-to-cart-followed",
	"b1-home-page", "b1-tab-cart", "b2-cart-read-back", "b3-cart-private-per-visitor",
	"sys-health", "sys-path-traversal",
}

// hiddenTestSuite is a small suite cut from the sample suite: the tests
// above, three at a time.
func hiddenTestSuite(t *testing.T) *hiddentest.Suite {
	t.Helper()
	s, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	require.NoError(t, err)
	var tests []hiddentest.Test
	for _, id := range hiddenSuiteTests {
		i := slices.IndexFunc(s.Tests, func(x hiddentest.Test) bool { return x.ID == id })
		require.GreaterOrEqual(t, i, 0, id)
		tests = append(tests, s.Tests[i])
	}
	s.Tests, s.Parallelism = tests, 3
	require.NoError(t, hiddentest.Validate(s, nil))
	return s
}

// candidateShop is the sandbox shop served as a candidate website, with a
// restart hook at /restart/{visitor} that takes it down for a moment (its
// state kept, as a real restart of a persistent site), and a log of every
// request by visitor, to tell which tests overlapped.
type candidateShop struct {
	srv      *httptest.Server
	mu       sync.Mutex
	visits   []visit
	restarts []string // the visitors that called the restart hook
	down     atomic.Bool
}

// visit is one request the candidate served.
type visit struct {
	visitor    string
	start, end time.Time
}

func newCandidateShop(t *testing.T, shop http.Handler) *candidateShop {
	t.Helper()
	c := &candidateShop{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := visit{visitor: visitorOf(r.URL.Path), start: time.Now()}
		defer func() {
			v.end = time.Now()
			c.mu.Lock()
			c.visits = append(c.visits, v)
			c.mu.Unlock()
		}()
		switch {
		case strings.HasPrefix(r.URL.Path, "/restart/") && r.Method == http.MethodPost:
			c.mu.Lock()
			c.restarts = append(c.restarts, v.visitor)
			c.mu.Unlock()
			c.down.Store(true)
			time.AfterFunc(300*time.Millisecond, func() { c.down.Store(false) })
			w.WriteHeader(http.StatusNoContent)
		case c.down.Load():
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		default:
			shop.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// visitorOf is the visitor a request path names: /sandbox/{visitor}/… or
// /restart/{visitor}.
func visitorOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) >= 2 && (parts[0] == "sandbox" || parts[0] == "restart") {
		return parts[1]
	}
	return ""
}

func (c *candidateShop) candidate() models.HiddenCandidate {
	return models.HiddenCandidate{BaseURL: c.srv.URL + "/sandbox/{visitor}/shop", RestartURL: c.srv.URL + "/restart/{visitor}"}
}

func (c *candidateShop) served() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.visits)
}

// requireRestartsAlone checks that while a test that restarted the
// candidate ran, from its visitor's first request to its last, no other
// visitor made requests (a test's visitors are busy at most while the test
// runs), and that the other tests did overlap one another: they ran in
// parallel.
func (c *candidateShop) requireRestartsAlone(t *testing.T, restarts int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.restarts, restarts)
	type span struct{ first, last time.Time }
	spans := map[string]span{}
	for _, v := range c.visits {
		s, ok := spans[v.visitor]
		if !ok || v.start.Before(s.first) {
			s.first = v.start
		}
		if v.end.After(s.last) {
			s.last = v.end
		}
		spans[v.visitor] = s
	}
	overlap := func(a, b span) bool { return a.first.Before(b.last) && b.first.Before(a.last) }
	for _, r := range c.restarts {
		for visitor, s := range spans {
			if visitor != r {
				require.False(t, overlap(spans[r], s), "visitor %s made requests while the restarting test of visitor %s ran", visitor, r)
			}
		}
	}
	overlapped := false
	for a, sa := range spans {
		for b, sb := range spans {
			if a != b && !slices.Contains(c.restarts, a) && !slices.Contains(c.restarts, b) && overlap(sa, sb) {
				overlapped = true
			}
		}
	}
	require.True(t, overlapped, "the tests that do not restart the candidate ran in parallel")
}

// recordHiddenCaptures plays the suite's journeys with checkpoints against
// the reference shop and returns each capture as a PNG, the way a benchmark's
// author records them.
func recordHiddenCaptures(t *testing.T, b playwright.Browser, s *hiddentest.Suite, shop http.Handler) map[string][]byte {
	t.Helper()
	ref := newCandidateShop(t, shop)
	c := ref.candidate()
	caps := map[string][]byte{}
	for i := range s.Tests {
		test := &s.Tests[i]
		if len(test.Checkpoints) == 0 {
			continue
		}
		opts := hidden.JourneyOptionsFor(s)
		opts.Record = func(name string, img image.Image) {
			var buf bytes.Buffer
			require.NoError(t, png.Encode(&buf, img))
			caps[name] = buf.Bytes()
		}
		out := hidden.RunJourney(t.Context(), b, hidden.Candidate{BaseURL: c.BaseURL, RestartURL: c.RestartURL}, test, nil, opts)
		require.Equal(t, hidden.Passed, out.Result, "%s: %s", test.ID, out.Reason)
	}
	require.ElementsMatch(t, s.Captures(), mapKeys(caps))
	return caps
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hiddenBundle is a database holding an imported hidden-tests benchmark of
// one task, a team with an agent, a runner working hidden-tests jobs (started
// by start), and a client that inserts jobs into the runner's queue.
type hiddenBundle struct {
	db        *storage.DB
	artifacts artifact.Store
	runner    *runner.Runner
	startOnce sync.Once
	started   atomic.Bool
	// refuse makes the artifact store refuse every image.
	refuse    *atomic.Bool
	jobs      *river.Client[*sql.Tx]
	member    context.Context
	system    context.Context
	guard     service.HostGuard // the candidates' SSRF guard: 127.0.0.1 allowed
	taskID    int64
	versionID int64
	teamID    int64
	agentID   int64
	suite     *hiddentest.Suite
}

// hiddenBenchmarkSlug is the benchmark the job tests import.
const hiddenBenchmarkSlug = "shop-rebuild-test"

// hiddenBenchmarkFile is a hidden-tests benchmark file of one task, the
// sandbox shop's rebuild, with the suite and its captures (PNG by name).
func hiddenBenchmarkFile(t *testing.T, suite *hiddentest.Suite, caps map[string][]byte) []byte {
	t.Helper()
	encoded := map[string]string{}
	for name, b := range caps {
		encoded[name] = base64.StdEncoding.EncodeToString(b)
	}
	header, err := json.Marshal(map[string]any{"proctor_benchmark": 1, "name": "Shop rebuild", "evaluator": models.EvaluatorHiddenTests})
	require.NoError(t, err)
	task, err := json.Marshal(map[string]any{
		"id": "shop-rebuild", "intent": "Explore the shop at __SHOP__ and rebuild it.", "start_urls": []string{"__SHOP__"},
		"sites": []string{"shop"}, "eval": map[string]any{"suite": suite, "captures": encoded},
	})
	require.NoError(t, err)
	return slices.Concat(header, []byte("\n"), task, []byte("\n"))
}

// setupHidden imports the benchmark and prepares the team and the runner.
func setupHidden(t *testing.T, db *storage.DB, browser episode.BrowserOptions, suite *hiddentest.Suite, caps map[string][]byte) *hiddenBundle {
	t.Helper()
	ctx := context.Background()
	h := &hiddenBundle{db: db, system: models.WithActor(ctx, models.SystemActor()), suite: suite}
	v, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	guard := netguard.New([]string{"127.0.0.1"}, nil)
	db.UseAgentSecrets(v)

	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, bytes.NewReader(hiddenBenchmarkFile(t, suite, caps)), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(h.system, hiddenBenchmarkSlug, ds, "benchmark.jsonl", 0)
	require.NoError(t, err)
	var task models.Task
	require.NoError(t, db.Gorm().Where("external_id = ?", "shop-rebuild").First(&task).Error)
	h.taskID, h.versionID = task.ID, task.VersionID

	u, err := db.CreateUser(ctx, "builder@example.org", "Builder", "correct horse battery", false)
	require.NoError(t, err)
	h.member = models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
	team, err := servicetest.Teams(db).CreateTeam(h.member, "Builders", "builders", "")
	require.NoError(t, err)
	agent := &models.Agent{Name: "Site builder", Kind: models.AgentUpload}
	require.NoError(t, servicetest.CreateAgent(db, h.member, "builders", agent, nil))
	h.teamID, h.agentID, h.guard = team.ID, agent.ID, guard

	h.artifacts, err = artifact.NewLocal(filepath.Join(t.TempDir(), "artifacts"), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "http://proctor.test")
	require.NoError(t, err)
	h.refuse = &atomic.Bool{}
	h.runner, err = runner.New(runner.Config{Evaluators: evaltest.Registry(),
		DB: db, Artifacts: refusingStore{Store: h.artifacts, refuse: h.refuse}, Browser: browser,
		AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		Guard:       guard,
		Options:     runner.Options{Episodes: 1, CancelPoll: 100 * time.Millisecond, CandidateAnswerLimit: 3 * time.Second},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if !h.started.Load() {
			return
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, h.runner.Stop(stopCtx))
	})
	switch db.Dialect() {
	case migrations.SQLite:
		h.jobs, err = river.NewClient(riversqlite.New(db.SQL()), &river.Config{})
	default:
		h.jobs, err = river.NewClient(riverdatabasesql.New(db.SQL()), &river.Config{})
	}
	require.NoError(t, err)
	return h
}

// refusingStore is an artifact store that refuses to store while refuse is set.
type refusingStore struct {
	artifact.Store
	refuse *atomic.Bool
}

func (s refusingStore) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if s.refuse.Load() {
		return fmt.Errorf("store %s: the disk is full", key)
	}
	return s.Store.Put(ctx, key, r, size, contentType)
}

// start starts the runner's workers (once; setupHidden stops them).
func (h *hiddenBundle) start(t *testing.T) {
	t.Helper()
	h.startOnce.Do(func() {
		require.NoError(t, h.runner.Start(context.Background()))
		h.started.Store(true)
	})
}

// submitted is what the team reported about building its candidate.
var submitted = models.CandidateSpec{CostUSD: 1.25, TokensIn: 12000, TokensOut: 3400, Turns: 42}

// submit submits a candidate run of the task for the team and returns the
// run and its attempt.
func (h *hiddenBundle) submit(t *testing.T, cand models.HiddenCandidate) (int64, int64) {
	t.Helper()
	spec := submitted
	spec.TaskID, spec.BaseURL, spec.RestartURL, spec.HealthURL = "shop-rebuild", cand.BaseURL, cand.RestartURL, cand.HealthURL
	run, err := service.NewCandidates(h.db, h.runner.Jobs(), h.guard, service.CandidateOptions{}).SubmitCandidates(h.member, models.CandidateRunRequest{
		TeamSlug: "builders", AgentSlug: "site-builder", BenchmarkSlug: hiddenBenchmarkSlug, Candidates: []models.CandidateSpec{spec},
	})
	require.NoError(t, err)
	var ids []int64
	require.NoError(t, h.db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Pluck("id", &ids).Error)
	require.Len(t, ids, 1)
	return run.ID, ids[0]
}

// jobArgs lists a kind's jobs' ids and JSON arguments.
func (h *hiddenBundle) jobArgs(t *testing.T, kind string) map[int64]string {
	t.Helper()
	column := "CAST(args AS TEXT)"
	if h.db.Dialect() == migrations.SQLite {
		column = "json(args)" // River keeps SQLite's binary JSON
	}
	var rows []struct {
		ID   int64
		Args string
	}
	require.NoError(t, h.db.Gorm().Raw("SELECT id, "+column+" AS args FROM river_job WHERE kind = ?", kind).Scan(&rows).Error)
	out := map[int64]string{}
	for _, r := range rows {
		out[r.ID] = r.Args
	}
	return out
}

// attemptJob is the id of the hidden-tests job submitting queued for an attempt.
func (h *hiddenBundle) attemptJob(t *testing.T, attemptID int64) int64 {
	t.Helper()
	var found []int64
	for id, raw := range h.jobArgs(t, runner.HiddenTestsArgs{}.Kind()) {
		var args runner.HiddenTestsArgs
		require.NoError(t, json.Unmarshal([]byte(raw), &args))
		if args.AttemptID == attemptID {
			found = append(found, id)
		}
	}
	require.Len(t, found, 1, "one job per attempt")
	return found[0]
}

// createRun creates a candidate run's rows as submitting does, with the
// attempt's candidate row when cand is not nil (nil: the state of an attempt
// whose candidate was lost), but without a job.
func (h *hiddenBundle) createRun(t *testing.T, cand *models.HiddenCandidate) (int64, int64) {
	t.Helper()
	g := h.db.Gorm()
	now := time.Now().UTC()
	run := models.Run{TeamID: h.teamID, AgentID: h.agentID, VersionID: h.versionID, SubsetName: models.SubsetFull,
		Status: models.RunRunning, Origin: models.OriginUploaded, AgentSnapshot: "{}", MaxSteps: 1, Parallelism: 1,
		TasksTotal: 1, CreatedAt: now, StartedAt: &now}
	require.NoError(t, g.Create(&run).Error)
	a := models.Attempt{RunID: run.ID, TaskID: h.taskID, Status: models.AttemptPending, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(&a).Error)
	if cand != nil {
		c := *cand
		c.AttemptID, c.CreatedAt = a.ID, now
		require.NoError(t, g.Create(&c).Error)
	}
	return run.ID, a.ID
}

// enqueue inserts a hidden-tests job for the attempt into the runner's
// queue, tried at most maxAttempts times (0: the queue's default).
func (h *hiddenBundle) enqueue(t *testing.T, runID, attemptID int64, maxAttempts int) int64 {
	t.Helper()
	res, err := h.jobs.Insert(context.Background(), runner.HiddenTestsArgs{AttemptID: attemptID, RunID: runID},
		&river.InsertOpts{Queue: runner.QueueHiddenTests, MaxAttempts: maxAttempts})
	require.NoError(t, err)
	return res.Job.ID
}

// waitJob waits for a job to complete (a job that errors is retried, so it
// would not complete in time).
func (h *hiddenBundle) waitJob(t *testing.T, jobID int64, limit time.Duration) {
	t.Helper()
	limit = testenv.Scaled(t, limit)
	require.Eventually(t, func() bool {
		var state string
		require.NoError(t, h.db.Gorm().Raw("SELECT state FROM river_job WHERE id = ?", jobID).Scan(&state).Error)
		require.NotContains(t, []string{"cancelled", "discarded"}, state, "job %d", jobID)
		return state == "completed"
	}, limit, 100*time.Millisecond, "job %d did not complete within %s", jobID, limit)
}

func (h *hiddenBundle) attempt(t *testing.T, id int64) models.Attempt {
	t.Helper()
	var a models.Attempt
	require.NoError(t, h.db.Gorm().First(&a, id).Error)
	return a
}

func (h *hiddenBundle) run(t *testing.T, id int64) models.Run {
	t.Helper()
	var r models.Run
	require.NoError(t, h.db.Gorm().First(&r, id).Error)
	return r
}

func (h *hiddenBundle) results(t *testing.T, attemptID int64) []models.HiddenTestResult {
	t.Helper()
	var rows []models.HiddenTestResult
	require.NoError(t, h.db.Gorm().Where("attempt_id = ?", attemptID).Order("position").Find(&rows).Error)
	return rows
}

func (h *hiddenBundle) evaluations(t *testing.T, attemptID int64) []models.Evaluation {
	t.Helper()
	var evs []models.Evaluation
	require.NoError(t, h.db.Gorm().Where("attempt_id = ?", attemptID).Order("id").Find(&evs).Error)
	return evs
}

// metricsJobs counts the metrics refresh jobs queued for a run.
func (h *hiddenBundle) metricsJobs(t *testing.T, runID int64) int {
	t.Helper()
	n := 0
	for _, raw := range h.jobArgs(t, runner.MetricsArgs{}.Kind()) {
		var m runner.MetricsArgs
		require.NoError(t, json.Unmarshal([]byte(raw), &m))
		if m.RunID == runID {
			n++
		}
	}
	return n
}

func (h *hiddenBundle) requireStored(t *testing.T, key, prefix string) {
	t.Helper()
	require.True(t, strings.HasPrefix(key, prefix), "%q is under %q", key, prefix)
	info, err := h.artifacts.Stat(context.Background(), key)
	require.NoError(t, err, key)
	require.Positive(t, info.Size, key)
}

func summaryOf(t *testing.T, ev models.Evaluation) models.HiddenSummary {
	t.Helper()
	var s models.HiddenSummary
	require.NoError(t, json.Unmarshal([]byte(ev.Details), &s))
	return s
}

// TestHiddenTests_Job runs hidden-tests jobs through the real queue, on
// SQLite and PostgreSQL, against the sandbox shop served as a candidate.
func TestHiddenTests_Job(t *testing.T) {
	t.Parallel()
	opts := browserOptions(t)
	b, err := episode.LaunchBrowser(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	suite := hiddenTestSuite(t)
	caps := recordHiddenCaptures(t, b.Playwright(), suite, sandbox.New(sandbox.Options{}))

	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		h := setupHidden(t, db, opts, suite, caps)

		t.Run("a faithful copy passes every test", func(t *testing.T) {
			shop := newCandidateShop(t, sandbox.New(sandbox.Options{}))
			runID, attemptID := h.submit(t, shop.candidate())
			// An earlier try was interrupted after storing a row and an image.
			require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("id = ?", attemptID).
				Updates(map[string]any{"tries": 1, "status": models.AttemptRunning}).Error)
			require.NoError(t, db.Gorm().Create(&models.HiddenTestResult{AttemptID: attemptID, TestID: "left-over", Group: models.HiddenGroupRequest,
				Result: models.HiddenFailed, Runs: "[]", CreatedAt: time.Now()}).Error)
			stale := fmt.Sprintf("runs/%d/attempts/%d/try-1/hidden/left-over/run-1/step-000.jpg", runID, attemptID)
			require.NoError(t, h.artifacts.Put(context.Background(), stale, strings.NewReader("jpeg"), 4, "image/jpeg"))

			h.start(t)
			h.waitJob(t, h.attemptJob(t, attemptID), 4*time.Minute)

			a := h.attempt(t, attemptID)
			require.Equal(t, models.AttemptDone, a.Status)
			require.Equal(t, models.OutcomeSuccess, a.Outcome)
			require.NotNil(t, a.Score)
			require.InDelta(t, 1.0, *a.Score, 1e-9)
			require.Equal(t, 2, a.Tries, "the interrupted try counted")
			require.Equal(t, []any{submitted.CostUSD, submitted.TokensIn, submitted.TokensOut, submitted.Turns},
				[]any{a.Cost, a.TokensIn, a.TokensOut, a.Steps}, "the team's reported cost, tokens and turns stay")
			require.Positive(t, a.DurationMS)
			require.Empty(t, a.ErrorClass)

			rows := h.results(t, attemptID)
			require.Len(t, rows, len(hiddenSuiteTests), "the left-over row was replaced")
			prefix := fmt.Sprintf("runs/%d/attempts/%d/try-2/hidden/", runID, attemptID)
			checkpoints := 0
			for i, r := range rows {
				require.Equal(t, hiddenSuiteTests[i], r.TestID)
				require.Equal(t, i, r.Position)
				require.Equal(t, suite.Tests[i].Group, r.Group)
				require.Equal(t, suite.Tests[i].Level, r.Level)
				require.Equal(t, models.HiddenPassed, r.Result, "%s: %s", r.TestID, r.Reason)
				require.False(t, r.Flaky)
				require.Empty(t, r.Reason)
				var runs []models.HiddenTestRun
				require.NoError(t, json.Unmarshal([]byte(r.Runs), &runs))
				require.Len(t, runs, 1, r.TestID)
				require.NotEmpty(t, runs[0].Steps, r.TestID)
				require.Len(t, runs[0].Checkpoints, len(suite.Tests[i].Checkpoints), r.TestID)
				for _, cp := range runs[0].Checkpoints {
					checkpoints++
					require.True(t, cp.Passed, "%s %s", r.TestID, cp.Capture)
					for _, key := range []string{cp.CandidateKey, cp.ReferenceKey, cp.MapKey} {
						h.requireStored(t, key, prefix+r.TestID+"/run-1/")
					}
				}
				for _, st := range runs[0].Steps {
					if st.Action == hiddentest.ActionCheckpoint {
						h.requireStored(t, st.ScreenshotKey, prefix+r.TestID+"/run-1/")
					}
				}
			}
			require.Equal(t, 3, checkpoints)
			_, err := h.artifacts.Stat(context.Background(), stale)
			require.ErrorIs(t, err, artifact.ErrNotFound, "the interrupted try's image is gone")

			evs := h.evaluations(t, attemptID)
			require.Len(t, evs, 1)
			ev := evs[0]
			require.Equal(t, models.EvaluatorHiddenTests, ev.Evaluator)
			require.Equal(t, models.EvaluationCheck, ev.Kind)
			require.True(t, ev.IsPrimary)
			require.True(t, ev.IsCurrent)
			require.Equal(t, models.OutcomeSuccess, ev.Verdict)
			require.InDelta(t, 1.0, *ev.Score, 1e-9)
			require.Len(t, ev.InputsChecksum, 64)
			sum := summaryOf(t, ev)
			require.Equal(t, models.HiddenTally{Total: 12, Passed: 12}, sum.Overall)
			require.Equal(t, models.HiddenTally{Total: 4, Passed: 4}, sum.Request)
			require.Equal(t, models.HiddenTally{Total: 5, Passed: 5}, sum.Browser)
			require.Equal(t, models.HiddenTally{Total: 3, Passed: 3}, sum.System)
			require.Equal(t, models.HiddenTally{Total: 2, Passed: 2}, sum.L3)

			run := h.run(t, runID)
			require.Equal(t, models.RunCompleted, run.Status)
			require.NotNil(t, run.FinishedAt)
			require.Equal(t, []any{1, 1, 0, 0}, []any{run.TasksDone, run.Successes, run.Failures, run.Errors})
			require.InDelta(t, 1.0, run.ScoreSum, 1e-9)
			require.InDelta(t, submitted.CostUSD, run.Cost, 1e-9)
			require.Equal(t, submitted.TokensIn, run.TokensIn)
			require.Equal(t, 1, h.metricsJobs(t, runID), "the leaderboard refresh is queued")

			shop.requireRestartsAlone(t, 2)

			t.Run("a redelivered job does nothing twice", func(t *testing.T) {
				served := shop.served()
				h.waitJob(t, h.enqueue(t, runID, attemptID, 0), time.Minute)
				require.Equal(t, served, shop.served(), "no test ran again")
				require.Equal(t, rows, h.results(t, attemptID))
				require.Len(t, h.evaluations(t, attemptID), 1)
				require.Equal(t, a, h.attempt(t, attemptID))
				require.Equal(t, run, h.run(t, runID))
				require.Equal(t, 1, h.metricsJobs(t, runID))
			})
		})

		t.Run("the broken rebuild fails the tests its defects touch, each run twice", func(t *testing.T) {
			h.start(t)
			srv := httptest.NewServer(sandbox.Rebuilds())
			t.Cleanup(srv.Close)
			urls := sandbox.RebuildCandidate(srv.URL, sandbox.RebuildBroken)
			runID, attemptID := h.submit(t, models.HiddenCandidate{BaseURL: urls.BaseURL, RestartURL: urls.RestartURL, HealthURL: urls.HealthURL})
			h.waitJob(t, h.attemptJob(t, attemptID), 4*time.Minute)

			// Wrong images fail the product card's checkpoint; state lost on
			// restart fails the cart that should survive it. The restart drops
			// every visitor's state, which only harms the test that restarted
			// since it ran alone.
			failing := []string{"b1-home-page", "b3-cart-survives-restart"}
			prefix := fmt.Sprintf("runs/%d/attempts/%d/try-1/hidden/", runID, attemptID)
			for _, r := range h.results(t, attemptID) {
				var runs []models.HiddenTestRun
				require.NoError(t, json.Unmarshal([]byte(r.Runs), &runs))
				if !slices.Contains(failing, r.TestID) {
					require.Equal(t, models.HiddenPassed, r.Result, "%s: %s", r.TestID, r.Reason)
					require.Len(t, runs, 1, r.TestID)
					continue
				}
				require.Equal(t, models.HiddenFailed, r.Result, r.TestID)
				require.False(t, r.Flaky)
				require.Len(t, runs, 2, "%s: a failed test is run once more and both runs kept", r.TestID)
				require.Equal(t, runs[1].Reason, r.Reason)
				require.GreaterOrEqual(t, r.DurationMS, runs[0].DurationMS+runs[1].DurationMS)
				for n, run := range runs {
					require.Equal(t, models.HiddenFailed, run.Result)
					last := run.Steps[len(run.Steps)-1]
					require.Equal(t, models.HiddenFailed, last.Result)
					h.requireStored(t, last.ScreenshotKey, fmt.Sprintf("%s%s/run-%d/", prefix, r.TestID, n+1))
				}
				if r.TestID == "b1-home-page" {
					require.Contains(t, r.Reason, "(checkpoint product-card): the region scored ")
					cp := runs[1].Checkpoints[1]
					require.Equal(t, "product-card", cp.Capture)
					require.False(t, cp.Passed)
					require.Less(t, cp.Score, cp.Threshold)
					for _, key := range []string{cp.CandidateKey, cp.ReferenceKey, cp.MapKey} {
						h.requireStored(t, key, prefix+"b1-home-page/run-2/")
					}
				}
			}
			a := h.attempt(t, attemptID)
			require.Equal(t, models.OutcomeFailure, a.Outcome)
			require.InDelta(t, 10.0/12, *a.Score, 1e-9)
			evs := h.evaluations(t, attemptID)
			require.Len(t, evs, 1)
			require.Equal(t, models.OutcomeFailure, evs[0].Verdict)
			require.InDelta(t, 10.0/12, *evs[0].Score, 1e-9)
			sum := summaryOf(t, evs[0])
			require.Equal(t, models.HiddenTally{Total: 12, Passed: 10, Failed: 2}, sum.Overall)
			require.Equal(t, models.HiddenTally{Total: 5, Passed: 3, Failed: 2}, sum.Browser)
			require.Equal(t, models.HiddenTally{Total: 2, Passed: 1, Failed: 1}, sum.L3)
			require.Equal(t, models.HiddenTally{Total: 4, Passed: 4}, sum.Request)
		})

		// A candidate that does not answer at its base URL gets no test run:
		// each ends errored with why, and the job ends within the answer
		// limit instead of the suite's whole budget.
		for _, tc := range []struct {
			name string
			base func(t *testing.T) string
			why  string
		}{
			{"an unreachable candidate", func(t *testing.T) string { return "http://" + closedPort(t) }, "unreachable: connection refused"},
			{"a candidate that never answers", func(t *testing.T) string {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
				t.Cleanup(srv.Close)
				return srv.URL
			}, "no answer within 3s"},
		} {
			t.Run(tc.name+" errors every test without running it", func(t *testing.T) {
				base := tc.base(t)
				h.start(t)
				runID, attemptID := h.submit(t, models.HiddenCandidate{
					BaseURL: base + "/sandbox/{visitor}/shop", RestartURL: base + "/restart"})
				h.waitJob(t, h.attemptJob(t, attemptID), 2*time.Minute)

				rows := h.results(t, attemptID)
				require.Len(t, rows, len(hiddenSuiteTests))
				for _, r := range rows {
					require.Equal(t, models.HiddenErrored, r.Result, r.TestID)
					require.Equal(t, "did not start: the candidate did not answer at its base URL: "+tc.why, r.Reason, r.TestID)
					require.JSONEq(t, "[]", r.Runs, r.TestID)
				}
				a := h.attempt(t, attemptID)
				require.Equal(t, models.OutcomeFailure, a.Outcome, "the candidate's failure, not the platform's")
				require.InDelta(t, 0.0, *a.Score, 1e-9)
				evs := h.evaluations(t, attemptID)
				require.Len(t, evs, 1)
				require.Equal(t, models.OutcomeFailure, evs[0].Verdict)
				require.Equal(t, models.HiddenTally{Total: 12, Errored: 12}, summaryOf(t, evs[0]).Overall)
				require.Equal(t, models.RunCompleted, h.run(t, runID).Status)
			})
		}

		t.Run("an attempt without a candidate ends in error", func(t *testing.T) {
			h.start(t)
			runID, attemptID := h.createRun(t, nil)
			h.waitJob(t, h.enqueue(t, runID, attemptID, 0), time.Minute)
			a := h.attempt(t, attemptID)
			require.Equal(t, models.AttemptDone, a.Status)
			require.Equal(t, models.OutcomeError, a.Outcome)
			require.Nil(t, a.Score)
			require.Equal(t, models.ErrorClassPlatform, a.ErrorClass)
			require.Equal(t, "The attempt has no candidate website to test.", a.ErrorMessage)
			require.Empty(t, h.results(t, attemptID))
			evs := h.evaluations(t, attemptID)
			require.Len(t, evs, 1)
			require.Equal(t, models.OutcomeError, evs[0].Verdict)
			require.Nil(t, evs[0].Score)
			require.Contains(t, evs[0].Details, `"error":"The attempt has no candidate website to test."`)
			run := h.run(t, runID)
			require.Equal(t, models.RunCompleted, run.Status)
			require.Equal(t, 1, run.Errors)
		})

		t.Run("images the store refuses are retried, then end the attempt in error on the job's last try", func(t *testing.T) {
			h.start(t)
			shop := newCandidateShop(t, sandbox.New(sandbox.Options{}))
			cand := shop.candidate()
			runID, attemptID := h.createRun(t, &cand)
			h.refuse.Store(true)
			t.Cleanup(func() { h.refuse.Store(false) })
			h.waitJob(t, h.enqueue(t, runID, attemptID, 2), 4*time.Minute)

			a := h.attempt(t, attemptID)
			require.Equal(t, 2, a.Tries, "the first try was handed back and run again")
			require.Equal(t, models.AttemptDone, a.Status)
			require.Equal(t, models.OutcomeError, a.Outcome)
			require.Equal(t, models.ErrorClassPlatform, a.ErrorClass)
			require.Equal(t, "The platform could not run this attempt's tests; an administrator can see why in the server's log.", a.ErrorMessage)
			require.Empty(t, h.results(t, attemptID), "no row points at an image that was not stored")
			evs := h.evaluations(t, attemptID)
			require.Len(t, evs, 1)
			require.Equal(t, models.OutcomeError, evs[0].Verdict)
			require.Equal(t, models.RunCompleted, h.run(t, runID).Status)
		})

		t.Run("canceling the run stops its tests", func(t *testing.T) {
			arrived := make(chan struct{}, 64)
			release := make(chan struct{})
			var calls atomic.Int64
			hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					return // the job's first request asks whether the candidate answers at all
				}
				arrived <- struct{}{} // a test's request: it hangs until the run is canceled
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(hang.Close)
			t.Cleanup(func() { close(release) })
			h.start(t)
			runID, attemptID := h.submit(t, models.HiddenCandidate{BaseURL: hang.URL + "/sandbox/{visitor}/shop"})
			jobID := h.attemptJob(t, attemptID)
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				t.Fatal("the candidate was never called")
			}
			require.NoError(t, servicetest.Runs(db, 0).CancelRun(h.member, runID))
			// Hung until their timeouts (10 s a request, more a journey) and
			// rerun, the suite's twelve tests would outlast this wait.
			h.waitJob(t, jobID, 30*time.Second)
			a := h.attempt(t, attemptID)
			require.Equal(t, models.ErrorClassCanceled, a.ErrorClass)
			require.Empty(t, h.results(t, attemptID))
			require.Empty(t, h.evaluations(t, attemptID))
		})
	})
}
