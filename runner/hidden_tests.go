package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/riverqueue/river"

	"proctor/hiddentest"
	"proctor/models"
	"proctor/runner/hidden"
)

// hiddenTestsWorker runs one hidden-tests attempt (HiddenTestsArgs): the
// task's suite against the team's candidate website.
type hiddenTestsWorker struct {
	river.WorkerDefaults[HiddenTestsArgs]
	r *Runner
}

// Time limits of a hidden-tests job.
const (
	// hiddenTestsCap bounds the tests of one task together, however large
	// its suite: tests still waiting when it runs out end errored.
	hiddenTestsCap = 2 * time.Hour
	// hiddenJobMargin is the job's time beyond its tests: starting the
	// browser, storing the images and recording the results.
	hiddenJobMargin = 2 * time.Minute
	// hiddenSaveMargin is kept back from the job's deadline for recording
	// the results once the tests' budget has run out.
	hiddenSaveMargin = time.Minute
)

// Timeout is the attempt's suite's time budget plus a margin (hiddenPlan), so
// that a job whose worker died is rescued once it has outlived it, and a
// live one never hangs a worker. A suite that cannot be read gets only the
// margin: its job merely records the error.
func (w *hiddenTestsWorker) Timeout(job *river.Job[HiddenTestsArgs]) time.Duration {
	ctx, cancel := context.WithTimeout(models.WithActor(context.Background(), models.SystemActor()), 10*time.Second)
	defer cancel()
	raw, err := w.r.db.HiddenSuite(ctx, job.Args.AttemptID)
	if err != nil {
		// Unknown now (the database is busy, say): the most any suite gets.
		return hiddenTestsCap + hiddenJobMargin
	}
	suite, err := hiddentest.Parse(strings.NewReader(raw))
	if err != nil {
		return hiddenJobMargin
	}
	return planHiddenTests(suite).jobTimeout()
}

// Work runs the attempt's suite against its candidate and records every
// test's result with the attempt's evaluation. A job that finds the attempt
// done or its run ended does nothing; a run canceled meanwhile stops the
// tests and records nothing; a worker shutting down hands the attempt back
// for the job's next try. The attempt ends in error only when no test can
// run at all: its suite cannot be read or it has no candidate.
func (w *hiddenTestsWorker) Work(ctx context.Context, job *river.Job[HiddenTestsArgs]) error {
	r := w.r
	ctx = models.WithActor(ctx, models.SystemActor())
	spec, err := r.db.HiddenTask(ctx, job.Args.AttemptID)
	if models.ErrorCode(err) == models.ENOTFOUND {
		return river.JobCancel(err) // the attempt is gone: nothing to run
	}
	if err != nil {
		return err
	}
	if spec.Finished() {
		return nil
	}
	log := r.log.With("run_id", spec.Run.ID, "attempt_id", spec.Attempt.ID)
	if spec.Candidate == nil {
		return r.endHiddenAttempt(ctx, spec, "The attempt has no candidate website to test.")
	}
	suite, err := hiddentest.Parse(strings.NewReader(spec.Task.EvalSpec))
	if err != nil {
		// The problems name the suite's hidden paths: they go to the log only.
		log.Error("hidden-test suite unreadable", "task", spec.Task.ExternalID, "error", err.Error())
		return r.endHiddenAttempt(ctx, spec, "The task's hidden-test suite cannot be read; an administrator can see why in the server's log.")
	}
	if r.guard == nil {
		return r.platformFailure(ctx, job, spec.Attempt.ID, spec.Attempt.Tries, errors.New("the runner has no SSRF guard to reach candidates through"), log)
	}
	var browser playwright.Browser
	if slices.ContainsFunc(suite.Tests, func(t hiddentest.Test) bool { return t.Group == hiddentest.GroupBrowser }) {
		b, err := r.sharedBrowser()
		if err != nil {
			return r.platformFailure(ctx, job, spec.Attempt.ID, spec.Attempt.Tries, err, log)
		}
		browser = b.Playwright()
	}
	try, status, err := r.db.StartHiddenAttempt(ctx, spec.Attempt.ID, r.queue.claimant())
	switch {
	case err != nil:
		return err
	case status == models.ClaimWait:
		return river.JobSnooze(2 * time.Second) // the team runs its share
	case status != models.ClaimOK:
		return nil
	}
	defer r.queue.holdAttempt(spec.Attempt.ID)()
	log = log.With("try", try)
	prefix := attemptPrefix(spec.Run.ID, spec.Attempt.ID, try)
	r.removeEarlierHiddenTries(ctx, spec, prefix, log)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go r.watchCancellation(runCtx, cancel, spec.Run.ID, nil)
	exec := &hiddenExecution{
		r: r, suite: suite, prefix: prefix, browser: browser,
		candidate: hidden.Candidate{BaseURL: spec.Candidate.BaseURL, RestartURL: spec.Candidate.RestartURL, HealthURL: spec.Candidate.HealthURL},
		captures:  decodeCaptures(spec.Captures, log),
		client:    hidden.NewClient(r.guard),
	}
	start := time.Now()
	results, err := exec.answeredRun(runCtx, r.opts.CandidateAnswerLimit)
	if errors.Is(context.Cause(runCtx), errRunCanceled) {
		return nil // canceling the run already closed its attempts
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: hand the attempt back for the job's next try,
			// which starts over.
			_ = r.db.ReleaseAttempt(context.WithoutCancel(ctx), spec.Attempt.ID, try)
			return err
		}
		return r.platformFailure(ctx, job, spec.Attempt.ID, try, err, log)
	}
	finished, err := r.db.SaveHiddenResults(ctx, spec.Attempt.ID, models.HiddenOutcome{
		Try: try, Results: results, InputsChecksum: hiddenInputsChecksum(spec), Duration: time.Since(start),
	}, r.queue.insertMetricsRefresh)
	if err != nil {
		return err
	}
	summary := models.SummarizeHiddenResults(results)
	log.Info("hidden tests finished", "passed", summary.Overall.Passed, "total", summary.Overall.Total,
		"duration_ms", time.Since(start).Milliseconds())
	if finished {
		log.Info("run completed")
	}
	return nil
}

