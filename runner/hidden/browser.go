package hidden

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/hiddentest"
	"proctor/models"
	"proctor/netguard"
	"proctor/runner/episode"
	"proctor/visual"
)

// JourneyOptions are what a journey needs from its suite and its worker.
type JourneyOptions struct {
	// Viewport is the suite's browser window (EffectiveViewport).
	Viewport hiddentest.Viewport
	// Regions are the suite's declared non-deterministic regions, masked in
	// every checkpoint.
	Regions []hiddentest.Region
	// Guard, when set, must allow the candidate's host before the browser
	// goes there (the SSRF guard request tests use), and carries the restart
	// hook's and health URL's connections when Client is nil.
	Guard *netguard.Guard
	// Proxy, when set, carries every connection of the journey's browser
	// contexts, each dialled through the guard: a candidate whose name
	// answers another address when the browser connects (DNS rebinding) is
	// refused then too.
	Proxy *netguard.Proxy
	// Client calls the restart hook and polls the health URL; nil means
	// NewClient(Guard), or a plain client without a guard (each call is
	// bounded by its step).
	Client *http.Client
	// Record, when set, makes checkpoints record the region's image under the
	// capture's name instead of comparing it: how reference captures are taken
	// by playing the suite against the reference site.
	Record func(name string, img image.Image)
}

// JourneyOptionsFor returns the options a suite's journeys run with.
func JourneyOptionsFor(s *hiddentest.Suite) JourneyOptions {
	return JourneyOptions{Viewport: s.EffectiveViewport(), Regions: s.Regions}
}

// stepGrace is how long past a step's own timeout the executor waits for
// Playwright to give up by itself before it closes the browser contexts.
const stepGrace = 3 * time.Second

// pollInterval is how often assertions and waits evaluated in Go look again.
const pollInterval = 100 * time.Millisecond

// RunJourney plays a browser test's journey in fresh contexts of b against
// the candidate and returns its outcome; it never returns before the test's
// timeout with a hung step, and every problem is an Outcome (Failed or
// Errored with the step named), never a Go error. captures looks up reference
// captures by name.
func RunJourney(ctx context.Context, b playwright.Browser, c Candidate, t *hiddentest.Test, captures func(name string) (image.Image, bool), opts JourneyOptions) Outcome {
	start := time.Now()
	out := Outcome{TestID: t.ID, Started: start}
	var j *journey
	finish := func(result, reason string) Outcome {
		out.Result, out.Reason, out.Duration = result, reason, time.Since(start)
		if j != nil {
			j.mu.Lock()
			out.Checkpoints = slices.Clone(j.checkpoints)
			j.mu.Unlock()
		}
		return out
	}
	if t.Journey == nil || len(t.Journey.Steps) == 0 {
		return finish(Errored, "the test has no journey")
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout())
	defer cancel()
	j = &journey{
		browser: b, cand: c, test: t, opts: opts, captures: captures,
		contexts: map[string]*browserVisitor{},
	}
	switch {
	case j.opts.Client != nil:
	case j.opts.Guard != nil:
		j.opts.Client = NewClient(j.opts.Guard)
	default:
		j.opts.Client = &http.Client{}
	}
	if j.opts.Guard != nil {
		if err := j.opts.Guard.CheckURL(ctx, strings.ReplaceAll(c.BaseURL, VisitorToken, "v")); err != nil {
			return finish(Errored, "the candidate's address is refused: "+models.ErrorMessage(err))
		}
	}
	if j.opts.Viewport.Width == 0 {
		j.opts.Viewport = hiddentest.Viewport{Width: hiddentest.DefaultViewportWidth, Height: hiddentest.DefaultViewportHeight}
	}
	defer j.closeProxyScopes() // after the contexts are closed
	defer j.closeAll()
	if err := j.open(hiddentest.MainContext); err != nil {
		return finish(Errored, "open a browser context: "+err.Error())
	}

	taken := map[string]bool{}
	steps := t.Journey.Steps
	for i := range steps {
		st := &steps[i]
		rec, result, reason := j.runStep(ctx, i, st, taken)
		out.Steps = append(out.Steps, rec)
		if result != Passed {
			return finish(result, reason)
		}
	}
	// A checkpoint no step takes is taken after the last step.
	for k := range t.Checkpoints {
		cp := &t.Checkpoints[k]
		if taken[cp.Capture] {
			continue
		}
		st := &hiddentest.Step{Action: hiddentest.ActionCheckpoint, Capture: cp.Capture}
		rec, result, reason := j.runStep(ctx, len(out.Steps), st, taken)
		out.Steps = append(out.Steps, rec)
		if result != Passed {
			return finish(result, reason)
		}
	}
	return finish(Passed, "")
}

