package episode

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"

	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/storage/artifact"
)

// The benchmarks run a no-op agent on the bundled sandbox shop and compare
// Proctor's per-step work with raw Playwright doing the same screenshot and
// action. scripts/bench.sh (make bench) runs them and prints a summary; they
// are benchmarks only, so `go test` without -bench never starts them.

// benchScrollY is how far each no-op step scrolls; the direction alternates so
// that every screenshot shows a different part of the page.
const benchScrollY = 400

// benchEpisodeSteps is the length of the episodes of BenchmarkEpisodesParallel.
const benchEpisodeSteps = 5

// benchWorld is a benchmark's environment: the shared browser, the sandbox
// sites served by httptest and a local artifact store.
type benchWorld struct {
	browser *Browser
	site    *httptest.Server
	store   *artifact.Local
	// nextNS numbers the namespaces so that no two episodes share site state.
	nextNS atomic.Int64
}

// newBenchWorld returns the environment, or skips the benchmark (fails it under
// PROCTOR_TEST_REQUIRE=browser) when Chromium or the driver is missing.
func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	br, err := browserForTests.get()
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.SkipUnlessAvailable(b, "browser", err == nil, "benchmarks need Chromium and the Playwright driver (make deps): "+why)
	w := &benchWorld{browser: br}
	w.site = httptest.NewServer(sandbox.New(sandbox.Options{}))
	b.Cleanup(w.site.Close)
	store, err := artifact.NewLocal(b.TempDir(), artifact.NewURLSigner([]byte("k0123456789abcdef0123456789abcdef")), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	w.store = store
	return w
}

// namespace returns a sandbox namespace never used before in this process.
func (w *benchWorld) namespace(kind string) string {
	return fmt.Sprintf("bench-%s-%d", kind, w.nextNS.Add(1))
}

// shopURL is the sandbox shop's product list in namespace ns.
func (w *benchWorld) shopURL(ns string) string {
	return w.site.URL + sandbox.PathPrefix + ns + "/shop"
}

// episode returns a no-op episode of the given length on the shop of a fresh
// namespace, saving its steps to sink.
func (w *benchWorld) episode(steps int, sink StepSink) Episode {
	ns := w.namespace("ep")
	id := w.nextNS.Add(1)
	return Episode{
		RunID:          1,
		AttemptID:      id,
		Task:           models.StepTask{ID: "bench", Goal: "look around", StartURLs: []string{w.shopURL(ns)}},
		AllowedOrigins: []string{w.site.URL + sandbox.PathPrefix + ns + "/"},
		Agent:          noopAgent{steps: steps},
		Budget:         Budget{MaxSteps: steps, MaxDuration: 10 * time.Minute, MaxAgentCall: time.Minute},
		Artifacts:      w.store,
		Prefix:         fmt.Sprintf("runs/1/attempts/%d/try-1", id),
		Steps:          sink,
	}
}

// noopAgent scrolls, alternately down and up, for steps-1 steps and then
// stops; it answers at once and wants no screenshot, so an episode's time is
// Proctor's and the browser's alone.
type noopAgent struct{ steps int }

func (a noopAgent) Step(_ context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	if req.Step >= a.steps-1 {
		return &models.StepResponse{Action: models.Action{Type: models.ActStop, Reason: "benchmark over"}}, nil
	}
	return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: scrollDelta(req.Step)}}, nil
}

func (noopAgent) WantsScreenshot() bool { return false }

// scrollDelta is step i's scroll: down on even steps, up on odd ones.
func scrollDelta(i int) float64 {
	if i%2 == 0 {
		return benchScrollY
	}
	return -benchScrollY
}

// benchChunk is the length of the stretches in which BenchmarkStepOverhead
// alternates between raw Playwright and Proctor: each stretch starts on a
// freshly loaded page on both sides (a page's first screenshot is the
// slowest), and alternating keeps a busy machine's ups and downs out of the
// ratio.
const benchChunk = 5

// rawContext is a plain Playwright context: Proctor's viewport, and no HAR,
// routes or event handlers.
type rawContext struct {
	bctx playwright.BrowserContext
	page playwright.Page
}

func (w *benchWorld) openRawContext(b *testing.B) *rawContext {
	b.Helper()
	bctx, err := w.browser.Playwright().NewContext(playwright.BrowserNewContextOptions{
		Viewport: &playwright.Size{Width: viewportWidth, Height: viewportHeight},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bctx.Close() })
	return &rawContext{bctx: bctx}
}

