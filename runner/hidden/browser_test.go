package hidden

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/internal/testenv"
	"proctor/netguard"
	"proctor/runner/episode"
	"proctor/sandbox"
)

// journeyBrowser is the one Chromium the package's browser tests share; it
// starts on first use and is left to the test binary's exit, when the driver's
// pipes close and it takes Chromium down with it.
var journeyBrowser = sync.OnceValues(func() (*episode.Browser, error) {
	opts := episode.BrowserOptionsFromEnv(os.Getenv)
	if err := opts.Check(); err != nil {
		return nil, err
	}
	return episode.LaunchBrowser(opts)
})

// testJourneyBrowser returns the shared browser, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when Chromium or the driver is missing.
func testJourneyBrowser(t *testing.T) playwright.Browser {
	t.Helper()
	b, err := journeyBrowser()
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.SkipUnlessAvailable(t, "browser", err == nil, "browser journeys need Chromium and the Playwright driver (make deps): "+why)
	return b.Playwright()
}

func browserSuite(t *testing.T) *hiddentest.Suite {
	t.Helper()
	s, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	require.NoError(t, err)
	return s
}

// journeys returns the suite's browser tests.
func journeys(s *hiddentest.Suite) []*hiddentest.Test {
	var out []*hiddentest.Test
	for i := range s.Tests {
		if s.Tests[i].Journey != nil {
			out = append(out, &s.Tests[i])
		}
	}
	return out
}

// shopWithHook serves handler with a restart hook at /restart that counts its
// calls and takes the site down (503) for a moment, as a real restart would.
func shopWithHook(t *testing.T, handler http.Handler) (Candidate, *atomic.Int64) {
	t.Helper()
	var restarts atomic.Int64
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/restart" && r.Method == http.MethodPost:
			restarts.Add(1)
			down.Store(true)
			time.AfterFunc(300*time.Millisecond, func() { down.Store(false) })
			w.WriteHeader(http.StatusNoContent)
		case down.Load():
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		default:
			handler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return Candidate{BaseURL: srv.URL + "/sandbox/{visitor}/shop", RestartURL: srv.URL + "/restart"}, &restarts
}

// recordCaptures plays every journey with checkpoints against the reference
// (the real shop) and keeps each checkpoint's region image by test and
// capture: the reference captures, taken the way a benchmark's author takes
// them, kept per test so that each journey is compared with what it took
// itself.
func recordCaptures(t *testing.T, b playwright.Browser, s *hiddentest.Suite, c Candidate) map[string]map[string]image.Image {
	t.Helper()
	caps := map[string]map[string]image.Image{}
	names := map[string]bool{}
	for _, test := range journeys(s) {
		if len(test.Checkpoints) == 0 {
			continue
		}
		caps[test.ID] = map[string]image.Image{}
		opts := JourneyOptionsFor(s)
		opts.Record = func(name string, img image.Image) {
			caps[test.ID][name] = img
			names[name] = true
		}
		out := playJourney(t.Context(), b, c, test, nil, opts)
		require.Equal(t, Passed, out.Result, "%s: %s", test.ID, out.Reason)
		require.Len(t, caps[test.ID], len(test.Checkpoints), test.ID)
	}
	require.ElementsMatch(t, hiddentest.SandboxShopSuiteCaptures(), mapKeys(names))
	return caps
}

// playJourney plays a journey the way the hidden-tests job does, through
// Decide: a run that failed or errored (a step outrunning its time on a busy
// machine) is played once more and the second run decides. Tests that look
// at a single run call RunJourney themselves.
func playJourney(ctx context.Context, b playwright.Browser, c Candidate, test *hiddentest.Test, caps func(string) (image.Image, bool), opts JourneyOptions) Outcome {
	return decided(ctx, test, func(ctx context.Context) Outcome { return RunJourney(ctx, b, c, test, caps, opts) })
}

