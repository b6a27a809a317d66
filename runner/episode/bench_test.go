package episode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// Proctor's per-step work with the floor of the same work: the same action
// and observations made by plain Playwright calls. scripts/bench.sh (make bench) runs them and prints a summary; they
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

// benchChunk is the number of measured steps of each no-op episode of
// BenchmarkStepOverhead. Each episode starts on a freshly loaded page, as do
// the floors beside it (a page's first screenshot is the slowest, and is
// measured on neither side).
const benchChunk = 5

// ms is d in fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchPersistWait bounds how long the benchmark's agent waits for an
// episode's persistence to catch up before it calls the run broken.
const benchPersistWait = time.Minute

// floorTimes are the parts of floor steps: the action (mouse move and wheel),
// the JPEG screenshot, the accessibility snapshot, and the title and URL.
type floorTimes struct {
	act, shot, aria, meta time.Duration
	steps                 int
}

func (t floorTimes) total() time.Duration { return t.act + t.shot + t.aria + t.meta }

func (t *floorTimes) add(o floorTimes) {
	t.act += o.act
	t.shot += o.shot
	t.aria += o.aria
	t.meta += o.meta
	t.steps += o.steps
}

// perStep is d per step, in fractional milliseconds.
func (t floorTimes) perStep(d time.Duration) float64 {
	if t.steps == 0 {
		return 0
	}
	return ms(d) / float64(t.steps)
}

// goFloor is the floor measured through playwright-go: a plain Playwright
// context with Proctor's viewport, and no HAR, routes or event handlers, in
// the same Chromium as Proctor's episodes.
type goFloor struct {
	bctx playwright.BrowserContext
	page playwright.Page
	cdp  playwright.CDPSession // the page's, for Chromium's own accessibility tree
}

func (w *benchWorld) openGoFloor(b *testing.B) *goFloor {
	b.Helper()
	bctx, err := w.browser.Playwright().NewContext(playwright.BrowserNewContextOptions{
		Viewport: &playwright.Size{Width: viewportWidth, Height: viewportHeight},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bctx.Close() })
	return &goFloor{bctx: bctx}
}

// open loads u in a fresh tab, closing the last one; not timed, as Proctor's
// start page is not.
func (f *goFloor) open(u string) error {
	if f.page != nil {
		if err := f.page.Close(); err != nil {
			return err
		}
	}
	page, err := f.bctx.NewPage()
	if err != nil {
		return err
	}
	f.page = page
	if f.cdp, err = f.bctx.NewCDPSession(page); err != nil {
		return err
	}
	_, err = page.Goto(u, playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateDomcontentloaded})
	return err
}

// accessibility times the other ways to read the page's accessibility text,
// for comparison with the aria snapshot: Proctor's axtree.js (a walk of the
// DOM in the page) and Chromium's own tree over CDP
// (Accessibility.getFullAXTree, which would still need formatting into text
// and ids that actions can find).
func (f *goFloor) accessibility() (axjs, cdp time.Duration, err error) {
	t0 := time.Now()
	if _, err := f.page.Evaluate(axtreeJS, map[string]any{"next": 1, "maxLines": maxAXTreeLines}); err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	if _, err := f.cdp.Send("Accessibility.getFullAXTree", nil); err != nil {
		return 0, 0, err
	}
	return t1.Sub(t0), time.Since(t1), nil
}

// step is one floor step: the scroll Proctor's scroll action does (move the
// mouse to the middle of the viewport, turn the wheel), then the observations
// Proctor makes (a JPEG of the viewport at Proctor's quality, an
// accessibility snapshot of the page, its title and URL), each by the
// plainest Playwright call that makes it.
func (f *goFloor) step(dy float64) (floorTimes, error) {
	p := f.page
	t0 := time.Now()
	if err := p.Mouse().Move(float64(viewportWidth)/2, float64(viewportHeight)/2); err != nil {
		return floorTimes{}, err
	}
	if err := p.Mouse().Wheel(0, dy); err != nil {
		return floorTimes{}, err
	}
	t1 := time.Now()
	if _, err := p.Screenshot(playwright.PageScreenshotOptions{
		Type:    playwright.ScreenshotTypeJpeg,
		Quality: playwright.Int(screenshotQuality),
	}); err != nil {
		return floorTimes{}, err
	}
	t2 := time.Now()
	if _, err := p.Locator("body").AriaSnapshot(); err != nil {
		return floorTimes{}, err
	}
	t3 := time.Now()
	if _, err := p.Title(); err != nil {
		return floorTimes{}, err
	}
	_ = p.URL()
	t4 := time.Now()
	return floorTimes{act: t1.Sub(t0), shot: t2.Sub(t1), aria: t3.Sub(t2), meta: t4.Sub(t3), steps: 1}, nil
}