// journey is one test's browser state. Steps run on a goroutine of their own
// so that a hung one can be abandoned; mu guards what the abandoning side
// still touches (the contexts it closes, the checkpoints it reports).
type journey struct {
	mu       sync.Mutex
	browser  playwright.Browser
	cand     Candidate
	test     *hiddentest.Test
	opts     JourneyOptions
	captures func(string) (image.Image, bool)
	contexts map[string]*browserVisitor
	current  *browserVisitor
	// closeScopes close the proxy scopes of the contexts once they are closed.
	closeScopes []func()
	checkpoints []CheckpointRecord
	// escaped is the other origin's URL a redirect took a page to, "" while
	// none has (guarded by mu).
	escaped string
	// compare is what a checkpoint step left to do once the candidate has
	// shown its region: capturing and comparing it (guarded by mu).
	compare func() error
}

// browserVisitor is one named browser context with its own {visitor} token.
type browserVisitor struct {
	bctx playwright.BrowserContext
	page playwright.Page
	base string // the candidate's base URL with this visitor's token
}

// stepError is how a step says whether the candidate is wrong (Failed) or the
// step could not be carried out (Errored).
type stepError struct {
	result string
	msg    string
}

func (e *stepError) Error() string { return e.msg }

func journeyFail(format string, a ...any) error {
	return &stepError{result: Failed, msg: fmt.Sprintf(format, a...)}
}

func journeyError(format string, a ...any) error {
	return &stepError{result: Errored, msg: fmt.Sprintf(format, a...)}
}

// open starts a fresh browser context under name and makes it current.
func (j *journey) open(name string) error {
	base := strings.ReplaceAll(j.cand.BaseURL, VisitorToken, newVisitor())
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the candidate's base URL %q is not an absolute URL", j.cand.BaseURL)
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	proxy, closeScope := episode.ContextProxy(j.opts.Proxy, nil)
	j.mu.Lock()
	j.closeScopes = append(j.closeScopes, closeScope)
	j.mu.Unlock()
	bctx, err := j.browser.NewContext(playwright.BrowserNewContextOptions{
		Viewport:          &playwright.Size{Width: j.opts.Viewport.Width, Height: j.opts.Viewport.Height},
		IgnoreHttpsErrors: playwright.Bool(false),
		ServiceWorkers:    playwright.ServiceWorkerPolicyBlock,
		Proxy:             proxy,
	})
	if err != nil {
		return fmt.Errorf("new context %s: %w", name, err)
	}
	// The journey may load the candidate's origin only: anything else (a CDN,
	// the reference site, the internet) is aborted.
	if err := bctx.Route("**/*", func(rt playwright.Route) {
		if sameOrigin(rt.Request().URL(), origin) {
			_ = rt.Continue()
			return
		}
		_ = rt.Abort("blockedbyclient")
	}); err != nil {
		_ = bctx.Close()
		return fmt.Errorf("route context %s: %w", name, err)
	}
	// Chromium follows a redirect without asking the route again, so a
	// redirect to another origin is only seen here: the journey stops at
	// once, and nothing of that page is kept (no screenshot, no text).
	bctx.OnRequest(func(req playwright.Request) {
		if req.RedirectedFrom() == nil || sameOrigin(req.URL(), origin) {
			return
		}
		j.mu.Lock()
		if j.escaped == "" {
			j.escaped = req.URL()
		}
		j.mu.Unlock()
		go j.closeAll()
	})
	page, err := bctx.NewPage()
	if err != nil {
		_ = bctx.Close()
		return fmt.Errorf("new page in %s: %w", name, err)
	}
	v := &browserVisitor{bctx: bctx, page: page, base: base}
	j.mu.Lock()
	j.contexts[name] = v
	j.current = v
	j.mu.Unlock()
	return nil
}

// sameOrigin reports whether raw is on origin (scheme://host[:port]); data:,
// blob: and about: URLs stay inside the browser and are allowed.
func sameOrigin(raw, origin string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	}
	return strings.ToLower(u.Scheme+"://"+u.Host) == origin
}