// decided runs a test through Decide and returns the run that decided it.
func decided(ctx context.Context, test *hiddentest.Test, run func(context.Context) Outcome) Outcome {
	v := Decide(ctx, test.ID, run)
	return v.Runs[len(v.Runs)-1]
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func lookup(caps map[string]image.Image) func(string) (image.Image, bool) {
	return func(name string) (image.Image, bool) {
		img, ok := caps[name]
		return img, ok
	}
}

// playAll runs the tests in parallel and returns their outcomes by id. A
// journey that restarts the candidate gets a server of its own in front of
// handler, since a restart takes the whole site down for a moment; the
// restarts are counted in restarts.
func playAll(t *testing.T, b playwright.Browser, handler http.Handler, restarts *atomic.Int64, s *hiddentest.Suite, tests []*hiddentest.Test, caps map[string]map[string]image.Image) map[string]Outcome {
	t.Helper()
	shared, _ := shopWithHook(t, handler)
	var mu sync.Mutex
	out := map[string]Outcome{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, test := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c := shared
			if test.RestartsCandidate() {
				own, n := shopWithHook(t, handler)
				defer func() { restarts.Add(n.Load()) }()
				c = own
			}
			o := playJourney(t.Context(), b, c, test, lookup(caps[test.ID]), JourneyOptionsFor(s))
			mu.Lock()
			out[test.ID] = o
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func TestRunJourney_SandboxShop(t *testing.T) {
	t.Parallel()
	b := testJourneyBrowser(t)
	s := browserSuite(t)
	shop := sandbox.New(sandbox.Options{})
	cand, _ := shopWithHook(t, shop)
	caps := recordCaptures(t, b, s, cand)

	t.Run("the shop passes every journey", func(t *testing.T) {
		var restarts atomic.Int64
		outs := playAll(t, b, shop, &restarts, s, journeys(s), caps)
		require.Len(t, outs, 22)
		for id, o := range outs {
			require.Equal(t, Passed, o.Result, "%s: %s", id, o.Reason)
			require.Empty(t, o.Reason)
			test := s.Tests[slices.IndexFunc(s.Tests, func(x hiddentest.Test) bool { return x.ID == id })]
			require.Len(t, o.Checkpoints, len(test.Checkpoints), id)
			for _, cp := range o.Checkpoints {
				require.True(t, cp.Passed, "%s %s", id, cp.Capture)
				require.Greater(t, cp.Score, 0.98, "%s %s", id, cp.Capture)
				require.NotEmpty(t, cp.Candidate)
				require.NotEmpty(t, cp.Reference)
				require.NotEmpty(t, cp.Map)
			}
			for _, st := range o.Steps {
				require.Equal(t, Passed, st.Result, "%s step %d", id, st.Index)
				if st.Action == hiddentest.ActionCheckpoint {
					require.True(t, bytes.HasPrefix(st.Screenshot, []byte{0xff, 0xd8}), "%s step %d has a JPEG", id, st.Index)
				}
			}
		}
		// One restart per restart step; a journey played again on a busy
		// machine (Decide) restarts once more.
		require.GreaterOrEqual(t, restarts.Load(), int64(4), "one restart per restart step")
		require.LessOrEqual(t, restarts.Load(), int64(8))
	})

	t.Run("without a restart hook the restart journeys error", func(t *testing.T) {
		var restartJourneys []*hiddentest.Test
		for _, test := range journeys(s) {
			if test.RestartsCandidate() {
				restartJourneys = append(restartJourneys, test)
			}
		}
		require.Len(t, restartJourneys, 4)
		noHook := cand
		noHook.RestartURL = ""
		for _, test := range restartJourneys {
			o := RunJourney(t.Context(), b, noHook, test, lookup(caps[test.ID]), JourneyOptionsFor(s))
			require.Equal(t, Errored, o.Result, test.ID)
			require.Contains(t, o.Reason, "(restart): the candidate declared no restart hook", test.ID)
		}
	})

	t.Run("a missing reference capture errors", func(t *testing.T) {
		test := s.Tests[slices.IndexFunc(s.Tests, func(x hiddentest.Test) bool { return x.ID == "b1-home-page" })]
		without := map[string]image.Image{"shop-home-header": caps[test.ID]["shop-home-header"]}
		o := RunJourney(t.Context(), b, cand, &test, lookup(without), JourneyOptionsFor(s))
		require.Equal(t, Errored, o.Result)
		require.Equal(t, "step 5 (checkpoint product-card): reference capture product-card is missing", o.Reason)
		require.Len(t, o.Checkpoints, 2)
		require.True(t, o.Checkpoints[0].Passed)
		require.Equal(t, "reference capture product-card is missing", o.Checkpoints[1].Reason)
	})

	t.Run("a broken rebuild fails the journeys its defects touch", func(t *testing.T) {
		var restarts atomic.Int64
		outs := playAll(t, b, brokenRebuild(shop), &restarts, s, journeys(s), caps)
		var failedIDs []string
		for id, o := range outs {
			if o.Result != Passed {
				t.Logf("%s: %s", id, o.Reason)
				require.Equal(t, Failed, o.Result, "%s: %s", id, o.Reason)
				failedIDs = append(failedIDs, id)
				last := o.Steps[len(o.Steps)-1]
				require.Equal(t, Failed, last.Result)
				require.True(t, bytes.HasPrefix(last.Screenshot, []byte{0xff, 0xd8}), "%s: the failing step has a JPEG", id)
			}
		}
		slices.Sort(failedIDs)
		require.Equal(t, []string{"b1-product-page", "b1-tab-admin", "b2-admin-price-change", "b2-stock-after-order"}, failedIDs)
		require.Equal(t, `step 3 (expect visible role=heading name="Shop admin"): role=heading name="Shop admin": expected visible, found no matching element`,
			outs["b1-tab-admin"].Reason)
		require.Equal(t, `step 1 (fill label="Price ($)" nth=0 "30.00"): could not fill label="Price ($)" nth=0: no such element became ready in time`,
			outs["b2-admin-price-change"].Reason)
		require.Equal(t, `step 4 (expect visible text="12 in stock"): text="12 in stock": expected visible, found no matching element`,
			outs["b1-product-page"].Reason)
	})
}

// brokenRebuild is the shop with two defects: the admin page is missing (404)
// and product pages say "available" where the shop says "in stock".
func brokenRebuild(shop http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, rest, _ := strings.Cut(r.URL.Path, "/shop")
		switch {
		case strings.HasPrefix(rest, "/admin"):
			http.NotFound(w, r)
		case strings.HasPrefix(rest, "/products/"):
			rec := httptest.NewRecorder()
			shop.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				if k != "Content-Length" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			_, _ = io.WriteString(w, strings.ReplaceAll(rec.Body.String(), " in stock<", " available<"))
		default:
			shop.ServeHTTP(w, r)
		}
	})
}

func TestRunJourney_HostileCandidates(t *testing.T) {
	t.Parallel()
	b := testJourneyBrowser(t)
	release := make(chan struct{})
	var offHits atomic.Int64
	off := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offHits.Add(1)
		_, _ = io.WriteString(w, "off-site")
	}))
	t.Cleanup(off.Close)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>Internal</title><h1>INTERNAL SECRET</h1>")
	}))
	t.Cleanup(elsewhere.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/hang":
			// The head arrives, the rest never does: the page never finishes loading.
			_, _ = io.WriteString(w, "<!doctype html><title>Hang</title><h1>Loading")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/bounce":
			// A same-origin page that redirects to another origin: Chromium
			// follows redirects without asking the route again.
			http.Redirect(w, r, elsewhere.URL+"/secret", http.StatusFound)
		case "/embeds":
			fmt.Fprintf(w, `<!doctype html><title>Embeds</title><h1>Embeds</h1><img src="%s/pixel.png" alt="x"><a href="%s/away">Away</a>`, off.URL, off.URL)
		default:
			_, _ = io.WriteString(w, "<!doctype html><title>Home</title><h1>Home</h1><p id=slow></p>")
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cand := Candidate{BaseURL: srv.URL}
	opts := JourneyOptions{}
	journey := func(timeoutMS int, steps ...hiddentest.Step) *hiddentest.Test {
		return &hiddentest.Test{ID: "t", Group: hiddentest.GroupBrowser, Level: 1, TimeoutMS: timeoutMS, Journey: &hiddentest.Journey{Steps: steps}}
	}

	t.Run("a page that never finishes loading errors within the step's timeout", func(t *testing.T) {
		t.Parallel()
		test := journey(0, hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/hang", TimeoutMS: 1500})
		o := RunJourney(t.Context(), b, cand, test, nil, opts)
		require.Equal(t, Errored, o.Result)
		require.Equal(t, "step 0 (goto /hang): loading /hang did not finish loading within 1.5s", o.Reason)
		// The step's timeout ended it, not the test's own limit (how much
		// sooner depends on the machine's load, so no closer bound).
		require.Less(t, o.Duration, test.Timeout())
	})

	t.Run("the test's timeout bounds its steps", func(t *testing.T) {
		t.Parallel()
		o := RunJourney(t.Context(), b, cand, journey(4000,
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/"},
			hiddentest.Step{Action: hiddentest.ActionWaitForText, Text: "never shown"},
		), nil, opts)
		require.Equal(t, Errored, o.Result)
		// Step 1 on an idle machine; on a busy one the page may not even
		// load in time, and the test's limit ends step 0 instead.
		require.Regexp(t, `^step (0 \(goto /\)|1 \(wait_for_text "never shown"\)): the test did not finish within its 4s$`, o.Reason)
		// The test's 4 s limit ended the wait, not the step's own default.
		require.Less(t, o.Duration, (&hiddentest.Step{Action: hiddentest.ActionWaitForText}).Timeout()+stepGrace)
	})

	t.Run("a wait that is not met fails naming what was found", func(t *testing.T) {
		t.Parallel()
		o := RunJourney(t.Context(), b, cand, journey(0,
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/"},
			hiddentest.Step{Action: hiddentest.ActionWaitForURL, URL: "/cart", TimeoutMS: 500},
		), nil, opts)
		require.Equal(t, Failed, o.Result)
		require.Equal(t, `step 1 (wait_for_url /cart): the URL is "/", expected it equal to "/cart"`, o.Reason)
	})

	t.Run("other origins are never loaded", func(t *testing.T) {
		t.Parallel()
		o := RunJourney(t.Context(), b, cand, journey(0,
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/embeds"},
			hiddentest.Step{Action: hiddentest.ActionExpect, Expect: &hiddentest.Assertion{Kind: hiddentest.AssertTitle, TextMatch: hiddentest.TextMatch{Contains: "Embeds"}}},
			hiddentest.Step{Action: hiddentest.ActionClick, Locator: &hiddentest.Locator{Role: "link", Name: "Away"}},
			hiddentest.Step{Action: hiddentest.ActionExpect, TimeoutMS: 1000, Expect: &hiddentest.Assertion{Kind: hiddentest.AssertURL, TextMatch: hiddentest.TextMatch{Contains: "/away"}}},
		), nil, opts)
		require.Zero(t, offHits.Load(), "the off-site server was reached")
		require.Equal(t, Failed, o.Result, o.Reason)
		require.Contains(t, o.Reason, "step 3 (expect url)")
	})

	t.Run("a redirect to another origin stops the journey and keeps nothing of that page", func(t *testing.T) {
		t.Parallel()
		o := RunJourney(t.Context(), b, cand, journey(0,
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/bounce", TimeoutMS: 3000},
			hiddentest.Step{Action: hiddentest.ActionExpect, Expect: &hiddentest.Assertion{Kind: hiddentest.AssertTitle, TextMatch: hiddentest.TextMatch{Contains: "Internal"}}},
		), nil, opts)
		require.Equal(t, Errored, o.Result, o.Reason)
		require.Equal(t, "step 0 (goto /bounce): the candidate redirected the page to another origin ("+elsewhere.URL+"/secret), which journeys may not load; the test stopped there", o.Reason)
		require.Len(t, o.Steps, 1)
		require.Nil(t, o.Steps[0].Screenshot)
		require.NotContains(t, o.Reason, "INTERNAL SECRET")
	})

	t.Run("an unreachable candidate errors", func(t *testing.T) {
		t.Parallel()
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		o := RunJourney(t.Context(), b, Candidate{BaseURL: dead.URL}, journey(0, hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/"}), nil, opts)
		require.Equal(t, Errored, o.Result)
		require.Contains(t, o.Reason, "step 0 (goto /): loading / failed: ")
	})

	t.Run("the SSRF guard refuses an internal candidate before the browser goes there", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int64
		internal := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		t.Cleanup(internal.Close)
		o := RunJourney(t.Context(), b, Candidate{BaseURL: internal.URL}, journey(0, hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/"}),
			nil, JourneyOptions{Guard: netguard.New(nil, nil)})
		require.Equal(t, Errored, o.Result)
		require.Contains(t, o.Reason, "the candidate's address is refused: ")
		require.Empty(t, o.Steps)
		require.Zero(t, hits.Load())

		allowed := RunJourney(t.Context(), b, Candidate{BaseURL: internal.URL}, journey(0, hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/"}),
			nil, JourneyOptions{Guard: netguard.New([]string{"127.0.0.1"}, nil)})
		require.Equal(t, Passed, allowed.Result, allowed.Reason)
	})

	t.Run("through the browser proxy, a candidate whose name changes its address is refused at the connection (DNS rebinding)", func(t *testing.T) {
		t.Parallel()
		// The candidate answers on 127.0.0.2, an address the allow-list names;
		// its name then starts answering 127.0.0.1, where an internal service
		// listens on the same port.
		var candidateHits, internalHits atomic.Int64
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		require.NoError(t, err)
		cand := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			candidateHits.Add(1)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!doctype html><title>Candidate</title><h1>Candidate</h1>")
		}))
		cand.Listener = ln
		cand.Start()
		t.Cleanup(cand.Close)
		port := ln.Addr().(*net.TCPAddr).Port
		internalLn, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		require.NoError(t, err)
		internal := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			internalHits.Add(1)
			_, _ = io.WriteString(w, "<!doctype html><title>Internal</title><h1>INTERNAL SECRET</h1>")
		}))
		internal.Listener = internalLn
		internal.Start()
		t.Cleanup(internal.Close)

		guard := netguard.New([]string{"127.0.0.2"}, nil)
		var lookups atomic.Int64
		guard.LookupIP = func(_ context.Context, host string) ([]net.IP, error) {
			if host != "rebind.test" {
				return nil, fmt.Errorf("no such host %q", host)
			}
			if lookups.Add(1) <= 2 { // the check before the journey, then the first connection
				return []net.IP{net.ParseIP("127.0.0.2")}, nil
			}
			return []net.IP{net.ParseIP("127.0.0.1")}, nil
		}
		proxy, err := guard.NewProxy(nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		test := journey(0,
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/", TimeoutMS: 5000},
			hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/again", TimeoutMS: 5000},
			hiddentest.Step{Action: hiddentest.ActionExpect, Expect: &hiddentest.Assertion{Kind: hiddentest.AssertTitle, TextMatch: hiddentest.TextMatch{Contains: "Internal"}}},
		)
		o := RunJourney(t.Context(), b, Candidate{BaseURL: fmt.Sprintf("http://rebind.test:%d", port)}, test, nil,
			JourneyOptions{Guard: guard, Proxy: proxy})
		require.Len(t, o.Steps, 3, o.Reason)
		require.Equal(t, "/ → 200", o.Steps[0].Detail, "the first connection reaches the candidate")
		require.Equal(t, "/again → 403", o.Steps[1].Detail, "the second connection, to the new address, is refused by the proxy")
		require.Equal(t, Failed, o.Result, o.Reason)
		require.EqualValues(t, 1, candidateHits.Load())
		require.Zero(t, internalHits.Load(), "the browser never reached the internal service")
		require.EqualValues(t, 3, lookups.Load(), "every connection was resolved by the guard, none by the browser")
	})

	t.Run("a canceled caller ends the journey", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), 800*time.Millisecond)
		defer cancel()
		o := RunJourney(ctx, b, cand, journey(0, hiddentest.Step{Action: hiddentest.ActionGoto, URL: "/hang"}), nil, opts)
		require.Equal(t, Errored, o.Result)
		require.Contains(t, o.Reason, "step 0 (goto /hang): ")
		require.Less(t, o.Duration, 800*time.Millisecond+stepGrace)
	})
}