// nodeFloor is the same floor measured from a plain Playwright script in
// Node (scripts/stepfloor.js) with its own Chromium: what the steps cost with
// no Go client and no driver pipe in between.
type nodeFloor struct {
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

// startNodeFloor starts scripts/stepfloor.js with the driver's Node and
// playwright-core, or returns nil when the browser is a remote server (there
// is no local driver to run it with).
func startNodeFloor(b *testing.B) *nodeFloor {
	b.Helper()
	opts := BrowserOptionsFromEnv(os.Getenv)
	if len(opts.WSEndpoints) > 0 {
		b.Logf("the browser is remote (%s): no Node floor", EnvBrowserWSEndpoint)
		return nil
	}
	args, err := json.Marshal(chromiumArgs())
	if err != nil {
		b.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "stepfloor.js"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(opts.DriverDir, "node"), script, filepath.Join(opts.DriverDir, "package"), opts.ExecutablePath, string(args))
	n := &nodeFloor{stderr: &bytes.Buffer{}}
	cmd.Stderr = n.stderr
	if n.in, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	n.out = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the Node floor: %v", err)
	}
	b.Cleanup(func() {
		n.in.Close() // EOF: the script closes its browser and exits
		if err := cmd.Wait(); err != nil {
			b.Errorf("the Node floor exited: %v: %s", err, n.stderr)
		}
	})
	return n
}

// call sends one request and decodes the answer into out.
func (n *nodeFloor) call(req, out any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := n.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("the Node floor: %w: %s", err, n.stderr)
	}
	if !n.out.Scan() {
		return fmt.Errorf("the Node floor stopped answering: %v: %s", n.out.Err(), n.stderr)
	}
	var e struct{ Error string }
	if err := json.Unmarshal(n.out.Bytes(), &e); err != nil {
		return fmt.Errorf("the Node floor answered %q: %w", n.out.Text(), err)
	}
	if e.Error != "" {
		return fmt.Errorf("the Node floor: %s", e.Error)
	}
	return json.Unmarshal(n.out.Bytes(), out)
}

func (n *nodeFloor) open(u string) error {
	var ok struct{ OK bool }
	return n.call(map[string]any{"op": "open", "url": u}, &ok)
}

func (n *nodeFloor) step(dy float64) (floorTimes, error) {
	var r struct{ Act, Shot, Aria, Meta float64 }
	if err := n.call(map[string]any{"op": "step", "dy": dy}, &r); err != nil {
		return floorTimes{}, err
	}
	d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	return floorTimes{act: d(r.Act), shot: d(r.Shot), aria: d(r.Aria), meta: d(r.Meta), steps: 1}, nil
}

// benchProgress counts the artifacts and step rows an episode has stored.
type benchProgress struct {
	mu   sync.Mutex
	cond *sync.Cond
	puts int
	rows int
}

func newBenchProgress() *benchProgress {
	p := &benchProgress{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *benchProgress) count(puts, rows int) {
	p.mu.Lock()
	p.puts += puts
	p.rows += rows
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait returns once at least puts artifacts and rows rows are stored.
func (p *benchProgress) wait(ctx context.Context, puts, rows int) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.puts < puts || p.rows < rows {
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d artifacts and %d of %d step rows stored: %w", p.puts, puts, p.rows, rows, ctx.Err())
		}
		p.cond.Wait()
	}
	return nil
}

