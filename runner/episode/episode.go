// Package episode runs one benchmark task in Chromium for one agent: a fresh
// browser context with HAR recording and a navigation allowlist, then the
// observe → persist → ask → act loop until the agent answers or stops, or a
// budget runs out. It owns the per-worker Browser as well.
package episode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/eval"
	"proctor/models"
	"proctor/netguard"
	"proctor/storage/artifact"
)

// Agent is what an episode needs from an agent client; proctor/runner/agent
// implements it. Every error Step returns is charged to the agent.
type Agent interface {
	// Step answers one observation with one action.
	Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error)
	// WantsScreenshot says whether observations carry the screenshot.
	WantsScreenshot() bool
}

// StepSink persists the steps of an attempt.
type StepSink interface {
	// SaveStep stores one finished step; its artifacts are already stored.
	// The episode's persister calls it, in step order and from one
	// goroutine, beside the episode's loop.
	SaveStep(ctx context.Context, s *models.Step) error
}

// Budget limits an episode. Zero fields take the Default… values.
type Budget struct {
	MaxSteps     int
	MaxDuration  time.Duration
	MaxAgentCall time.Duration
	MaxCost      *float64 // nil: no cost limit
}

// Budget defaults, used when a Budget field is zero.
const (
	DefaultMaxSteps     = 30
	DefaultMaxDuration  = 10 * time.Minute
	DefaultMaxAgentCall = 2 * time.Minute
)

// Episode is one try of one task by one agent.
type Episode struct {
	RunID, AttemptID int64
	Task             models.StepTask // goal; start URLs already resolved to real URLs
	// AllowedOrigins are the scheme://host[:port] origins, each optionally with
	// a path prefix (http://127.0.0.1:8080/sandbox/a42t1/), the browser may
	// load; every other request is blocked and noted on the step.
	AllowedOrigins []string
	// Proxy, when set, carries every connection of the episode's browser
	// context: the allowed origins' hosts are let through, any other host
	// must resolve to public addresses when it is connected to.
	Proxy     *netguard.Proxy
	Agent     Agent
	Budget    Budget
	Artifacts artifact.Store
	Prefix    string // artifact key prefix of this try, e.g. runs/12/attempts/345/try-1
	Steps     StepSink
	Logger    *slog.Logger // nil: discard
	// Probes are read from the live browser after the agent's last step,
	// before the context closes, into Result.PageState (original WebArena's
	// program_html; eval/webarena.Probes lists a task's). They are read when
	// the agent finished or ran out of budget, time or replies, not after a
	// cancellation or an environment or platform failure. They are not
	// steps, but a probe that opens a page does so in the episode's context,
	// so its requests appear at the end of the HAR: give probes only to
	// benchmarks whose evaluator does not read the HAR (WebArena-Verified's
	// network checks, which look at the last matching request, would see them).
	Probes []eval.PageProbe
}

// Result is how an episode ended. ErrorClass is empty when the agent
// answered or stopped.
type Result struct {
	Final        *models.Action // the answer or stop; nil when the episode ended otherwise
	Steps        int            // steps saved
	Usage        models.Usage   // summed over the agent's replies
	ErrorClass   string         // "" or one of models.ErrorClass…
	ErrorMessage string
	HARKey       string // artifact key of the stored HAR; empty if it could not be stored
	Duration     time.Duration
	// PageState is the active tab's final URL and the probes' values, read
	// at the end of the episode; nil when the episode ended in a way that
	// leaves nothing to read (see Episode.Probes).
	PageState *eval.PageState
}

// Timeouts of browser operations. They are short so that a missing element
// costs the agent one step, not the episode; each is also cut to the time
// left in the episode.
const (
	actionTimeout     = 5 * time.Second
	navigationTimeout = 15 * time.Second
	loadWaitTimeout   = 5 * time.Second
	screenshotTimeout = 10 * time.Second
	evaluateTimeout   = 10 * time.Second // the accessibility text script
	pageCallTimeout   = 2 * time.Second  // a tab's title
	// hardStopGrace is how long past the time budget a stuck browser call
	// may run before the context is closed under it.
	hardStopGrace = 10 * time.Second
	// agentGrace is how long an agent that ignores its context may overrun
	// before the episode stops waiting for it.
	agentGrace = time.Second
	// closeTimeout bounds closing the context (Playwright writes the HAR).
	closeTimeout = 30 * time.Second
	// cleanupTimeout bounds closing the context and storing the HAR after a
	// cancellation or a platform failure.
	cleanupTimeout = 5 * time.Second
	// downloadWait is how long the end of an episode waits for unfinished
	// downloads before closing the context.
	downloadWait = 5 * time.Second
)

