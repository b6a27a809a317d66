package episode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mxschmitt/playwright-go"

	"proctor/eval"
	"proctor/models"
)

// Limits of the page probes read at the end of an episode. They run after the
// episode's own time budget may be spent, so they have their own.
const (
	// probeNavigationTimeout bounds opening a probe's URL.
	probeNavigationTimeout = 15 * time.Second
	// probeSettleTimeout bounds waiting for a probed page's network to go idle
	// after its load event, for pages that render their content with scripts
	// (WebArena waits three seconds there).
	probeSettleTimeout = 3 * time.Second
	// probeEvaluateTimeout bounds one locator; a locator may open a window
	// and wait for it (see eval/webarena's probe.js).
	probeEvaluateTimeout = 20 * time.Second
	// probesTimeout bounds all probes of an episode together.
	probesTimeout = 2 * time.Minute
	// maxProbeValue caps one value. Whole-page HTML of a shop's admin page can
	// pass a megabyte, so the cap leaves room for that.
	maxProbeValue = 4 << 20
)

// wholePageText is what an empty locator reads: the page's visible text.
const wholePageText = `document.body ? document.body.innerText : ""`

// probeable reports whether an episode that ended as recorded in res is worth
// reading: one the agent finished, or ran out of budget or time on, or
// abandoned with an error. Environment and platform failures leave nothing
// the agent did to read.
func probeable(res *Result) bool {
	switch res.ErrorClass {
	case "", models.ErrorClassBudget, models.ErrorClassTimeout, models.ErrorClassAgent:
		return true
	}
	return false
}

// readPageState records the active tab's URL and then reads every probe.
// Probe failures are recorded on the probe, never returned.
func (r *runner) readPageState(ctx context.Context) *eval.PageState {
	// A cancellation while probing closes the context, which cuts any call in
	// flight short (the episode loop's own hook is gone by now).
	stop := context.AfterFunc(ctx, r.closeContext)
	defer stop()

	ps := &eval.PageState{Probes: []eval.ProbeResult{}}
	// The active tab is the one the agent would observe next: a tab its last
	// action opened counts, as it would in a browser.
	if err := r.syncTabs(); err == nil && r.page != nil {
		ps.FinalURL = r.page.URL()
	}
	deadline := time.Now().Add(probesTimeout)
	for _, p := range r.ep.Probes {
		res := eval.ProbeResult{PageProbe: p}
		left := time.Until(deadline)
		switch {
		case ctx.Err() != nil:
			res.Error = "not read: the episode was canceled"
		case left <= 0:
			res.Error = fmt.Sprintf("not read: the probes' time limit of %s was spent", probesTimeout)
		default:
			res.Value, res.Error = r.probe(p, left)
		}
		ps.Probes = append(ps.Probes, res)
	}
	return ps
}

// probe reads one value: on the active tab for URL "" or "last", otherwise on
// a new tab of the same context (same cookies) opened at the URL, which must
// be under the allowed origins. It returns the value or why it could not be read.
func (r *runner) probe(p eval.PageProbe, left time.Duration) (string, string) {
	until := time.Now().Add(left)
	ms := func(d time.Duration) *float64 {
		d = min(d, time.Until(until))
		return playwright.Float(float64(max(d, time.Millisecond).Milliseconds()))
	}
	page := r.page
	if p.URL != "" && p.URL != "last" {
		if !r.allow.allows(p.URL) {
			return "", fmt.Sprintf("probe URL %s is outside the benchmark's allowed origins; it was not fetched", p.URL)
		}
		tab, err := r.bctx.NewPage()
		if err != nil {
			return "", "open a tab for the probe: " + cleanError(err)
		}
		defer func() { _ = tab.Close() }()
		resp, err := tab.Goto(p.URL, playwright.PageGotoOptions{Timeout: ms(probeNavigationTimeout), WaitUntil: playwright.WaitUntilStateLoad})
		if err != nil {
			return "", fmt.Sprintf("open %s: %s", p.URL, cleanError(err))
		}
		if resp != nil && resp.Status() >= 500 {
			// A failing site is no page state of the agent's: a 4xx page is
			// read (the agent may have deleted what it shows), a 5xx is not.
			return "", fmt.Sprintf("open %s: the site answered HTTP %d", p.URL, resp.Status())
		}
		_ = tab.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateNetworkidle, Timeout: ms(probeSettleTimeout)})
		page = tab
	} else {
		if page == nil || page.IsClosed() {
			return "", "no tab is open"
		}
		_ = page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad, Timeout: ms(loadWaitTimeout)})
	}
	expr := p.Locator
	if strings.TrimSpace(expr) == "" {
		expr = wholePageText
	}
	v, err := bounded(min(probeEvaluateTimeout, max(time.Until(until), time.Millisecond)), func() (any, error) {
		return page.Evaluate(expr)
	})
	if err != nil {
		return "", "evaluate the locator: " + cleanError(err)
	}
	return probeValue(v)
}

// probeValue turns what a locator returned into the recorded string: a string
// as it is, anything else as JSON, cut to maxProbeValue with a note.
func probeValue(v any) (string, string) {
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Sprintf("the locator's %T value cannot be recorded: %v", v, err)
		}
		s = string(b)
	}
	if len(s) <= maxProbeValue {
		return s, ""
	}
	cut := maxProbeValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], fmt.Sprintf("value truncated to its first %d of %d bytes", cut, len(s))
}