// countingStore counts the artifacts stored through it.
type countingStore struct {
	artifact.Store
	p *benchProgress
}

func (s countingStore) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	err := s.Store.Put(ctx, key, r, size, contentType)
	if err == nil {
		s.p.count(1, 0)
	}
	return err
}

// countingSink keeps the step rows saved through it and counts them.
type countingSink struct {
	memSink
	p *benchProgress
}

func (s *countingSink) SaveStep(ctx context.Context, st *models.Step) error {
	err := s.memSink.SaveStep(ctx, st)
	if err == nil {
		s.p.count(0, 1)
	}
	return err
}

// artifactsPerStep is what a no-op step stores: screenshot, thumbnail and
// accessibility text.
const artifactsPerStep = 3

// overheadAgent is BenchmarkStepOverhead's agent. Its call for step i
// measures the time since its previous reply, which is Proctor's critical
// path for a step (act on step i-1, observe step i); waits until Proctor has
// stored step i's artifacts and step i-1's row, as a thinking agent would
// give it time to, so that the floors are measured without Proctor working
// beside them; takes one step on each floor; and answers with the scroll the
// floors took, until the last step, which it stops.
type overheadAgent struct {
	steps int // measured steps; the agent stops at step `steps`
	prog  *benchProgress
	gf    *goFloor
	nf    *nodeFloor // nil: no Node floor

	last     time.Time // when the agent last replied
	critical time.Duration
	axjs     time.Duration // axtree.js on the Go floor's page
	cdpAX    time.Duration // Accessibility.getFullAXTree on it
	goT      floorTimes
	nodeT    floorTimes
}

func (a *overheadAgent) Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	i := req.Step
	if i > 0 {
		a.critical += time.Since(a.last)
	}
	defer func() { a.last = time.Now() }()
	if i >= a.steps {
		return &models.StepResponse{Action: models.Action{Type: models.ActStop, Reason: "benchmark over"}}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, benchPersistWait)
	defer cancel()
	if err := a.prog.wait(wctx, artifactsPerStep*(i+1), i); err != nil {
		return nil, fmt.Errorf("waiting for step %d to be stored: %w", i, err)
	}
	dy := scrollDelta(i)
	t, err := a.gf.step(dy)
	if err != nil {
		return nil, fmt.Errorf("go floor, step %d: %w", i, err)
	}
	a.goT.add(t)
	axjs, cdp, err := a.gf.accessibility()
	if err != nil {
		return nil, fmt.Errorf("go floor, step %d: %w", i, err)
	}
	a.axjs += axjs
	a.cdpAX += cdp
	if a.nf != nil {
		t, err := a.nf.step(dy)
		if err != nil {
			return nil, fmt.Errorf("node floor, step %d: %w", i, err)
		}
		a.nodeT.add(t)
	}
	return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: dy}}, nil
}

func (*overheadAgent) WantsScreenshot() bool { return false }

// overheadTotals sums BenchmarkStepOverhead's episodes.
type overheadTotals struct {
	critical       time.Duration
	axjs, cdpAX    time.Duration
	goT, nodeT     floorTimes
	observe, act   int64 // ms, of the measured steps' rows
	persist        int64
	observed, acts int
	persisted      int
}