// Observation settings.
const (
	viewportWidth          = 1280
	viewportHeight         = 800
	screenshotQuality      = 70
	thumbnailWidth         = 320
	maxAXTreeLines         = 2000
	maxConsecutiveFailures = 5
)

// Run plays ep in a fresh context of b and reports how it ended.
//
// Agent-caused endings (agent errors, invalid-action loops, off-site loops),
// budgets and environment failures (a start URL that does not load) come back
// as a Result with ErrorClass set and a nil error. A Go error means the
// platform failed (artifact store, step sink, browser); the Result returned
// with it holds what happened so far. When ctx is cancelled Run stops within
// a couple of seconds and returns ctx.Err(), storing the HAR on a best-effort
// basis.
func Run(ctx context.Context, b *Browser, ep Episode) (*Result, error) {
	start := time.Now()
	res := &Result{}
	err := run(ctx, b, ep, res)
	res.Duration = time.Since(start)
	return res, err
}

func run(ctx context.Context, b *Browser, ep Episode, res *Result) error {
	if err := ep.check(b); err != nil {
		return err
	}
	ep.Budget = ep.Budget.withDefaults()
	if ep.Logger == nil {
		ep.Logger = slog.New(slog.DiscardHandler)
	}
	allow, err := newAllowlist(ep.AllowedOrigins)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "proctor-episode-")
	if err != nil {
		return fmt.Errorf("episode temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	r := &runner{
		ep:       ep,
		browser:  b.browser,
		log:      ep.Logger.With("run_id", ep.RunID, "attempt_id", ep.AttemptID),
		allow:    allow,
		res:      res,
		start:    time.Now(),
		seen:     map[playwright.Page]bool{},
		closed:   make(chan struct{}),
		harPath:  filepath.Join(tmp, "network.har"),
		nextElem: 1,
	}
	r.deadline = r.start.Add(ep.Budget.MaxDuration)
	r.downloads.log = r.log.Warn

	proxy, closeScope := ContextProxy(ep.Proxy, allow.hosts())
	defer closeScope()
	bctx, err := b.browser.NewContext(playwright.BrowserNewContextOptions{
		Viewport:         &playwright.Size{Width: viewportWidth, Height: viewportHeight},
		AcceptDownloads:  playwright.Bool(true),
		RecordHarPath:    playwright.String(r.harPath),
		RecordHarContent: playwright.HarContentPolicyEmbed,
		RecordHarMode:    playwright.HarModeFull,
		ServiceWorkers:   playwright.ServiceWorkerPolicyBlock,
		Proxy:            proxy,
	})
	if err != nil {
		return fmt.Errorf("open browser context: %w", err)
	}
	r.bctx = bctx
	// A cancelled run or a stopping worker closes the context at once, which
	// makes any browser call in flight fail fast; the loop then sees ctx.Err().
	stop := context.AfterFunc(ctx, r.closeContext)
	// Browser calls are cut to the time left, but a page can still hang one
	// that takes no timeout; past the budget and a grace, close the context.
	hard := time.AfterFunc(time.Until(r.deadline)+hardStopGrace, r.closeContext)
	r.persist = newPersister(ctx, ep.Artifacts, ep.Steps, ep.AttemptID)
	loopErr := r.setup(ctx)
	if loopErr == nil {
		loopErr = r.loop(ctx)
	}
	// Every step handed to the persister is stored before the episode ends;
	// a failure to store one fails the episode as a platform error.
	saved, persistErr := r.persist.drain()
	res.Steps = saved
	if loopErr == nil {
		loopErr = persistErr
	}
	hard.Stop()
	stop()
	if ctx.Err() != nil {
		loopErr = ctx.Err()
	}
	finErr := r.finish(ctx, loopErr)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case loopErr != nil:
		if finErr != nil {
			r.log.Warn("episode cleanup failed", "err", finErr)
		}
		return loopErr
	}
	return finErr
}

