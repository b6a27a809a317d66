package episode

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/models"
)

// axtreeJS lists the page's elements with stable ids (see axtree.js).
//
//go:embed axtree.js
var axtreeJS string

// observe looks at the active tab and hands the step's artifacts to the
// persister. It returns the observation for the agent and the step row
// filled with everything known before the agent answers.
func (r *runner) observe(ctx context.Context, i int, lastErr string) (models.Observation, *models.Step, error) {
	if err := r.syncTabs(); err != nil {
		return models.Observation{}, nil, r.platform(ctx, err)
	}
	r.waitLoad(r.page)
	tabs := r.tabs()
	obs := models.Observation{
		URL:             r.page.URL(),
		Tabs:            tabs,
		AXTree:          r.axtree(),
		LastActionError: lastErr,
	}
	// tabs read every tab's title, the active one's among them.
	for _, t := range tabs {
		if t.Active {
			obs.Title = t.Title
		}
	}
	shot, err := r.screenshot()
	if err != nil {
		if ctx.Err() == nil && r.browser.IsConnected() {
			return obs, nil, &unobservableError{err}
		}
		return obs, nil, r.platform(ctx, err)
	}
	if obs.Downloads, err = r.downloads.collect(ctx, r.ep.Artifacts, r.ep.Prefix, 0); err != nil {
		return obs, nil, r.platform(ctx, err)
	}

	base := fmt.Sprintf("%s/steps/%03d", r.ep.Prefix, i)
	step := &models.Step{
		AttemptID:     r.ep.AttemptID,
		Index:         i,
		URL:           obs.URL,
		Title:         obs.Title,
		Tabs:          mustJSON(tabs),
		ScreenshotKey: base + ".jpg",
		ThumbnailKey:  base + "-thumb.jpg",
		AXTreeKey:     base + ".txt",
		Error:         lastErr,
	}
	// Step i's artifacts are stored only once the rows before it are
	// committed, so a crash leaves at most one step without its row.
	if err := r.persist.waitSaved(ctx, i); err != nil {
		return obs, nil, r.platform(ctx, err)
	}
	if err := r.persist.artifacts(ctx, step, shot, obs.AXTree); err != nil {
		return obs, nil, r.platform(ctx, err)
	}
	if r.ep.Agent.WantsScreenshot() {
		obs.Screenshot = base64.StdEncoding.EncodeToString(shot)
		obs.ScreenshotType = "jpeg"
	}
	return obs, step, nil
}

// unobservableError means a live browser could not screenshot the page: the
// page hangs or crashed, which is the environment's failure, not Proctor's.
type unobservableError struct{ err error }

func (e *unobservableError) Error() string { return e.err.Error() }
func (e *unobservableError) Unwrap() error { return e.err }

// platform returns ctx.Err() when the failure came from a cancellation (the
// context was closed under the call), else err.
func (r *runner) platform(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// syncTabs makes the newest tab the page opened by itself (a popup, a
// target=_blank link) the active one, as a browser would, and picks another
// tab when the active one was closed by its page.
func (r *runner) syncTabs() error {
	pages := r.bctx.Pages()
	for _, p := range pages {
		if !r.seen[p] {
			r.seen[p] = true
			r.page = p
		}
	}
	if r.page != nil && !r.page.IsClosed() {
		return nil
	}
	if len(pages) > 0 {
		r.page = pages[len(pages)-1]
		return nil
	}
	p, err := r.bctx.NewPage()
	if err != nil {
		return fmt.Errorf("open a tab after the last one closed: %w", err)
	}
	r.seen[p] = true
	r.page = p
	return nil
}

// tabs lists the open tabs in order.
func (r *runner) tabs() []models.Tab {
	pages := r.bctx.Pages()
	tabs := make([]models.Tab, 0, len(pages))
	for i, p := range pages {
		title, _ := bounded(pageCallTimeout, p.Title)
		tabs = append(tabs, models.Tab{Index: i, URL: p.URL(), Title: title, Active: p == r.page})
	}
	return tabs
}

// waitLoad waits briefly for the page's DOM; a slow page is observed as it is.
func (r *runner) waitLoad(p playwright.Page) {
	_ = p.WaitForLoadState(playwright.PageWaitForLoadStateOptions{
		State:   playwright.LoadStateDomcontentloaded,
		Timeout: r.timeout(loadWaitTimeout),
	})
}

// axtree returns the page's accessibility text with element ids. A page that
// navigates under the script gets a second try once loaded; if that fails as
// well the agent is told the content is unavailable.
func (r *runner) axtree() string {
	var (
		out any
		err error
	)
	for try := 0; try < 2; try++ {
		out, err = bounded(evaluateTimeout, func() (any, error) {
			return r.page.Evaluate(axtreeJS, map[string]any{"next": r.nextElem, "maxLines": maxAXTreeLines})
		})
		if err == nil {
			break
		}
		r.waitLoad(r.page)
	}
	if err != nil {
		return "(page content unavailable: " + cleanError(err) + ")"
	}
	m, _ := out.(map[string]any)
	text, _ := m["text"].(string)
	switch n := m["next"].(type) {
	case int:
		r.nextElem = max(r.nextElem, n)
	case float64:
		r.nextElem = max(r.nextElem, int(n))
	}
	return text
}

// screenshot takes a JPEG of the active tab's viewport, retrying once after
// the page settles.
func (r *runner) screenshot() ([]byte, error) {
	var (
		shot []byte
		err  error
	)
	for try := 0; try < 2; try++ {
		shot, err = r.page.Screenshot(playwright.PageScreenshotOptions{
			Type:    playwright.ScreenshotTypeJpeg,
			Quality: playwright.Int(screenshotQuality),
			Timeout: r.timeout(screenshotTimeout),
		})
		if err == nil {
			return shot, nil
		}
		r.waitLoad(r.page)
	}
	return nil, fmt.Errorf("screenshot of %s: %w", r.page.URL(), err)
}

// bounded returns f's result, or an error once d has passed: Playwright's
// Evaluate and Title take no timeout, and a page whose script never yields
// would otherwise hold the episode. f keeps running in the background; the
// context's closing at the end of the episode releases it.
func bounded[T any](d time.Duration, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-t.C:
		var zero T
		return zero, fmt.Errorf("the page did not respond within %s", d)
	}
}

// mustJSON encodes v; what cannot be encoded (an agent's malformed raw
// response) is stored as a JSON object naming the problem instead.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"unencodable": fmt.Sprintf("%T: %v", v, err)})
	}
	return string(b)
}

// cleanError keeps the first line of a Playwright error, without its call
// log, short enough to show an agent.
func cleanError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "Call log:"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	s = strings.TrimPrefix(s, "playwright: ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