// overheadEpisode runs one episode of n measured steps beside the floors,
// each on the shop of a fresh namespace.
func (w *benchWorld) overheadEpisode(b *testing.B, n int, gf *goFloor, nf *nodeFloor, tot *overheadTotals) {
	b.Helper()
	if err := gf.open(w.shopURL(w.namespace("floor"))); err != nil {
		b.Fatal(err)
	}
	if nf != nil {
		if err := nf.open(w.shopURL(w.namespace("node"))); err != nil {
			b.Fatal(err)
		}
	}
	prog := newBenchProgress()
	sink := &countingSink{p: prog}
	agent := &overheadAgent{steps: n, prog: prog, gf: gf, nf: nf}
	ep := w.episode(n+1, sink)
	ep.Agent = agent
	ep.Artifacts = countingStore{Store: w.store, p: prog}
	res, err := Run(context.Background(), w.browser, ep)
	if err != nil {
		b.Fatal(err)
	}
	if res.ErrorClass != "" || res.Final == nil || res.Steps != n+1 {
		b.Fatalf("the no-op episode ended badly: %d of %d steps, class %q: %s", res.Steps, n+1, res.ErrorClass, res.ErrorMessage)
	}
	for _, s := range sink.all() {
		if s.Error != "" {
			b.Fatalf("step %d failed: %s", s.Index, s.Error)
		}
		if s.Index > 0 {
			tot.observe += s.ObserveMS
			tot.observed++
		}
		if s.Index < n {
			tot.act += s.ActMS
			tot.acts++
		}
		tot.persist += s.PersistMS
		tot.persisted++
	}
	tot.critical += agent.critical
	tot.axjs += agent.axjs
	tot.cdpAX += agent.cdpAX
	tot.goT.add(agent.goT)
	tot.nodeT.add(agent.nodeT)
}

// BenchmarkStepOverhead compares Proctor's per-step work with the floor of
// the same work: the same action and the same observations made by the
// plainest Playwright calls, on the same page. One iteration is one step on
// each side; the sides alternate step by step (Go floor, Node floor,
// Proctor), each episode of benchChunk steps on freshly loaded pages, so a
// busy machine's ups and downs hit all of them alike. Metrics, per step:
//
//	proctor-ms/step  Proctor's critical path: wall time from the agent's
//	                 reply to the next request (act, then observe)
//	floor-ms/step    the floor through playwright-go: move and wheel, JPEG
//	                 screenshot, aria snapshot of the body, title and URL
//	x-floor          proctor / floor
//	observe-ms/step  Proctor's observe (Step.ObserveMS)
//	act-ms/step      Proctor's scroll (Step.ActMS, with the wait for the DOM)
//	persist-ms/step  Proctor's persistence of a step's artifacts
//	                 (Step.PersistMS), beside the agent: not in proctor-ms
//	axtreejs-ms      Proctor's axtree.js on the Go floor's page, and
//	cdp-axtree-ms    Chromium's own tree over CDP, for comparison with
//	                 floor-aria-ms (none of the three is in another figure)
//	x-strict-floor   proctor / the floor with the cheapest of the aria
//	                 snapshot and axtree.js as its accessibility text
//	floor-*-ms       the floor's parts: act, shot, aria, meta (title and URL)
//	node-ms/step     the same floor from a plain script in Node
//	                 (scripts/stepfloor.js), and its parts node-*-ms
//	floor-x-node     the Go floor / the Node floor: the Go client's cost
//
// Step timings are stored in whole milliseconds (truncated), so the
// per-phase figures read up to 1 ms per step low; the critical path and the
// floors are measured to the nanosecond.
//
// What is the client's: the Go floor runs 1.0–1.2× the Node floor (the same
// calls and Playwright version, under the same load), which is playwright-go's
// driver pipe: every call crosses to the driver process and back as JSON, the
// screenshot as ~100 KB of base64, where a Node script calls the driver
// in-process. An earlier baseline here read twice a plain script's time for
// another reason, which was the benchmark's: it timed the first screenshot of
// each freshly loaded page (180 ms against 80 ms for a later one on a busy
// machine: Chromium paints the page for the first time) in every stretch of
// five steps, and a busy machine's load on top. The first observation of each
// page is now measured on no side.
func BenchmarkStepOverhead(b *testing.B) {
	w := newBenchWorld(b)
	gf := w.openGoFloor(b)
	nf := startNodeFloor(b)
	b.ResetTimer()

	var tot overheadTotals
	for done := 0; done < b.N; {
		n := min(benchChunk, b.N-done)
		w.overheadEpisode(b, n, gf, nf, &tot)
		done += n
	}
	b.StopTimer()

	proctorMS := ms(tot.critical) / float64(b.N)
	floorMS := tot.goT.perStep(tot.goT.total())
	b.ReportMetric(proctorMS, "proctor-ms/step")
	b.ReportMetric(floorMS, "floor-ms/step")
	if floorMS > 0 {
		b.ReportMetric(proctorMS/floorMS, "x-floor")
	}
	if tot.observed > 0 {
		b.ReportMetric(float64(tot.observe)/float64(tot.observed), "observe-ms/step")
	}
	if tot.acts > 0 {
		b.ReportMetric(float64(tot.act)/float64(tot.acts), "act-ms/step")
	}
	if tot.persisted > 0 {
		b.ReportMetric(float64(tot.persist)/float64(tot.persisted), "persist-ms/step")
	}
	reportParts(b, "floor", tot.goT)
	b.ReportMetric(tot.goT.perStep(tot.axjs), "axtreejs-ms")
	b.ReportMetric(tot.goT.perStep(tot.cdpAX), "cdp-axtree-ms")
	// The strictest floor takes the cheapest accessibility text measured,
	// which is axtree.js's rather than the aria snapshot's.
	if strict := tot.goT.perStep(tot.goT.total() - tot.goT.aria + min(tot.axjs, tot.goT.aria)); strict > 0 {
		b.ReportMetric(proctorMS/strict, "x-strict-floor")
	}
	if nf != nil {
		nodeMS := tot.nodeT.perStep(tot.nodeT.total())
		b.ReportMetric(nodeMS, "node-ms/step")
		reportParts(b, "node", tot.nodeT)
		if nodeMS > 0 {
			b.ReportMetric(floorMS/nodeMS, "floor-x-node")
		}
	}
}