// rawSteps opens the shop of a fresh namespace in a new tab (not timed, as
// Proctor's start page is not), then takes n raw steps and returns how long
// they took. A step is one JPEG screenshot of the viewport at Proctor's
// quality and one scroll done the way Proctor's scroll action does it: move
// the mouse to the middle of the viewport, turn the wheel.
func (w *benchWorld) rawSteps(b *testing.B, c *rawContext, n int) time.Duration {
	b.Helper()
	if c.page != nil {
		if err := c.page.Close(); err != nil {
			b.Fatal(err)
		}
	}
	page, err := c.bctx.NewPage()
	if err != nil {
		b.Fatal(err)
	}
	c.page = page
	if _, err := page.Goto(w.shopURL(w.namespace("raw")), playwright.PageGotoOptions{
		WaitUntil: playwright.WaitUntilStateDomcontentloaded,
	}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		if _, err := page.Screenshot(playwright.PageScreenshotOptions{
			Type:    playwright.ScreenshotTypeJpeg,
			Quality: playwright.Int(screenshotQuality),
		}); err != nil {
			b.Fatal(err)
		}
		if err := page.Mouse().Move(float64(viewportWidth)/2, float64(viewportHeight)/2); err != nil {
			b.Fatal(err)
		}
		if err := page.Mouse().Wheel(0, scrollDelta(i)); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// proctorSteps runs a no-op episode of n steps (n observations, n-1 scrolls,
// then the stop) and returns the summed ObserveMS and ActMS of its steps.
func (w *benchWorld) proctorSteps(b *testing.B, n int) (observeMS, actMS int64) {
	b.Helper()
	sink := &memSink{}
	res, err := Run(context.Background(), w.browser, w.episode(n, sink))
	if err != nil {
		b.Fatal(err)
	}
	if res.ErrorClass != "" || res.Final == nil || res.Steps != n {
		b.Fatalf("the no-op episode ended badly: %d of %d steps, class %q: %s", res.Steps, n, res.ErrorClass, res.ErrorMessage)
	}
	for _, s := range sink.all() {
		if s.Error != "" {
			b.Fatalf("step %d failed: %s", s.Index, s.Error)
		}
		observeMS += s.ObserveMS
		actMS += s.ActMS
	}
	return observeMS, actMS
}

// ms is d in fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkStepOverhead compares Proctor's per-step work with raw Playwright.
// One iteration is one raw step (screenshot + scroll) and one Proctor step of
// a no-op episode (observe: URL, title, tabs, accessibility text, screenshot,
// thumbnail; persist: three artifacts and the step row; act: the scroll). The
// two sides alternate every benchChunk steps, each stretch on a freshly loaded
// page. Metrics, per step:
//
//	raw-ms/step      raw Playwright screenshot + scroll
//	observe-ms/step  Proctor's observe + persist (Step.ObserveMS)
//	act-ms/step      Proctor's scroll (Step.ActMS, with the wait for the DOM)
//	x-raw            (observe + persist + act) / raw
//	observe-x-raw    (observe + persist) / raw
//
// Step timings are stored in whole milliseconds (truncated), so the Proctor
// figures read up to 1 ms per step low.
func BenchmarkStepOverhead(b *testing.B) {
	w := newBenchWorld(b)
	raw := w.openRawContext(b)
	b.ResetTimer()

	var (
		rawTime      time.Duration
		observe, act int64
		acts         int
	)
	for done := 0; done < b.N; {
		n := min(benchChunk, b.N-done)
		rawTime += w.rawSteps(b, raw, n)
		o, a := w.proctorSteps(b, n)
		observe += o
		act += a
		acts += n - 1
		done += n
	}
	b.StopTimer()

	rawMS := ms(rawTime) / float64(b.N)
	observeMS := float64(observe) / float64(b.N)
	actMS := 0.0
	if acts > 0 {
		actMS = float64(act) / float64(acts)
	}
	b.ReportMetric(rawMS, "raw-ms/step")
	b.ReportMetric(observeMS, "observe-ms/step")
	b.ReportMetric(actMS, "act-ms/step")
	if rawMS > 0 {
		b.ReportMetric((observeMS+actMS)/rawMS, "x-raw")
		b.ReportMetric(observeMS/rawMS, "observe-x-raw")
	}
}

// BenchmarkEpisodesParallel measures episodes per minute with 1, 2 and 4
// episodes at a time on one browser. One iteration is one 5-step no-op episode
// on the shop of a namespace of its own; the sub-benchmark for K runs b.N of
// them, K at a time. Metrics:
//
//	episodes/min  throughput
//	x-parallel=1  throughput over that of parallel=1 in the same run
func BenchmarkEpisodesParallel(b *testing.B) {
	w := newBenchWorld(b)
	// The sub-benchmarks run in order, so parallel=1 sets the base first.
	base := 0.0
	for _, k := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("parallel=%d", k), func(b *testing.B) {
			perMin := w.parallelEpisodes(b, k)
			if k == 1 {
				base = perMin
			}
			b.ReportMetric(perMin, "episodes/min")
			if base > 0 {
				b.ReportMetric(perMin/base, "x-parallel=1")
			}
		})
	}
}

// parallelEpisodes runs b.N no-op episodes, k at a time, and returns how many
// finished per minute.
func (w *benchWorld) parallelEpisodes(b *testing.B, k int) float64 {
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	b.ResetTimer()
	start := time.Now()
	for range k {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := Run(ctx, w.browser, w.episode(benchEpisodeSteps, &memSink{}))
				if err == nil && (res.ErrorClass != "" || res.Steps != benchEpisodeSteps) {
					err = fmt.Errorf("episode ended badly: %d of %d steps, class %q: %s", res.Steps, benchEpisodeSteps, res.ErrorClass, res.ErrorMessage)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	for _, err := range errs {
		b.Error(err)
	}
	return float64(b.N) / elapsed.Minutes()
}