// escapedTo is the other origin's URL a redirect took a page to, if any.
func (j *journey) escapedTo() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.escaped
}

func (j *journey) closeAll() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, v := range j.contexts {
		_ = v.bctx.Close()
	}
}

// closeProxyScopes closes the proxy scopes of the journey's contexts.
func (j *journey) closeProxyScopes() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, closeScope := range j.closeScopes {
		closeScope()
	}
}

// runStep runs one step with its timeout, bounded by the test's deadline. A
// step that overruns both (a page that never settles, a hung candidate) is
// abandoned: the contexts are closed so Playwright gives up, and the step
// errors.
func (j *journey) runStep(ctx context.Context, i int, st *hiddentest.Step, taken map[string]bool) (StepRecord, string, string) {
	start := time.Now()
	rec := StepRecord{Index: i, Action: st.Action, Detail: describeStep(st)}
	name := fmt.Sprintf("step %d (%s)", i, strings.TrimSpace(st.Action+" "+rec.Detail))
	end := func(result, reason string) (StepRecord, string, string) {
		rec.Result, rec.Reason, rec.Duration = result, reason, time.Since(start)
		full := ""
		if reason != "" {
			full = name + ": " + reason
		}
		return rec, result, full
	}
	timeout := st.Timeout()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return end(Errored, "the test's time ran out before this step")
	}
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	j.mu.Lock()
	j.compare = nil
	j.mu.Unlock()
	// The step works on its own copy of the record, so an abandoned step
	// never writes into the one returned.
	work := rec
	done := make(chan error, 1)
	go func() { done <- j.do(stepCtx, st, timeout, taken, &work) }()
	// abandon closes the contexts, which makes Playwright's pending calls
	// return, and gives the step a moment to notice.
	abandon := func() {
		cancel()
		j.closeAll()
		select {
		case <-done:
		case <-time.After(stepGrace):
		}
	}
	var err error
	select {
	case err = <-done:
		rec = work
		j.mu.Lock()
		compare := j.compare
		j.compare = nil
		j.mu.Unlock()
		if err == nil && compare != nil {
			err = compare()
		}
	case <-time.After(timeout + stepGrace):
		abandon()
		return end(Errored, fmt.Sprintf("did not finish within %s", timeout.Round(time.Millisecond)))
	case <-ctx.Done():
		abandon()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return end(Errored, fmt.Sprintf("the test did not finish within its %s", j.test.Timeout()))
		}
		return end(Errored, "canceled: "+ctx.Err().Error())
	}
	if escaped := j.escapedTo(); escaped != "" {
		rec.Screenshot = nil
		return end(Errored, fmt.Sprintf("the candidate redirected the page to another origin (%s), which journeys may not load; the test stopped there", escaped))
	}
	if err == nil {
		if st.Action == hiddentest.ActionCheckpoint && rec.Screenshot == nil {
			rec.Screenshot = j.screenshot()
		}
		return end(Passed, "")
	}
	var se *stepError
	if !errors.As(err, &se) {
		se = &stepError{result: Errored, msg: err.Error()}
	}
	if ctx.Err() != nil {
		return end(Errored, fmt.Sprintf("the test did not finish within its %s", j.test.Timeout()))
	}
	rec.Screenshot = j.screenshot()
	return end(se.result, se.msg)
}

// screenshot is a JPEG of the current page's viewport, nil when the page
// cannot give one quickly.
func (j *journey) screenshot() []byte {
	if j.current == nil {
		return nil
	}
	data, err := j.current.page.Screenshot(playwright.PageScreenshotOptions{
		Type: playwright.ScreenshotTypeJpeg, Quality: playwright.Int(70), Timeout: playwright.Float(5000),
	})
	if err != nil {
		return nil
	}
	return data
}