func TestRunJourney_CheckpointMasks(t *testing.T) {
	t.Parallel()
	b := testJourneyBrowser(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The stamp changes on every load, as a clock or an order number would.
		fmt.Fprintf(w, `<!doctype html><title>Card</title><div id="card" style="width:320px;padding:16px;font:16px sans-serif">
<h2>Order summary</h2><p>Two lamps, express shipping.</p>
<p class="stamp" style="font:bold 40px monospace">%s</p><p>Thank you for shopping with us.</p></div>`,
			strings.Repeat(fmt.Sprint(n.Add(1)%10), 8))
	}))
	t.Cleanup(srv.Close)
	cand := Candidate{BaseURL: srv.URL}
	test := func(masks ...hiddentest.Locator) *hiddentest.Test {
		return &hiddentest.Test{ID: "card", Group: hiddentest.GroupBrowser, Level: 1,
			Journey:     &hiddentest.Journey{Steps: []hiddentest.Step{{Action: hiddentest.ActionGoto, URL: "/"}}},
			Checkpoints: []hiddentest.Checkpoint{{Capture: "card", Region: hiddentest.Locator{CSS: "#card"}, Masks: masks, Threshold: ptrTo(0.99)}}}
	}
	var ref image.Image
	rec := RunJourney(t.Context(), b, cand, test(), nil, JourneyOptions{Record: func(_ string, img image.Image) { ref = img }})
	require.Equal(t, Passed, rec.Result, rec.Reason)
	require.NotNil(t, ref)
	caps := lookup(map[string]image.Image{"card": ref})

	unmasked := RunJourney(t.Context(), b, cand, test(), caps, JourneyOptions{})
	require.Equal(t, Failed, unmasked.Result)
	require.Contains(t, unmasked.Reason, "step 1 (checkpoint card): the region scored ")
	require.Len(t, unmasked.Checkpoints, 1)
	require.False(t, unmasked.Checkpoints[0].Passed)

	byCheckpoint := RunJourney(t.Context(), b, cand, test(hiddentest.Locator{CSS: ".stamp"}), caps, JourneyOptions{})
	require.Equal(t, Passed, byCheckpoint.Result, byCheckpoint.Reason)
	byRegion := RunJourney(t.Context(), b, cand, test(), caps, JourneyOptions{Regions: []hiddentest.Region{{Name: "stamp", Locator: hiddentest.Locator{CSS: ".stamp"}}}})
	require.Equal(t, Passed, byRegion.Result, byRegion.Reason)
	require.Greater(t, byRegion.Checkpoints[0].Score, unmasked.Checkpoints[0].Score)
}

func ptrTo[T any](v T) *T { return &v }
