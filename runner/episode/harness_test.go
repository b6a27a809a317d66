package episode

import (
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"

	"proctor/internal/testenv"
	"proctor/models"
	"proctor/storage/artifact"
)

// sharedBrowser is the one Chromium every test of the package uses; it starts
// on first use, so the unit tests never pay for it.
type sharedBrowser struct {
	once sync.Once
	b    *Browser
	err  error
}

func (s *sharedBrowser) get() (*Browser, error) {
	s.once.Do(func() {
		opts := BrowserOptionsFromEnv(os.Getenv)
		if s.err = opts.Check(); s.err == nil {
			s.b, s.err = LaunchBrowser(opts)
		}
	})
	return s.b, s.err
}

var browserForTests sharedBrowser

func TestMain(m *testing.M) {
	code := m.Run()
	if b, err := browserForTests.get(); err == nil && b != nil {
		b.Close()
	}
	os.Exit(code)
}

// testBrowser returns the shared browser, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when Chromium or the driver is missing.
func testBrowser(t *testing.T) *Browser {
	t.Helper()
	b, err := browserForTests.get()
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, "episode tests need Chromium and the Playwright driver (make deps): "+why)
	return b
}

// bundle is one test's world: the benchmark site, an off-site server that
// must never be reached, a local artifact store and an in-memory step sink.
type bundle struct {
	browser *Browser
	site    *httptest.Server
	off     *httptest.Server
	offHits atomic.Int64
	store   *artifact.Local
	sink    *memSink
	// slow, when set, runs in the /slow handler before it stalls.
	slow atomic.Pointer[func()]
	// slowdown stretches the episodes' time budgets (testenv.Slowdown).
	slowdown float64
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{browser: testBrowser(t), sink: &memSink{}, slowdown: testenv.Slowdown(t)}
	b.off = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.offHits.Add(1)
		fmt.Fprint(w, "off-site")
	}))
	t.Cleanup(b.off.Close)
	b.site = httptest.NewServer(b.siteHandler())
	t.Cleanup(b.site.Close)
	store, err := artifact.NewLocal(t.TempDir(), artifact.NewURLSigner([]byte("k0123456789abcdef0123456789abcdef")), "")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	b.store = store
	return b
}

// page wraps body in a minimal HTML document.
func page(title, body string) string {
	return "<!doctype html><html><head><meta charset=utf-8><title>" + html.EscapeString(title) + "</title></head><body>" + body + "</body></html>"
}

func (b *bundle) siteHandler() http.Handler {
	mux := http.NewServeMux()
	serve := func(path, title, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page(title, body))
		})
	}
	serve("GET /form", "Search form", `
<h1>Find a product</h1>
<form method="post" action="/submit">
  <label for="q">Search</label> <input id="q" name="q">
  <label for="color">Color</label>
  <select id="color" name="color"><option value="r">Red</option><option value="g">Green</option></select>
  <button type="submit">Go</button>
</form>
<p id="status">idle</p>
<button id="sel-btn" onclick="document.getElementById('status').textContent='selector clicked'">Selector target</button>
<button style="position:absolute;left:100px;top:400px;width:200px;height:50px"
  onclick="document.getElementById('status').textContent='point clicked'">Point target</button>
<div>Price: <span>$12.99</span></div>
<a href="/grow">Grow page</a>`)
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page("Results", "<h1>Results</h1><p>You searched for "+html.EscapeString(r.FormValue("q"))+
			" in "+html.EscapeString(r.FormValue("color"))+"</p>"))
	})
	serve("GET /grow", "Grow", `
<h2>Cart</h2>
<ul id="list"><li>first item</li></ul>
<button onclick="const li=document.createElement('li');li.textContent='new item';const l=document.getElementById('list');l.insertBefore(li,l.firstChild)">Add item</button>`)
	serve("GET /tabs", "Tabs", `
<h1>Tabs</h1>
<button onclick="window.open('/grow')">Open grow</button>`)
	serve("GET /offsite", "Off-site", fmt.Sprintf(`
<h1>Embeds</h1>
<img src="%[1]s/pixel.png" alt="tracker">
<script src="%[1]s/x.js"></script>
<script>try { new WebSocket(%[2]q) } catch (e) {}</script>
<a href="%[1]s/elsewhere">Elsewhere</a>`, b.off.URL, "ws"+strings.TrimPrefix(b.off.URL, "http")+"/ws"))
	serve("GET /hang", "Hang", `<button onclick="for (;;) {}">Hang</button>`)
	serve("GET /download", "Download", `<h1>Files</h1><a href="/files/report.csv">Report</a>`)
	mux.HandleFunc("GET /files/report.csv", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
		io.WriteString(w, "a,b\n1,2\n")
	})
	mux.Handle("GET /ws", websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	serve("GET /ws-page", "Socket", `
<p id="out">waiting</p>
<script>
const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws');
ws.onopen = () => ws.send('ping');
ws.onmessage = (e) => { document.getElementById('out').textContent = 'echo: ' + e.data; };
</script>`)
	serve("GET /to-final", "Start", `<a id="final-link" href="/final">Final page</a>`)
	serve("GET /to-late", "Start", `<a id="late-link" href="/late-page">Late page</a>`)
	mux.HandleFunc("GET /late-page", func(w http.ResponseWriter, r *http.Request) {
		// Past the click's own wait for the navigation it started
		// (actionTimeout), within loadWaitTimeout after it.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(actionTimeout + 2*time.Second):
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page("Late", "<h1>Late page</h1>"))
	})
	serve("GET /final", "Final", `<h1>Final</h1><img src="/late.png" alt="late picture">`)
	mux.HandleFunc("GET /late.png", func(w http.ResponseWriter, r *http.Request) {
		select { // well inside loadWaitTimeout, well past an answer's round trip
		case <-r.Context().Done():
			return
		case <-time.After(2 * time.Second):
		}
		w.Header().Set("Content-Type", "image/png")
		_ = png.Encode(w, image.NewGray(image.Rect(0, 0, 1, 1)))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		if f := b.slow.Load(); f != nil {
			(*f)()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	return mux
}

const testPrefix = "runs/1/attempts/2/try-1"

// episode returns an episode starting at path on the test site.
func (b *bundle) episode(agent Agent, path string) Episode {
	return Episode{
		RunID:          1,
		AttemptID:      2,
		Task:           models.StepTask{ID: "t1", Goal: "test goal", StartURLs: []string{b.site.URL + path}},
		AllowedOrigins: []string{b.site.URL},
		Agent:          agent,
		Budget:         Budget{MaxSteps: 12, MaxDuration: b.scaled(30 * time.Second), MaxAgentCall: b.scaled(10 * time.Second)},
		Artifacts:      b.store,
		Prefix:         testPrefix,
		Steps:          b.sink,
	}
}

// scaled is d stretched by the machine's slowdown factor.
func (b *bundle) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * b.slowdown)
}