// check refuses an episode that is missing a part, before anything starts.
func (ep Episode) check(b *Browser) error {
	var errs []error
	if b == nil {
		errs = append(errs, errors.New("no browser"))
	}
	if ep.Agent == nil {
		errs = append(errs, errors.New("no agent"))
	}
	if ep.Artifacts == nil {
		errs = append(errs, errors.New("no artifact store"))
	}
	if ep.Steps == nil {
		errs = append(errs, errors.New("no step sink"))
	}
	if err := artifact.ValidateKey(ep.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("artifact prefix: %w", err))
	}
	if len(ep.AllowedOrigins) == 0 {
		errs = append(errs, errors.New("no allowed origins"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("episode for attempt %d: %w", ep.AttemptID, err)
	}
	return nil
}

func (b Budget) withDefaults() Budget {
	if b.MaxSteps <= 0 {
		b.MaxSteps = DefaultMaxSteps
	}
	if b.MaxDuration <= 0 {
		b.MaxDuration = DefaultMaxDuration
	}
	if b.MaxAgentCall <= 0 {
		b.MaxAgentCall = DefaultMaxAgentCall
	}
	return b
}

// runner is the state of one running episode. Only the episode's goroutine
// touches it, except where a field says otherwise.
type runner struct {
	ep       Episode
	browser  playwright.Browser
	log      *slog.Logger
	allow    *allowlist
	res      *Result
	start    time.Time
	deadline time.Time

	bctx     playwright.BrowserContext
	page     playwright.Page // the active tab
	seen     map[playwright.Page]bool
	nextElem int // the next element id number, shared by all pages of the episode

	blocked   blockedLog  // written by Playwright's goroutines
	downloads downloads   // written by Playwright's goroutines
	navs      navigations // written by Playwright's goroutines

	persist *persister // stores the steps beside the loop

	harPath   string
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// setup opens the context's routes and event handlers and the start pages.
// A start URL that does not load ends the episode as an environment error.
func (r *runner) setup(ctx context.Context) error {
	if err := r.bctx.Route("**/*", r.route); err != nil {
		return fmt.Errorf("install request allowlist: %w", err)
	}
	if err := r.bctx.RouteWebSocket("**/*", r.routeWebSocket); err != nil {
		return fmt.Errorf("install websocket allowlist: %w", err)
	}
	r.bctx.OnPage(r.navs.watch)
	r.bctx.OnDownload(func(d playwright.Download) {
		r.navs.land(d.Page())
		r.downloads.start(d)
	})
	r.bctx.OnDialog(func(d playwright.Dialog) {
		// Agents cannot see dialogs, and an open one freezes the page: accept
		// it, as a user confirming would. Accept is a round trip, which must
		// not run on Playwright's event goroutine.
		r.log.Info("dialog accepted", "type", d.Type(), "message", d.Message())
		go func() { _ = d.Accept() }()
	})
	r.bctx.SetDefaultTimeout(float64(actionTimeout.Milliseconds()))
	r.bctx.SetDefaultNavigationTimeout(float64(navigationTimeout.Milliseconds()))

	urls := r.ep.Task.StartURLs
	if len(urls) == 0 {
		urls = []string{"about:blank"}
	}
	var first playwright.Page
	for _, u := range urls {
		if !r.allow.allows(u) {
			r.end(models.ErrorClassPlatform, fmt.Sprintf("start URL %s is not under the benchmark's allowed origins", u))
			return nil
		}
		page, err := r.bctx.NewPage()
		if err != nil {
			return fmt.Errorf("open tab: %w", err)
		}
		r.seen[page] = true
		if first == nil {
			first = page
		}
		resp, err := page.Goto(u, playwright.PageGotoOptions{
			Timeout:   r.timeout(navigationTimeout),
			WaitUntil: playwright.WaitUntilStateDomcontentloaded,
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if r.timeUp() {
				// The episode's own time ran out while the page loaded.
				r.end(models.ErrorClassTimeout, fmt.Sprintf("time limit of %s exceeded while loading the start URL", r.ep.Budget.MaxDuration))
				return nil
			}
			r.end(models.ErrorClassEnvironment, fmt.Sprintf("start URL %s did not load: %s", u, cleanError(err)))
			return nil
		}
		if resp != nil && resp.Status() >= 500 {
			r.end(models.ErrorClassEnvironment, fmt.Sprintf("start URL %s answered HTTP %d", u, resp.Status()))
			return nil
		}
	}
	r.page = first
	if len(urls) > 1 {
		_ = first.BringToFront()
	}
	return nil
}

// end records how the episode ended.
func (r *runner) end(class, msg string) {
	r.res.ErrorClass, r.res.ErrorMessage = class, msg
}

// ended reports whether setup or the loop already decided the outcome.
func (r *runner) ended() bool { return r.res.ErrorClass != "" || r.res.Final != nil }

// loop runs the steps. Each step goes:
//
//  1. observe the active tab (URL, title, tabs, accessibility text,
//     screenshot, downloads, last action's error);
//  2. wait until the previous step's row is committed (it was written while
//     this step was observed, so this rarely waits), then hand the
//     screenshot and accessibility text to the persister, which makes the
//     thumbnail and stores the three as artifacts while the agent thinks;
//  3. ask the agent;
//  4. act;
//  5. hand the Step row to the persister, once, with the observation, the
//     action, the thought, the timings, tokens and cost; it is committed
//     after the step's artifacts are stored, while the next step is observed.
//
// So a crash loses at most the step in flight: no step's artifacts are
// stored before every earlier row is committed, so only the last step can
// have artifacts and no row. Its artifacts are overwritten when the attempt
// restarts under the same prefix, or orphaned under a new one.
//
// Step timings: ObserveMS covers 1–2 (Proctor's own overhead per step, with
// any wait for the persister), AgentMS 3, ActMS 4 including the wait for the
// page's DOM, and PersistMS how long the persister took over the step's
// artifacts, beside the agent.
func (r *runner) loop(ctx context.Context) error {
	if r.ended() {
		return nil
	}
	b := r.ep.Budget
	lastErr := ""
	failures := 0
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.persist.failed(); err != nil {
			return err
		}
		if r.timeUp() {
			r.end(models.ErrorClassTimeout, fmt.Sprintf("time limit of %s exceeded", b.MaxDuration))
			return nil
		}
		if i >= b.MaxSteps {
			r.end(models.ErrorClassBudget, fmt.Sprintf("step budget of %d exhausted", b.MaxSteps))
			return nil
		}

		t0 := time.Now()
		obs, step, err := r.observe(ctx, i, lastErr)
		if err != nil {
			var unobservable *unobservableError
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case r.timeUp():
				r.end(models.ErrorClassTimeout, fmt.Sprintf("time limit of %s exceeded", b.MaxDuration))
				return nil
			case errors.As(err, &unobservable):
				r.end(models.ErrorClassEnvironment, "the page could not be observed: "+cleanError(err))
				return nil
			}
			return err
		}
		step.ObserveMS = time.Since(t0).Milliseconds()

		t1 := time.Now()
		resp, err := r.ask(ctx, i, obs)
		step.AgentMS = time.Since(t1).Milliseconds()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if r.timeUp() {
				r.end(models.ErrorClassTimeout, fmt.Sprintf("time limit of %s exceeded while waiting for the agent", b.MaxDuration))
			} else {
				r.end(models.ErrorClassAgent, err.Error())
			}
			return r.save(ctx, step)
		}
		r.record(step, resp)

		// The reply that crosses the cost budget is recorded but not acted
		// on, even an answer: the budget is a hard limit.
		if b.MaxCost != nil && r.res.Usage.Cost > *b.MaxCost {
			r.end(models.ErrorClassBudget, fmt.Sprintf("cost budget of %g exceeded (spent %g)", *b.MaxCost, r.res.Usage.Cost))
			return r.save(ctx, step)
		}
		action := resp.Action
		verr := action.Validate()
		if verr == nil && action.Final() {
			r.res.Final = &action
			return r.save(ctx, step)
		}

		t2 := time.Now()
		if verr != nil {
			lastErr = "invalid action: " + verr.Error()
		} else {
			lastErr = r.act(ctx, action)
		}
		step.ActMS = time.Since(t2).Milliseconds()
		if err := ctx.Err(); err != nil {
			return err // the action was cut short: the step in flight is lost
		}
		if err := r.save(ctx, step); err != nil {
			return err
		}
		if lastErr == "" {
			failures = 0
			continue
		}
		failures++
		if failures >= maxConsecutiveFailures && !r.timeUp() {
			r.end(models.ErrorClassAgent, fmt.Sprintf("%d actions in a row failed; the last: %s", failures, lastErr))
			return nil
		}
	}
}

