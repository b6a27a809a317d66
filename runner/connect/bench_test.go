package connect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/storage/artifact"
)

// benchSteps is the length of each measured episode.
const benchSteps = 10

// drivenAgent is push mode at its cheapest: an agent in the process that
// scrolls at once, alternately down and up, then stops.
type drivenAgent struct{ steps int }

func (a drivenAgent) Step(_ context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	if req.Step >= a.steps-1 {
		return &models.StepResponse{Action: models.Action{Type: models.ActStop}}, nil
	}
	return &models.StepResponse{Action: models.Action{Type: models.ActScroll, DeltaY: scrollDelta(req.Step)}}, nil
}

// WantsScreenshot is true, as for the mailbox: both sides observe the same.
func (drivenAgent) WantsScreenshot() bool { return true }

func scrollDelta(step int) float64 {
	if step%2 == 0 {
		return 400
	}
	return -400
}

// discardSteps is a step sink that keeps nothing.
type discardSteps struct{}

func (discardSteps) SaveStep(context.Context, *models.Step) error { return nil }

// benchRig is a browser, the sandbox sites and a gateway serving mailboxes
// over HTTP on loopback.
type benchRig struct {
	browser *episode.Browser
	site    *httptest.Server
	store   artifact.Store
	gateway *Gateway
	mcpSrv  *httptest.Server
	ids     atomic.Int64
}

func newBenchRig(b *testing.B) *benchRig {
	b.Helper()
	opts := episode.BrowserOptionsFromEnv(os.Getenv)
	err := opts.Check()
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.SkipUnlessAvailable(b, "browser", err == nil, "the MCP step benchmark needs Chromium and the Playwright driver (make deps): "+why)
	br, err := episode.LaunchBrowser(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	r := &benchRig{browser: br, site: httptest.NewServer(sandbox.New(sandbox.Options{}))}
	b.Cleanup(r.site.Close)
	store, err := artifact.NewLocal(b.TempDir(), artifact.NewURLSigner([]byte("k0123456789abcdef0123456789abcdef")), "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	r.store = store
	r.gateway = NewGateway(NewHub(), nil, 0, nil)
	r.mcpSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var attempt int64
		fmt.Sscanf(req.URL.Path, "/episodes/%d/mcp", &attempt)
		lease := &models.EpisodeLease{AttemptID: attempt, Try: 1, Status: models.LeaseRunning}
		if err := r.gateway.Serve(w, req, lease, EndpointMCP, true); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	b.Cleanup(r.mcpSrv.Close)
	return r
}

// episode is a benchSteps-step episode on the shop of a fresh namespace.
func (r *benchRig) episode(agent episode.Agent, id int64) episode.Episode {
	ns := fmt.Sprintf("bench-mcp-%d", id)
	return episode.Episode{
		RunID: 1, AttemptID: id,
		Task:           models.StepTask{ID: "bench", Goal: "look around", StartURLs: []string{r.site.URL + sandbox.PathPrefix + ns + "/shop"}},
		AllowedOrigins: []string{r.site.URL + sandbox.PathPrefix + ns + "/"},
		Agent:          agent,
		Budget:         episode.Budget{MaxSteps: benchSteps, MaxDuration: 5 * time.Minute, MaxAgentCall: time.Minute},
		Artifacts:      r.store, Prefix: fmt.Sprintf("runs/1/attempts/%d/try-1", id), Steps: discardSteps{},
	}
}

// driven runs one push-mode episode and returns its time per step, from the
// first observation to the end.
func (r *benchRig) driven(b *testing.B) time.Duration {
	res, err := episode.Run(context.Background(), r.browser, r.episode(drivenAgent{steps: benchSteps}, r.ids.Add(1)))
	if err != nil || res.Steps != benchSteps {
		b.Fatalf("driven episode: %v (%d steps)", err, res.Steps)
	}
	return res.Duration / benchSteps
}

// overMCP runs one episode driven by the Go SDK's client over HTTP: each
// step one browser_mouse_wheel call (the scroll the driven agent sends),
// then give_up. It returns the time per step, measured as for driven.
func (r *benchRig) overMCP(b *testing.B) time.Duration {
	id := r.ids.Add(1)
	box := NewMailbox(1, id, 1)
	defer r.gateway.Hub().Add(box)()
	done := make(chan *episode.Result, 1)
	go func() {
		res, err := episode.Run(context.Background(), r.browser, r.episode(box, id))
		if err != nil {
			b.Error(err)
		}
		box.End("over")
		done <- res
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: fmt.Sprintf("%s/episodes/%d/mcp", r.mcpSrv.URL, id)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for i := 0; i < benchSteps-1; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_mouse_wheel", Arguments: map[string]any{"deltaX": 0, "deltaY": scrollDelta(i)}})
		if err != nil || res.IsError {
			b.Fatalf("step %d: %v %v", i, err, res)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "give_up", Arguments: map[string]any{}}); err != nil {
		b.Fatal(err)
	}
	res := <-done
	if res.Steps != benchSteps {
		b.Fatalf("MCP episode: %d steps", res.Steps)
	}
	return res.Duration / benchSteps
}

// BenchmarkMCPStep measures a step of an episode driven through its MCP
// server (the official Go SDK's client over HTTP on loopback: tool call,
// action, observation, the answer's snapshot) against a step of the same
// episode driven by an agent in the process, alternated episode by episode
// on the same browser and page. One iteration is one episode of each.
//
//	driven-ms/step  a push-mode step with no agent time at all
//	mcp-ms/step     an MCP step
//	x-driven        mcp-ms/step over driven-ms/step
func BenchmarkMCPStep(b *testing.B) {
	r := newBenchRig(b)
	r.driven(b) // the browser's first pages are slower: not measured
	r.overMCP(b)
	b.ResetTimer()
	var driven, viaMCP time.Duration
	for range b.N {
		driven += r.driven(b)
		viaMCP += r.overMCP(b)
	}
	b.StopTimer()
	d := float64(driven.Microseconds()) / 1000 / float64(b.N)
	m := float64(viaMCP.Microseconds()) / 1000 / float64(b.N)
	b.ReportMetric(d, "driven-ms/step")
	b.ReportMetric(m, "mcp-ms/step")
	if d > 0 {
		b.ReportMetric(m/d, "x-driven")
	}
}