// run plays ep and fails the test on a Go error.
func (b *bundle) run(t *testing.T, ep Episode) *Result {
	t.Helper()
	res, err := Run(context.Background(), b.browser, ep)
	require.NoError(t, err)
	return res
}

// memSink keeps saved steps in memory.
type memSink struct {
	mu    sync.Mutex
	steps []*models.Step
}

func (s *memSink) SaveStep(_ context.Context, st *models.Step) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *st
	s.steps = append(s.steps, &c)
	return nil
}

func (s *memSink) all() []*models.Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*models.Step(nil), s.steps...)
}

// scripted is a fake agent: next decides each reply from the request.
type scripted struct {
	mu         sync.Mutex
	reqs       []*models.StepRequest
	screenshot bool
	next       func(ctx context.Context, i int, req *models.StepRequest) (*models.StepResponse, error)
}

func (a *scripted) Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	i := len(a.reqs) - 1
	a.mu.Unlock()
	return a.next(ctx, i, req)
}

func (a *scripted) WantsScreenshot() bool { return a.screenshot }

func (a *scripted) requests() []*models.StepRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*models.StepRequest(nil), a.reqs...)
}

// actions is an agent that plays a list of action builders in order; each
// builder sees the request, to pick element ids from the observation.
func actions(fs ...func(t *models.StepRequest) models.Action) *scripted {
	return &scripted{next: func(_ context.Context, i int, req *models.StepRequest) (*models.StepResponse, error) {
		if i >= len(fs) {
			return &models.StepResponse{Action: models.Action{Type: models.ActStop, Reason: "script over"}}, nil
		}
		return &models.StepResponse{Action: fs[i](req), Thought: fmt.Sprintf("step %d", i)}, nil
	}}
}

// fixed returns a builder of a constant action.
func fixed(a models.Action) func(*models.StepRequest) models.Action {
	return func(*models.StepRequest) models.Action { return a }
}

func answer(text string) models.Action { return models.Action{Type: models.ActAnswer, Text: text} }

func byID(id string) *models.Target { return &models.Target{ElementID: id} }

// elementID finds the id of the first line of the accessibility text that
// matches `role "name"`. It runs on the agent's goroutine, so a miss is
// reported with t.Errorf (never FailNow) and answered with an id that exists
// nowhere.
func elementID(t *testing.T, axtree, role, name string) string {
	t.Helper()
	re := regexp.MustCompile(`\[(e\d+)\] ` + regexp.QuoteMeta(role) + ` ` + regexp.QuoteMeta(fmt.Sprintf("%q", name)))
	m := re.FindStringSubmatch(axtree)
	if m == nil {
		t.Errorf("no %s %q in:\n%s", role, name, axtree)
		return "e999999"
	}
	return m[1]
}

// clickID returns a builder clicking the element with that role and name.
func clickID(t *testing.T, role, name string) func(*models.StepRequest) models.Action {
	return func(req *models.StepRequest) models.Action {
		return models.Action{Type: models.ActClick, Target: byID(elementID(t, req.Observation.AXTree, role, name))}
	}
}

func ptr[T any](v T) *T { return &v }