// record copies the agent's reply onto the step and the totals.
func (r *runner) record(step *models.Step, resp *models.StepResponse) {
	step.Action = mustJSON(resp.Action)
	step.Thought = resp.Thought
	step.TokensIn, step.TokensOut, step.Cost = resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.Cost
	r.res.Usage.InputTokens += resp.Usage.InputTokens
	r.res.Usage.OutputTokens += resp.Usage.OutputTokens
	r.res.Usage.Cost += resp.Usage.Cost
}

// save hands the step row, with the requests blocked since the last one, to
// the persister; the step ends now, which its row's time records (the row
// itself is written later, beside the next step).
func (r *runner) save(ctx context.Context, step *models.Step) error {
	if urls := r.blocked.take(); len(urls) > 0 {
		step.BlockedRequests = mustJSON(urls)
	}
	step.CreatedAt = time.Now().UTC()
	return r.persist.row(ctx, step)
}

// ask sends the observation to the agent with the per-call time limit. An
// agent that ignores its context is abandoned shortly after the limit.
func (r *runner) ask(ctx context.Context, i int, obs models.Observation) (*models.StepResponse, error) {
	b := r.ep.Budget
	left := time.Until(r.deadline)
	req := &models.StepRequest{
		Protocol:    models.AgentProtocol,
		RunID:       r.ep.RunID,
		AttemptID:   r.ep.AttemptID,
		Step:        i,
		Task:        r.ep.Task,
		Observation: obs,
		Budget:      models.Budget{StepsLeft: b.MaxSteps - i, SecondsLeft: max(0, left.Seconds())},
	}
	if b.MaxCost != nil {
		c := max(0, *b.MaxCost-r.res.Usage.Cost)
		req.Budget.CostLeft = &c
	}
	epCtx, cancelEp := context.WithDeadline(ctx, r.deadline)
	defer cancelEp()
	callCtx, cancel := context.WithTimeout(epCtx, b.MaxAgentCall)
	defer cancel()

	type reply struct {
		resp *models.StepResponse
		err  error
	}
	ch := make(chan reply, 1)
	go func() {
		resp, err := r.ep.Agent.Step(callCtx, req)
		ch <- reply{resp, err}
	}()
	var rep reply
	select {
	case rep = <-ch:
	case <-callCtx.Done():
		grace := time.NewTimer(agentGrace)
		defer grace.Stop()
		select {
		case rep = <-ch:
		case <-grace.C:
			rep.err = fmt.Errorf("agent did not answer step %d within %s", i, min(b.MaxAgentCall, left).Round(time.Millisecond))
		}
	}
	if rep.err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(rep.err, context.DeadlineExceeded) && epCtx.Err() == nil {
			return nil, fmt.Errorf("agent did not answer step %d within %s: %w", i, b.MaxAgentCall, rep.err)
		}
		return nil, rep.err
	}
	if rep.resp == nil {
		return nil, fmt.Errorf("agent gave no reply at step %d", i)
	}
	return rep.resp, nil
}

