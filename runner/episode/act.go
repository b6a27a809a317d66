package episode

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/models"
)

// elementIDPattern is the shape of the ids axtree.js hands out.
var elementIDPattern = regexp.MustCompile(`^e[0-9]{1,9}$`)

// act executes a valid, non-final action on the active tab and returns the
// error to show the agent in the next observation ("" when it worked). A
// failed action never ends the episode by itself.
func (r *runner) act(ctx context.Context, a models.Action) string {
	r.blocked.takeNavigations() // blocked before this action: not its doing
	page := r.page
	before := r.navs.of(page)
	msg := r.do(a)
	started := r.navs.started(page, before)
	if msg != "" && !strings.HasPrefix(msg, "blocked:") {
		msg = a.Type + " failed: " + msg
	}
	if ctx.Err() != nil {
		return msg
	}
	// A navigation the action started lands before the page is observed. A
	// click or key press that started one took effect: an error it reports
	// is Playwright's own wait for that page running out, not a failure.
	landed := r.navs.settleAfter(page, before, min(loadWaitTimeout, time.Until(r.deadline)))
	if started && landed && (a.Type == models.ActClick || a.Type == models.ActPress) && !strings.HasPrefix(msg, "blocked:") {
		msg = ""
	}
	if !r.page.IsClosed() {
		r.waitLoad(r.page)
	}
	if navs := r.blocked.takeNavigations(); len(navs) > 0 {
		if msg == "" {
			msg = offSite(navs[0])
		}
		// The refused navigation left Chromium's error page in the tab; go
		// back so the agent stays where it was, as for a refused goto.
		if !r.page.IsClosed() && strings.HasPrefix(r.page.URL(), "chrome-error:") {
			_, _ = r.page.GoBack(playwright.PageGoBackOptions{Timeout: r.timeout(navigationTimeout), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		}
	}
	return msg
}

// wait waits for a text to appear or disappear on the active tab, for at
// most a's seconds (the action timeout when none are given), or for a's
// seconds; always within the episode's time.
func (r *runner) wait(a models.Action) string {
	d := time.Duration(a.Seconds * float64(time.Second))
	if a.Text != "" || a.TextGone != "" {
		text, state := a.Text, playwright.WaitForSelectorStateVisible
		if text == "" {
			text, state = a.TextGone, playwright.WaitForSelectorStateHidden
		}
		if d <= 0 {
			d = actionTimeout
		}
		err := r.page.GetByText(text).First().WaitFor(playwright.LocatorWaitForOptions{State: state, Timeout: r.timeout(d)})
		return errText(err)
	}
	t := time.NewTimer(min(d, time.Until(r.deadline)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.closed:
	}
	return ""
}

// offSite is the error for a navigation the allowlist refused.
func offSite(u string) string {
	return fmt.Sprintf("blocked: %s is not one of the benchmark's sites", u)
}

// do performs the action; see act.
func (r *runner) do(a models.Action) string {
	p := r.page
	switch a.Type {
	case models.ActClick, models.ActHover:
		if x, y, ok := point(a.Target); ok {
			if msg := inViewport(x, y); msg != "" {
				return msg
			}
			if a.Type == models.ActHover {
				return errText(p.Mouse().Move(x, y))
			}
			return errText(p.Mouse().Click(x, y))
		}
		loc, msg := r.locate(a.Target)
		if msg != "" {
			return msg
		}
		if a.Type == models.ActHover {
			return errText(loc.Hover(playwright.LocatorHoverOptions{Timeout: r.timeout(actionTimeout)}))
		}
		return errText(loc.Click(playwright.LocatorClickOptions{Timeout: r.timeout(actionTimeout)}))

	case models.ActFill:
		loc, msg := r.locate(a.Target)
		if msg != "" {
			return msg
		}
		return errText(loc.Fill(a.Text, playwright.LocatorFillOptions{Timeout: r.timeout(actionTimeout)}))

	case models.ActSelect:
		loc, msg := r.locate(a.Target)
		if msg != "" {
			return msg
		}
		values := a.Values
		_, err := loc.SelectOption(playwright.SelectOptionValues{ValuesOrLabels: &values},
			playwright.LocatorSelectOptionOptions{Timeout: r.timeout(actionTimeout)})
		return errText(err)

	case models.ActPress:
		if a.Target == nil {
			return errText(p.Keyboard().Press(a.Key))
		}
		if x, y, ok := point(a.Target); ok {
			if msg := inViewport(x, y); msg != "" {
				return msg
			}
			if err := p.Mouse().Click(x, y); err != nil {
				return errText(err)
			}
			return errText(p.Keyboard().Press(a.Key))
		}
		loc, msg := r.locate(a.Target)
		if msg != "" {
			return msg
		}
		return errText(loc.Press(a.Key, playwright.LocatorPressOptions{Timeout: r.timeout(actionTimeout)}))

	case models.ActScroll:
		// The wheel scrolls whatever is under the mouse: the target, or the
		// middle of the viewport (the page) when there is none.
		x, y := float64(viewportWidth)/2, float64(viewportHeight)/2
		if a.Target != nil {
			if px, py, ok := point(a.Target); ok {
				if msg := inViewport(px, py); msg != "" {
					return msg
				}
				x, y = px, py
			} else {
				loc, msg := r.locate(a.Target)
				if msg != "" {
					return msg
				}
				if err := loc.Hover(playwright.LocatorHoverOptions{Timeout: r.timeout(actionTimeout)}); err != nil {
					return errText(err)
				}
				return errText(p.Mouse().Wheel(a.DeltaX, a.DeltaY))
			}
		}
		if err := p.Mouse().Move(x, y); err != nil {
			return errText(err)
		}
		return errText(p.Mouse().Wheel(a.DeltaX, a.DeltaY))

	case models.ActGoto:
		u, msg := r.resolve(a.URL)
		if msg != "" {
			return msg
		}
		_, err := p.Goto(u, playwright.PageGotoOptions{Timeout: r.timeout(navigationTimeout), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		return errText(err)

	case models.ActWait:
		return r.wait(a)

	case models.ActGoBack:
		_, err := p.GoBack(playwright.PageGoBackOptions{Timeout: r.timeout(navigationTimeout), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		return errText(err)

	case models.ActGoForward:
		_, err := p.GoForward(playwright.PageGoForwardOptions{Timeout: r.timeout(navigationTimeout), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		return errText(err)

	case models.ActNewTab:
		target := ""
		if a.URL != "" {
			u, msg := r.resolve(a.URL)
			if msg != "" {
				return msg
			}
			target = u
		}
		np, err := r.bctx.NewPage()
		if err != nil {
			return errText(err)
		}
		r.seen[np] = true
		r.page = np
		if target == "" {
			return ""
		}
		_, err = np.Goto(target, playwright.PageGotoOptions{Timeout: r.timeout(navigationTimeout), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		return errText(err)

	case models.ActSwitchTab:
		pages := r.bctx.Pages()
		if *a.Tab >= len(pages) {
			return fmt.Sprintf("no tab %d: %d tabs are open (0 to %d)", *a.Tab, len(pages), len(pages)-1)
		}
		r.page = pages[*a.Tab]
		return errText(r.page.BringToFront())

	case models.ActCloseTab:
		pages := r.bctx.Pages()
		if *a.Tab >= len(pages) {
			return fmt.Sprintf("no tab %d: %d tabs are open (0 to %d)", *a.Tab, len(pages), len(pages)-1)
		}
		if len(pages) == 1 {
			return "cannot close the last tab"
		}
		closing := pages[*a.Tab]
		if err := closing.Close(); err != nil {
			return errText(err)
		}
		if closing == r.page {
			// Like a browser: the tab to the right becomes active, or the
			// one to the left when the last tab closed.
			rest := r.bctx.Pages()
			r.page = rest[min(*a.Tab, len(rest)-1)]
			return errText(r.page.BringToFront())
		}
		return ""
	}
	return fmt.Sprintf("action type %q cannot be executed", a.Type)
}

// locate finds the target element by id or selector (not coordinates).
func (r *runner) locate(t *models.Target) (playwright.Locator, string) {
	if t == nil {
		return nil, "no target given"
	}
	if t.Selector != "" {
		return r.page.Locator(t.Selector), ""
	}
	id := strings.Trim(strings.TrimSpace(t.ElementID), "[]")
	if !elementIDPattern.MatchString(id) {
		return nil, fmt.Sprintf("element_id %q is not an id from the observation (like e12)", t.ElementID)
	}
	loc := r.page.Locator(`[data-proctor-id="` + id + `"]`)
	n, err := loc.Count()
	if err != nil {
		return nil, errText(err)
	}
	if n == 0 {
		return nil, fmt.Sprintf("no element [%s] on this page; use the ids of the latest observation", id)
	}
	return loc.First(), ""
}

// resolve makes raw absolute against the active tab's URL and checks it
// against the allowlist; an off-site URL is noted as blocked.
func (r *runner) resolve(raw string) (string, string) {
	ref, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Sprintf("url %q does not parse: %v", raw, err)
	}
	if base, err := url.Parse(r.page.URL()); err == nil && (base.Scheme == "http" || base.Scheme == "https") {
		ref = base.ResolveReference(ref)
	}
	u := ref.String()
	if !ref.IsAbs() {
		return "", fmt.Sprintf("url %q is not absolute", raw)
	}
	if !r.allow.allows(u) {
		r.blocked.add(u, false)
		return "", offSite(u)
	}
	return u, ""
}

// point returns the target's coordinates, if it has them.
func point(t *models.Target) (float64, float64, bool) {
	if t == nil || t.X == nil || t.Y == nil {
		return 0, 0, false
	}
	return *t.X, *t.Y, true
}

// inViewport checks that a point lies in the viewport the screenshot shows.
func inViewport(x, y float64) string {
	if x < 0 || y < 0 || x >= viewportWidth || y >= viewportHeight {
		return fmt.Sprintf("point (%.0f, %.0f) is outside the %d×%d viewport", x, y, viewportWidth, viewportHeight)
	}
	return ""
}

// errText is the agent-facing text of a browser error, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return cleanError(err)
}