// reportParts reports a floor's parts per step.
func reportParts(b *testing.B, side string, t floorTimes) {
	b.ReportMetric(t.perStep(t.act), side+"-act-ms")
	b.ReportMetric(t.perStep(t.shot), side+"-shot-ms")
	b.ReportMetric(t.perStep(t.aria), side+"-aria-ms")
	b.ReportMetric(t.perStep(t.meta), side+"-meta-ms")
}

// BenchmarkEpisodesParallel measures episodes per minute with 1, 2 and 4
// episodes at a time on one browser. One iteration is one 5-step no-op episode
// on the shop of a namespace of its own; the sub-benchmark for K runs b.N of
// them, K at a time. Metrics:
//
//	episodes/min  throughput
//	x-parallel=1  throughput over that of parallel=1 in the same run
//	cores-busy    the machine's busy cores meanwhile, whichever process (Linux)
//	x-cpu-bound   the most x-parallel=1 could be: K, or the machine's cores
//	              over parallel=1's busy cores if fewer
//
// A no-op agent answers at once, so one episode keeps Chromium, the driver and
// the runner working without a pause; where that alone fills most of the
// machine, running two at a time cannot do much better, and x-cpu-bound says
// how much.
func BenchmarkEpisodesParallel(b *testing.B) {
	w := newBenchWorld(b)
	// The sub-benchmarks run in order, so parallel=1 sets the base first.
	base, baseCores := 0.0, 0.0
	for _, k := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("parallel=%d", k), func(b *testing.B) {
			perMin, cores := w.parallelEpisodes(b, k)
			if k == 1 {
				base, baseCores = perMin, cores
			}
			b.ReportMetric(perMin, "episodes/min")
			if base > 0 {
				b.ReportMetric(perMin/base, "x-parallel=1")
			}
			if cores > 0 {
				b.ReportMetric(cores, "cores-busy")
			}
			if baseCores > 0 {
				b.ReportMetric(min(float64(k), float64(runtime.NumCPU())/baseCores), "x-cpu-bound")
			}
		})
	}
}

// parallelEpisodes runs b.N no-op episodes, k at a time, and returns how many
// finished per minute and how many of the machine's cores were busy
// meanwhile (0 where that cannot be read).
func (w *benchWorld) parallelEpisodes(b *testing.B, k int) (perMin, busyCores float64) {
	ctx := context.Background()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	b.ResetTimer()
	elapsed, busyCores := testenv.MeasureBusyCores(func() {
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
	})
	b.StopTimer()
	for _, err := range errs {
		b.Error(err)
	}
	return float64(b.N) / elapsed.Minutes(), busyCores
}