// timeUp reports whether the episode's time budget is spent.
func (r *runner) timeUp() bool { return !time.Now().Before(r.deadline) }

// timeout returns d, cut to the episode's remaining time, in Playwright's
// milliseconds.
func (r *runner) timeout(d time.Duration) *float64 {
	d = min(d, time.Until(r.deadline))
	return playwright.Float(float64(max(d, time.Millisecond).Milliseconds()))
}

// settle waits, briefly, for the active tab to finish loading before the
// episode ends: an agent may answer right after the action that opened its
// final page, and the network check reads that page's response from the HAR,
// which a context closed mid-load could leave without it.
func (r *runner) settle() {
	if r.page == nil || r.page.IsClosed() {
		return
	}
	_ = r.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{
		State:   playwright.LoadStateLoad,
		Timeout: r.timeout(loadWaitTimeout),
	})
}

// closeContext closes the browser context once; Playwright writes the HAR
// then. Later callers wait for the first close to finish.
func (r *runner) closeContext() {
	r.closeOnce.Do(func() {
		// Close the tabs first: Playwright's HAR recorder waits for a script it
		// runs in each page, which can hang on Chromium's error page until the
		// page closes, and closing the context would then hang in the HAR export.
		for _, p := range r.bctx.Pages() {
			_ = p.Close()
		}
		r.closeErr = r.bctx.Close()
		close(r.closed)
	})
	<-r.closed
}

// finish stores the last downloads, reads the page state, closes the context
// and stores the HAR.
// After a cancellation or a platform failure it only tries, briefly, with a
// fresh timeout.
func (r *runner) finish(ctx context.Context, loopErr error) error {
	clean := loopErr == nil && ctx.Err() == nil
	if clean {
		r.settle()
		if _, err := r.downloads.collect(ctx, r.ep.Artifacts, r.ep.Prefix, downloadWait); err != nil {
			return err
		}
		// After the downloads, so that a probe's page cannot pass for one.
		if probeable(r.res) {
			r.res.PageState = r.readPageState(ctx)
		}
	}
	wait := closeTimeout
	if !clean {
		wait = cleanupTimeout
	}
	closed := make(chan struct{})
	go func() { r.closeContext(); close(closed) }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		return fmt.Errorf("close browser context: not closed within %s", wait)
	}
	if r.closeErr != nil {
		return fmt.Errorf("close browser context: %w", r.closeErr)
	}
	sctx := ctx
	if !clean {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
	}
	key := r.ep.Prefix + "/network.har"
	if err := storeHAR(sctx, r.ep.Artifacts, key, r.harPath); err != nil {
		return err
	}
	r.res.HARKey = key
	return nil
}