// endHiddenAttempt ends an attempt none of whose tests can run in error,
// with why.
func (r *Runner) endHiddenAttempt(ctx context.Context, spec *models.HiddenTaskSpec, why string) error {
	_, err := r.db.SaveHiddenResults(ctx, spec.Attempt.ID, models.HiddenOutcome{Try: spec.Attempt.Tries, Error: why},
		r.queue.insertMetricsRefresh)
	return err
}

// hiddenPlatformError is what an attempt the platform could not test says.
const hiddenPlatformError = "The platform could not run this attempt's tests; an administrator can see why in the server's log."

// platformFailure handles a failure of the platform (the browser would not
// start, an image the store refused): the attempt goes back to pending for
// the job's next try, or, on the job's last try, ends in error so that its
// run still completes.
func (r *Runner) platformFailure(ctx context.Context, job *river.Job[HiddenTestsArgs], attemptID int64, try int, err error, log *slog.Logger) error {
	log.Error("hidden tests failed in the platform", "error", err.Error(), "job_attempt", job.Attempt)
	if job.Attempt < job.MaxAttempts {
		if rerr := r.db.ReleaseAttempt(ctx, attemptID, try); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, serr := r.db.SaveHiddenResults(ctx, attemptID, models.HiddenOutcome{Try: try, Error: hiddenPlatformError}, r.queue.insertMetricsRefresh)
	return serr
}

// attemptPrefix is where an attempt's try keeps its artifacts.
func attemptPrefix(runID, attemptID int64, try int) string {
	return fmt.Sprintf("runs/%d/attempts/%d/try-%d", runID, attemptID, try)
}

// removeEarlierHiddenTries deletes the images an interrupted earlier try of
// the attempt stored: its result rows are replaced, so nothing points at
// them any more. Best effort: a leftover image is only wasted space.
func (r *Runner) removeEarlierHiddenTries(ctx context.Context, spec *models.HiddenTaskSpec, current string, log *slog.Logger) {
	if spec.Attempt.Tries == 0 {
		return
	}
	stored, err := r.artifacts.List(ctx, fmt.Sprintf("runs/%d/attempts/%d/", spec.Run.ID, spec.Attempt.ID))
	if err != nil {
		log.Warn("list the images of earlier tries", "error", err.Error())
		return
	}
	for _, a := range stored {
		if strings.HasPrefix(a.Key, current+"/") || !strings.Contains(a.Key, "/hidden/") {
			continue
		}
		if err := r.artifacts.Delete(ctx, a.Key); err != nil {
			log.Warn("delete an image of an earlier try", "key", a.Key, "error", err.Error())
		}
	}
}

// decodeCaptures decodes the task's reference captures by name. One that
// does not decode is left out, so that its checkpoints error as missing.
func decodeCaptures(caps []models.ReferenceCapture, log *slog.Logger) map[string]image.Image {
	out := make(map[string]image.Image, len(caps))
	for _, c := range caps {
		img, err := png.Decode(bytes.NewReader(c.PNG))
		if err != nil {
			log.Error("reference capture unreadable", "capture", c.Name, "error", err.Error())
			continue
		}
		out[c.Name] = img
	}
	return out
}

// hiddenInputsChecksum is the SHA-256 of what the tests read: the suite,
// each reference capture's digest and the candidate's URLs.
func hiddenInputsChecksum(spec *models.HiddenTaskSpec) string {
	h := sha256.New()
	hashPart(h, "suite", []byte(spec.Task.EvalSpec))
	for _, c := range spec.Captures {
		hashPart(h, "capture", []byte(c.Name+"|"+c.SHA256))
	}
	c := spec.Candidate
	hashPart(h, "candidate", []byte(c.BaseURL+"|"+c.RestartURL+"|"+c.HealthURL))
	return hex.EncodeToString(h.Sum(nil))
}

// hiddenPlan is how a suite's tests are scheduled: those that restart the
// candidate run alone, one after the other, once the others are done (a
// candidate that does not come back then harms no other test); the others
// run Parallelism at a time.
type hiddenPlan struct {
	shared      []int // positions in the suite
	alone       []int
	parallelism int
	budget      time.Duration // for all tests, reruns included
}

// planHiddenTests schedules a suite and derives its time budget: every test
// may take its timeout twice (a failed test runs again), the shared tests
// spread over the parallel slots (plus the longest, for the last slot to
// fill), the restarting ones one after the other; hiddenTestsCap at most.
func planHiddenTests(s *hiddentest.Suite) hiddenPlan {
	p := hiddenPlan{parallelism: s.EffectiveParallelism()}
	var shared, alone, longest time.Duration
	for i := range s.Tests {
		t := &s.Tests[i]
		d := 2 * t.Timeout()
		if t.RestartsCandidate() {
			p.alone = append(p.alone, i)
			alone += d
			continue
		}
		p.shared = append(p.shared, i)
		shared += d
		longest = max(longest, d)
	}
	p.budget = min(alone+shared/time.Duration(p.parallelism)+longest, hiddenTestsCap)
	return p
}

// jobTimeout is the job's time limit: the tests' budget and the margin.
func (p hiddenPlan) jobTimeout() time.Duration { return p.budget + hiddenJobMargin }

// errHiddenBudget ends the tests of a task whose time budget ran out.
var errHiddenBudget = errors.New("the task's time budget for hidden tests ran out")

// hiddenExecution is one try of an attempt's suite.
type hiddenExecution struct {
	r         *Runner
	suite     *hiddentest.Suite
	candidate hidden.Candidate
	captures  map[string]image.Image
	browser   playwright.Browser // nil when the suite has no browser tests
	client    *http.Client
	prefix    string // the try's artifact prefix
}

// run runs every test of the suite, each through hidden.Decide, within the
// plan's budget (and before the job's deadline), storing each test's images
// as it finishes, and returns one result per test in suite order. A test the
// budget left no time for ends errored. The error is the platform's (an image
// that could not be stored) or ctx's.
func (e *hiddenExecution) run(ctx context.Context) ([]models.HiddenTestResult, error) {
	plan := planHiddenTests(e.suite)
	deadline := time.Now().Add(plan.budget)
	if d, ok := ctx.Deadline(); ok && d.Add(-hiddenSaveMargin).Before(deadline) {
		deadline = d.Add(-hiddenSaveMargin)
	}
	budget := time.Until(deadline)
	budgetCtx, cancel := context.WithDeadlineCause(ctx, deadline, errHiddenBudget)
	defer cancel()
	// An image the store refused stops the tests: the try is lost anyway.
	testCtx, stop := context.WithCancelCause(budgetCtx)
	defer stop(nil)

	results := make([]models.HiddenTestResult, len(e.suite.Tests))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		storeErr error
	)
	// Shared tests hold the read side; a restarting test the write side, so
	// that it starts only once every other test is done and none starts
	// before it ends.
	var exclusive sync.RWMutex
	slots := make(chan struct{}, plan.parallelism)
	launch := func(i int, alone bool) {
		defer wg.Done()
		if alone {
			defer exclusive.Unlock()
		} else {
			defer func() { <-slots; exclusive.RUnlock() }()
		}
		res, err := e.runTest(ctx, testCtx, i)
		mu.Lock()
		defer mu.Unlock()
		results[i] = res
		if err != nil && storeErr == nil {
			storeErr = err
			stop(err)
		}
	}
	started := make([]bool, len(e.suite.Tests))
	for _, group := range []struct {
		positions []int
		alone     bool
	}{{plan.shared, false}, {plan.alone, true}} {
		for _, i := range group.positions {
			if group.alone {
				exclusive.Lock()
			} else {
				slots <- struct{}{}
				exclusive.RLock()
			}
			if testCtx.Err() != nil {
				if group.alone {
					exclusive.Unlock()
				} else {
					exclusive.RUnlock()
					<-slots
				}
				break
			}
			started[i] = true
			wg.Add(1)
			go launch(i, group.alone)
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if storeErr != nil {
		return nil, storeErr
	}
	for i := range results {
		if !started[i] {
			results[i] = e.unstarted(i, fmt.Sprintf("%s (%s for the whole suite)", errHiddenBudget, budget.Round(time.Second)))
		}
	}
	return results, nil
}

// answeredRun runs the suite when the candidate answers at its base URL
// within limit; otherwise no test runs and each ends errored with why, so
// that a candidate that is down or never answers does not hold the job for
// the suite's whole budget. The error is run's, or ctx's.
func (e *hiddenExecution) answeredRun(ctx context.Context, limit time.Duration) ([]models.HiddenTestResult, error) {
	ok, why := hidden.Answers(ctx, e.client, e.candidate, limit)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if ok {
		return e.run(ctx)
	}
	results := make([]models.HiddenTestResult, len(e.suite.Tests))
	for i := range results {
		results[i] = e.unstarted(i, "the candidate did not answer at its base URL: "+why)
	}
	return results, nil
}

// runTest runs the suite's test at position i under testCtx and stores its
// images under ctx (which outlives the tests' budget).
func (e *hiddenExecution) runTest(ctx, testCtx context.Context, i int) (models.HiddenTestResult, error) {
	t := &e.suite.Tests[i]
	v := hidden.Decide(testCtx, t.ID, func(ctx context.Context) hidden.Outcome {
		switch t.Group {
		case hiddentest.GroupRequest:
			return hidden.RunRequest(ctx, e.client, e.candidate, t)
		case hiddentest.GroupSystem:
			return hidden.RunSystem(ctx, e.client, e.candidate, t)
		}
		opts := hidden.JourneyOptionsFor(e.suite)
		opts.Guard, opts.Client, opts.Proxy = e.r.guard, e.client, e.r.browserProxy()
		return hidden.RunJourney(ctx, e.browser, e.candidate, t, e.capture, opts)
	})
	res := models.HiddenTestResult{
		TestID: t.ID, Position: i, Group: t.Group, Level: t.Level, Result: v.Result, Flaky: v.Flaky,
	}
	runs := make([]models.HiddenTestRun, len(v.Runs))
	for n, o := range v.Runs {
		run, err := e.storeRun(ctx, t.ID, n+1, o)
		if err != nil {
			return res, err
		}
		runs[n] = run
		res.DurationMS += run.DurationMS
		res.Reason = o.Reason
	}
	if res.Result == hidden.Errored && errors.Is(context.Cause(testCtx), errHiddenBudget) {
		res.Reason = strings.TrimSpace(res.Reason + " (" + errHiddenBudget.Error() + ")")
	}
	raw, err := json.Marshal(runs)
	if err != nil {
		return res, fmt.Errorf("encode runs of test %s: %w", t.ID, err)
	}
	res.Runs = string(raw)
	return res, nil
}

// capture looks up a reference capture by name.
func (e *hiddenExecution) capture(name string) (image.Image, bool) {
	img, ok := e.captures[name]
	return img, ok
}

// unstarted is the result of a test that never started, for why: errored,
// since the candidate was to be tested and the reason (it did not answer,
// its tests used up their time) is the candidate's. It is not HiddenNotRun,
// which is kept for tests this platform cannot carry out at all.
func (e *hiddenExecution) unstarted(i int, why string) models.HiddenTestResult {
	t := &e.suite.Tests[i]
	return models.HiddenTestResult{
		TestID: t.ID, Position: i, Group: t.Group, Level: t.Level, Result: models.HiddenErrored,
		Reason: "did not start: " + why, Runs: "[]",
	}
}

// storeRun stores one run's step screenshots and checkpoint images and
// returns the run as its result row keeps it, the images by key.
func (e *hiddenExecution) storeRun(ctx context.Context, testID string, n int, o hidden.Outcome) (models.HiddenTestRun, error) {
	run := models.HiddenTestRun{
		Result: o.Result, Reason: o.Reason, StartedAt: o.Started.UTC(), DurationMS: o.Duration.Milliseconds(),
		Steps: make([]models.HiddenTestStep, len(o.Steps)),
	}
	dir := fmt.Sprintf("%s/hidden/%s/run-%d", e.prefix, testID, n)
	for k, st := range o.Steps {
		step := models.HiddenTestStep{
			Index: st.Index, Action: st.Action, Detail: st.Detail, Result: st.Result, Reason: st.Reason,
			DurationMS: st.Duration.Milliseconds(),
		}
		var err error
		if step.ScreenshotKey, err = e.put(ctx, fmt.Sprintf("%s/step-%03d.jpg", dir, st.Index), st.Screenshot, "image/jpeg"); err != nil {
			return run, err
		}
		run.Steps[k] = step
	}
	for k, cp := range o.Checkpoints {
		rec := models.HiddenTestCheckpoint{
			Capture: cp.Capture, Score: cp.Score, SSIM: cp.SSIM, Threshold: cp.Threshold, Passed: cp.Passed, Reason: cp.Reason,
		}
		base := fmt.Sprintf("%s/checkpoint-%02d-%s", dir, k, cp.Capture)
		var err error
		if rec.CandidateKey, err = e.put(ctx, base+"-candidate.png", cp.Candidate, "image/png"); err != nil {
			return run, err
		}
		if rec.ReferenceKey, err = e.put(ctx, base+"-reference.png", cp.Reference, "image/png"); err != nil {
			return run, err
		}
		if rec.MapKey, err = e.put(ctx, base+"-map.png", cp.Map, "image/png"); err != nil {
			return run, err
		}
		run.Checkpoints = append(run.Checkpoints, rec)
	}
	return run, nil
}

// put stores an image under key before any row points at it; "" for none.
func (e *hiddenExecution) put(ctx context.Context, key string, data []byte, contentType string) (string, error) {
	if len(data) == 0 {
		return "", nil
	}
	if err := e.r.artifacts.Put(ctx, key, bytes.NewReader(data), int64(len(data)), contentType); err != nil {
		return "", fmt.Errorf("store %s: %w", key, err)
	}
	return key, nil
}