// describeStep is a step's one-line detail: its locator, URL, key or text.
func describeStep(st *hiddentest.Step) string {
	var parts []string
	switch {
	case st.URL != "":
		parts = append(parts, st.URL)
	case st.Matches != "":
		parts = append(parts, "/"+st.Matches+"/")
	}
	if st.Locator != nil {
		parts = append(parts, describeLocator(st.Locator))
	}
	if st.Value != nil {
		parts = append(parts, fmt.Sprintf("%q", *st.Value))
	}
	if st.Key != "" {
		parts = append(parts, st.Key)
	}
	if st.Text != "" {
		parts = append(parts, fmt.Sprintf("%q", st.Text))
	}
	if st.Context != "" {
		parts = append(parts, st.Context)
	}
	if st.Capture != "" {
		parts = append(parts, st.Capture)
	}
	if a := st.Expect; a != nil {
		s := a.Kind
		if a.Locator != nil {
			s += " " + describeLocator(a.Locator)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// describeLocator writes a locator the way a reason names it.
func describeLocator(l *hiddentest.Locator) string {
	var s string
	switch {
	case l.Role != "" && l.Name != "":
		s = fmt.Sprintf("role=%s name=%q", l.Role, l.Name)
	case l.Role != "":
		s = "role=" + l.Role
	case l.Text != "":
		s = fmt.Sprintf("text=%q", l.Text)
	case l.Label != "":
		s = fmt.Sprintf("label=%q", l.Label)
	case l.Placeholder != "":
		s = fmt.Sprintf("placeholder=%q", l.Placeholder)
	case l.TestID != "":
		s = fmt.Sprintf("test_id=%q", l.TestID)
	default:
		s = "css=" + l.CSS
	}
	if l.Nth != nil {
		s += fmt.Sprintf(" nth=%d", *l.Nth)
	}
	return s
}

// locate maps a suite locator onto Playwright's (docs/hidden-tests.md).
func locate(p playwright.Page, l *hiddentest.Locator) playwright.Locator {
	var loc playwright.Locator
	exact := playwright.Bool(l.Exact)
	switch {
	case l.Role != "":
		o := playwright.PageGetByRoleOptions{}
		if l.Name != "" {
			o.Name, o.Exact = l.Name, exact
		}
		loc = p.GetByRole(playwright.AriaRole(l.Role), o)
	case l.Text != "":
		loc = p.GetByText(l.Text, playwright.PageGetByTextOptions{Exact: exact})
	case l.Label != "":
		loc = p.GetByLabel(l.Label, playwright.PageGetByLabelOptions{Exact: exact})
	case l.Placeholder != "":
		loc = p.GetByPlaceholder(l.Placeholder, playwright.PageGetByPlaceholderOptions{Exact: exact})
	case l.TestID != "":
		loc = p.GetByTestId(l.TestID)
	default:
		loc = p.Locator(l.CSS)
	}
	if l.Nth != nil {
		loc = loc.Nth(*l.Nth)
	}
	return loc
}

// actionError turns a Playwright error of an action on an element into a
// step error: an element that never became actionable is the candidate's
// fault (Failed), a closed page or browser is not (Errored).
func actionError(what string, l *hiddentest.Locator, err error) error {
	switch {
	case errors.Is(err, playwright.ErrTimeout):
		return journeyFail("could not %s %s: no such element became ready in time", what, describeLocator(l))
	case strings.Contains(err.Error(), "strict mode violation"):
		return journeyFail("could not %s %s: several elements match it", what, describeLocator(l))
	case errors.Is(err, playwright.ErrTargetClosed):
		return journeyError("could not %s %s: the page closed", what, describeLocator(l))
	}
	return journeyFail("could not %s %s: %s", what, describeLocator(l), headLine(err.Error()))
}

// navError turns a navigation's error into a step error: the candidate did
// not deliver a loaded page, so the test could not go on.
func navError(what string, timeout time.Duration, err error) error {
	if errors.Is(err, playwright.ErrTimeout) {
		return journeyError("%s did not finish loading within %s", what, timeout.Round(time.Millisecond))
	}
	return journeyError("%s failed: %s", what, headLine(err.Error()))
}

func headLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func millis(d time.Duration) *float64 { return playwright.Float(float64(d.Milliseconds())) }

// do carries out one step.
func (j *journey) do(ctx context.Context, st *hiddentest.Step, timeout time.Duration, taken map[string]bool, rec *StepRecord) error {
	v := j.current
	p := v.page
	tms := millis(timeout)
	switch st.Action {
	case hiddentest.ActionGoto:
		target := hiddentest.JoinURL(v.base, st.URL)
		resp, err := p.Goto(target, playwright.PageGotoOptions{Timeout: tms, WaitUntil: playwright.WaitUntilStateLoad})
		if err != nil {
			return navError("loading "+st.URL, timeout, err)
		}
		if resp != nil {
			rec.Detail += fmt.Sprintf(" → %d", resp.Status())
		}
		return nil
	case hiddentest.ActionReload:
		if _, err := p.Reload(playwright.PageReloadOptions{Timeout: tms, WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
			return navError("reloading the page", timeout, err)
		}
		return nil
	case hiddentest.ActionClick:
		if err := locate(p, st.Locator).Click(playwright.LocatorClickOptions{Timeout: tms}); err != nil {
			return actionError("click", st.Locator, err)
		}
		return nil
	case hiddentest.ActionFill:
		if err := locate(p, st.Locator).Fill(*st.Value, playwright.LocatorFillOptions{Timeout: tms}); err != nil {
			return actionError("fill", st.Locator, err)
		}
		return nil
	case hiddentest.ActionSelect:
		// Playwright matches a plain string against each option's value, then its label.
		if _, err := locate(p, st.Locator).SelectOption(playwright.SelectOptionValues{Values: &[]string{*st.Value}}, playwright.LocatorSelectOptionOptions{Timeout: tms}); err != nil {
			return actionError(fmt.Sprintf("select %q in", *st.Value), st.Locator, err)
		}
		return nil
	case hiddentest.ActionCheck:
		if err := locate(p, st.Locator).Check(playwright.LocatorCheckOptions{Timeout: tms}); err != nil {
			return actionError("check", st.Locator, err)
		}
		return nil
	case hiddentest.ActionUncheck:
		if err := locate(p, st.Locator).Uncheck(playwright.LocatorUncheckOptions{Timeout: tms}); err != nil {
			return actionError("uncheck", st.Locator, err)
		}
		return nil
	case hiddentest.ActionSubmit:
		// requestSubmit runs validation and the submit event, as pressing the
		// form's submit button would.
		const submit = `el => { const f = el.form || el.closest('form') || el;
			if (!(f instanceof HTMLFormElement)) return false;
			f.requestSubmit ? f.requestSubmit() : f.submit(); return true; }`
		ok, err := locate(p, st.Locator).Evaluate(submit, nil, playwright.LocatorEvaluateOptions{Timeout: tms})
		if err != nil {
			return actionError("submit the form of", st.Locator, err)
		}
		if ok != true {
			return journeyFail("%s belongs to no form", describeLocator(st.Locator))
		}
		return nil
	case hiddentest.ActionPress:
		if st.Locator != nil {
			if err := locate(p, st.Locator).Press(st.Key, playwright.LocatorPressOptions{Timeout: tms}); err != nil {
				return actionError("press "+st.Key+" on", st.Locator, err)
			}
			return nil
		}
		if err := p.Keyboard().Press(st.Key); err != nil {
			return journeyError("press %s: %s", st.Key, headLine(err.Error()))
		}
		return nil
	case hiddentest.ActionWaitForText:
		return j.waitForText(ctx, st)
	case hiddentest.ActionWaitForURL:
		return j.waitForURL(ctx, st, timeout)
	case hiddentest.ActionExpect:
		return j.expect(ctx, st.Expect)
	case hiddentest.ActionCheckpoint:
		taken[st.Capture] = true
		return j.checkpoint(st.Capture, timeout)
	case hiddentest.ActionRestart:
		return j.restart(ctx)
	case hiddentest.ActionNewContext:
		if _, ok := j.contexts[st.Context]; ok {
			return journeyError("a browser context named %q is already open", st.Context)
		}
		if err := j.open(st.Context); err != nil {
			return journeyError("%s", err.Error())
		}
		return nil
	case hiddentest.ActionSwitchContext:
		next, ok := j.contexts[st.Context]
		if !ok {
			return journeyError("no browser context named %q is open", st.Context)
		}
		j.current = next
		return nil
	}
	return journeyError("unknown action %q", st.Action)
}

// poll evaluates check until it reports done or ctx ends; it returns the
// last thing check found, for the reason.
func pollUntil(ctx context.Context, check func() (bool, string)) (bool, string) {
	var found string
	for {
		ok, f := check()
		if ok {
			return true, f
		}
		found = f
		select {
		case <-ctx.Done():
			return false, found
		case <-time.After(pollInterval):
		}
	}
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// waitForText waits until the text shows in the page (or in the element).
func (j *journey) waitForText(ctx context.Context, st *hiddentest.Step) error {
	p := j.current.page
	want := normalizeSpace(st.Text)
	scope := p.Locator("body")
	where := "the page"
	if st.Locator != nil {
		scope, where = locate(p, st.Locator), describeLocator(st.Locator)
	}
	ok, _ := pollUntil(ctx, func() (bool, string) {
		txt, err := scope.InnerText(playwright.LocatorInnerTextOptions{Timeout: playwright.Float(1000)})
		return err == nil && strings.Contains(normalizeSpace(txt), want), ""
	})
	if !ok {
		return journeyFail("the text %q did not appear in %s", st.Text, where)
	}
	return nil
}

// waitForURL waits until the page's URL relative to the base equals or
// matches the step's, then for the page to load.
func (j *journey) waitForURL(ctx context.Context, st *hiddentest.Step, timeout time.Duration) error {
	v := j.current
	m := hiddentest.TextMatch{Matches: st.Matches}
	if st.URL != "" {
		m = hiddentest.TextMatch{Equals: &st.URL}
	}
	ok, found := pollUntil(ctx, func() (bool, string) {
		rel := hiddentest.RelativeURL(v.base, v.page.URL())
		return m.Match(rel), rel
	})
	if !ok {
		return journeyFail("the URL is %q, expected it %s", found, m.Describe())
	}
	if err := v.page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: millis(timeout)}); err != nil {
		return navError("the page at "+found, timeout, err)
	}
	return nil
}

// expect retries an assertion until it holds or the step's time is up.
func (j *journey) expect(ctx context.Context, a *hiddentest.Assertion) error {
	p := j.current.page
	short := playwright.Float(1000)
	var loc playwright.Locator
	if a.Locator != nil {
		loc = locate(p, a.Locator)
	}
	// one reads what the assertion looks at; a strict-mode violation or a
	// missing element is reported as what was found.
	one := func(read func() (string, error)) (string, bool) {
		n, err := loc.Count()
		switch {
		case err != nil:
			return "an error: " + headLine(err.Error()), false
		case n == 0:
			return "no matching element", false
		case n > 1:
			return fmt.Sprintf("%d matching elements", n), false
		}
		s, err := read()
		if err != nil {
			return "an error: " + headLine(err.Error()), false
		}
		return s, true
	}
	var check func() (bool, string)
	var want string
	switch a.Kind {
	case hiddentest.AssertVisible:
		want = "visible"
		check = func() (bool, string) {
			found, ok := one(func() (string, error) {
				vis, err := loc.IsVisible()
				if vis {
					return "visible", err
				}
				return "present but not visible", err
			})
			return ok && found == "visible", found
		}
	case hiddentest.AssertHidden:
		want = "no visible match"
		check = func() (bool, string) {
			all, err := loc.All()
			if err != nil {
				return false, "an error: " + headLine(err.Error())
			}
			visible := 0
			for _, e := range all {
				if vis, err := e.IsVisible(); err == nil && vis {
					visible++
				}
			}
			return visible == 0, fmt.Sprintf("%d visible", visible)
		}
	case hiddentest.AssertText:
		want = "text " + a.Describe()
		check = func() (bool, string) {
			found, ok := one(func() (string, error) {
				s, err := loc.TextContent(playwright.LocatorTextContentOptions{Timeout: short})
				return fmt.Sprintf("%q", normalizeSpace(s)), err
			})
			return ok && a.Match(unquoteFound(found)), found
		}
	case hiddentest.AssertValue:
		want = "value " + a.Describe()
		check = func() (bool, string) {
			found, ok := one(func() (string, error) {
				s, err := loc.InputValue(playwright.LocatorInputValueOptions{Timeout: short})
				return fmt.Sprintf("%q", s), err
			})
			return ok && a.Match(unquoteFound(found)), found
		}
	case hiddentest.AssertAttribute:
		want = "attribute " + a.Name + " present"
		if d := a.Describe(); d != "" {
			want = "attribute " + a.Name + " " + d
		}
		check = func() (bool, string) {
			var present bool
			found, ok := one(func() (string, error) {
				v, err := loc.Evaluate(`(el, name) => el.getAttribute(name)`, a.Name, playwright.LocatorEvaluateOptions{Timeout: short})
				s, isStr := v.(string)
				present = isStr
				if !isStr {
					return "no attribute " + a.Name, err
				}
				return fmt.Sprintf("%q", s), err
			})
			return ok && present && a.Match(unquoteFound(found)), found
		}
	case hiddentest.AssertCount:
		want = fmt.Sprintf("%d matching elements", *a.Count)
		check = func() (bool, string) {
			n, err := loc.Count()
			if err != nil {
				return false, "an error: " + headLine(err.Error())
			}
			return n == *a.Count, fmt.Sprintf("%d", n)
		}
	case hiddentest.AssertURL:
		want = "URL " + a.Describe()
		check = func() (bool, string) {
			rel := hiddentest.RelativeURL(j.current.base, p.URL())
			return a.Match(rel), fmt.Sprintf("%q", rel)
		}
	case hiddentest.AssertTitle:
		want = "title " + a.Describe()
		check = func() (bool, string) {
			s, err := p.Title()
			if err != nil {
				return false, "an error: " + headLine(err.Error())
			}
			return a.Match(s), fmt.Sprintf("%q", s)
		}
	default:
		return journeyError("unknown assertion %q", a.Kind)
	}
	ok, found := pollUntil(ctx, check)
	if ok {
		return nil
	}
	subject := ""
	if a.Locator != nil {
		subject = describeLocator(a.Locator) + ": "
	}
	return journeyFail("%sexpected %s, found %s", subject, want, found)
}

// unquoteFound undoes the %q the readers above put around what they found.
func unquoteFound(s string) string {
	if out, err := strconv.Unquote(s); err == nil {
		return out
	}
	return s
}

// restart calls the candidate's restart hook, then waits for its health URL
// to answer 2xx within the step's time.
func (j *journey) restart(ctx context.Context) error {
	if j.cand.RestartURL == "" {
		return journeyError("%s", NoRestartHookReason)
	}
	limit := time.Until(deadlineOr(ctx, time.Now()))
	status, why := callRestartHook(ctx, j.opts.Client, j.expand(j.cand.RestartURL), limit)
	switch {
	case why != "":
		return journeyError("%s", why)
	case status/100 != 2:
		return journeyError("the restart hook answered %d", status)
	}
	health := j.cand.HealthURL
	if health == "" {
		health = j.cand.BaseURL
	}
	if w := waitHealthy(ctx, j.opts.Client, j.expand(health), limit); !w.ok {
		return journeyError("the candidate did not come back after the restart (health: %s)", w.last)
	}
	return nil
}

// deadlineOr is ctx's deadline, or def without one.
func deadlineOr(ctx context.Context, def time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return def
}

// expand puts the main context's {visitor} token into a hook URL.
func (j *journey) expand(raw string) string {
	if !strings.Contains(raw, VisitorToken) {
		return raw
	}
	main := j.contexts[hiddentest.MainContext]
	prefix, suffix, _ := strings.Cut(j.cand.BaseURL, VisitorToken)
	token := strings.TrimSuffix(strings.TrimPrefix(main.base, prefix), suffix)
	return strings.ReplaceAll(raw, VisitorToken, token)
}

// checkpoint waits for the checkpoint's region to be shown and leaves
// capturing it, and comparing it with the reference capture or recording
// it, to runStep once the step's timer is over (captureAndCompare).
func (j *journey) checkpoint(capture string, timeout time.Duration) error {
	var cp *hiddentest.Checkpoint
	for k := range j.test.Checkpoints {
		if j.test.Checkpoints[k].Capture == capture {
			cp = &j.test.Checkpoints[k]
		}
	}
	if cp == nil {
		return journeyError("the test has no checkpoint %q", capture)
	}
	cr := CheckpointRecord{Capture: capture, Threshold: cp.EffectiveThreshold()}
	var reference image.Image
	if j.opts.Record == nil {
		ref, ok := (image.Image)(nil), false
		if j.captures != nil {
			ref, ok = j.captures(capture)
		}
		if !ok || ref == nil {
			cr.Reason = fmt.Sprintf("reference capture %s is missing", capture)
			j.addCheckpoint(cr)
			return journeyError("reference capture %s is missing", capture)
		}
		reference = ref
	}
	region := locate(j.current.page, &cp.Region)
	// The candidate must show the region within the step's time. Capturing
	// and comparing it is Proctor's work: it runs after the step's timer
	// (runStep), with a time of its own, so that a busy worker's slow
	// screenshots and comparisons are not charged to the candidate.
	if err := region.WaitFor(playwright.LocatorWaitForOptions{State: playwright.WaitForSelectorStateVisible, Timeout: millis(timeout)}); err != nil {
		err = actionError("screenshot", &cp.Region, err)
		cr.Reason = err.Error()
		j.addCheckpoint(cr)
		return err
	}
	j.mu.Lock()
	j.compare = func() error { return j.captureAndCompare(cp, region, reference, cr) }
	j.mu.Unlock()
	return nil
}

// captureTimeout bounds each browser call of a checkpoint's capture: the
// region's screenshot and its masks' boxes.
const captureTimeout = 30 * time.Second

// captureAndCompare screenshots a checkpoint's region (shown, as checkpoint
// saw) and records it, or compares it with the reference beside the masks.
func (j *journey) captureAndCompare(cp *hiddentest.Checkpoint, region playwright.Locator, reference image.Image, cr CheckpointRecord) error {
	shot, err := region.Screenshot(playwright.LocatorScreenshotOptions{
		Type: playwright.ScreenshotTypePng, Timeout: millis(captureTimeout), Animations: playwright.ScreenshotAnimationsDisabled,
	})
	if err != nil {
		err = actionError("screenshot", &cp.Region, err)
		cr.Reason = err.Error()
		j.addCheckpoint(cr)
		return err
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return journeyError("decode the region's screenshot: %v", err)
	}
	if j.opts.Record != nil {
		j.opts.Record(cp.Capture, img)
		return nil
	}
	masks, err := j.masks(region, cp, reference.Bounds(), captureTimeout)
	if err != nil {
		return journeyError("%v", err)
	}
	cr.Candidate = shot
	cr.Reference = pngBytes(reference)
	res, err := visual.Compare(img, reference, visual.Options{Threshold: cr.Threshold, Masks: masks})
	if err != nil {
		cr.Reason = "the images could not be compared: " + err.Error()
		j.addCheckpoint(cr)
		return journeyError("%s", cr.Reason)
	}
	cr.Score, cr.SSIM, cr.Passed = res.Score, res.SSIM, res.Passed
	if res.Map != nil {
		cr.Map = pngBytes(res.Map.Heat())
	}
	if !res.Passed {
		cr.Reason = fmt.Sprintf("the region scored %.3f against the reference, below %.2f", res.Score, cr.Threshold)
	}
	j.addCheckpoint(cr)
	if !res.Passed {
		return journeyFail("%s", cr.Reason)
	}
	return nil
}

func (j *journey) addCheckpoint(cr CheckpointRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.checkpoints = append(j.checkpoints, cr)
}

// masks are the boxes of the suite's regions and the checkpoint's masks that
// fall in the region, relative to its top-left corner and scaled to the
// reference's size (Compare's masks are in reference coordinates).
func (j *journey) masks(region playwright.Locator, cp *hiddentest.Checkpoint, ref image.Rectangle, timeout time.Duration) ([]image.Rectangle, error) {
	rb, err := region.BoundingBox(playwright.LocatorBoundingBoxOptions{Timeout: millis(timeout)})
	if err != nil || rb == nil {
		return nil, fmt.Errorf("the region has no box: %v", err)
	}
	sx := float64(ref.Dx()) / rb.Width
	sy := float64(ref.Dy()) / rb.Height
	locs := make([]*hiddentest.Locator, 0, len(j.opts.Regions)+len(cp.Masks))
	for k := range j.opts.Regions {
		locs = append(locs, &j.opts.Regions[k].Locator)
	}
	for k := range cp.Masks {
		locs = append(locs, &cp.Masks[k])
	}
	bounds := image.Rect(0, 0, ref.Dx(), ref.Dy())
	var out []image.Rectangle
	for _, l := range locs {
		all, err := locate(j.current.page, l).All()
		if err != nil {
			continue
		}
		for _, e := range all {
			b, err := e.BoundingBox()
			if err != nil || b == nil {
				continue
			}
			r := image.Rect(
				int((b.X-rb.X)*sx), int((b.Y-rb.Y)*sy),
				int((b.X-rb.X+b.Width)*sx+0.999), int((b.Y-rb.Y+b.Height)*sy+0.999),
			).Intersect(bounds)
			if !r.Empty() {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func pngBytes(img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil
	}
	return buf.Bytes()
}
