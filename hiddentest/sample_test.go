package hiddentest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/sandbox"
)

func parseSample(t *testing.T) *Suite {
	t.Helper()
	s, err := Parse(bytes.NewReader(SandboxShopSuite()))
	require.NoError(t, err)
	return s
}

func TestSandboxShopSuite_Counts(t *testing.T) {
	t.Parallel()
	s := parseSample(t)
	require.Equal(t, Summary{Total: 43, Request: 13, Browser: BrowserSummary{L1: 9, L2: 7, L3: 6}, System: 8}, s.Summary())

	// The summary is all a team sees: counts, nothing to build against.
	out, err := json.Marshal(s.Summary())
	require.NoError(t, err)
	require.JSONEq(t, `{"total":43,"request":13,"browser":{"l1":9,"l2":7,"l3":6},"system":8}`, string(out))

	kinds := map[string]int{}
	for _, test := range s.Tests {
		if test.System != nil {
			kinds[test.System.Kind+" "+test.System.Probe]++
		}
	}
	require.Equal(t, map[string]int{
		"health ": 1, "restart ": 1, "offline_build ": 1, "security path_traversal": 1,
		"security directory_listing": 1, "security error_disclosure": 2, "security security_headers": 1,
	}, kinds)
}

func TestSandboxShopSuite_RestartsCandidate(t *testing.T) {
	t.Parallel()
	s := parseSample(t)
	var restarting []string
	for _, test := range s.Tests {
		if test.RestartsCandidate() {
			restarting = append(restarting, test.ID)
		}
	}
	// The four journeys with a restart step, the restart test and the
	// offline build: nothing else may run against the candidate meanwhile.
	require.ElementsMatch(t, []string{
		"b3-cart-survives-restart", "b3-order-survives-restart", "b3-review-survives-restart", "b3-recovers-after-restart",
		"sys-restart", "sys-offline-build",
	}, restarting)
}

func TestSandboxShopSuite_ValidatesAgainstItsCaptures(t *testing.T) {
	t.Parallel()
	s := parseSample(t)
	require.Equal(t, SandboxShopSuiteCaptures(), s.Captures())
	has := func(names []string) func(string) bool {
		return func(name string) bool { return slices.Contains(names, name) }
	}
	require.NoError(t, Validate(s, has(SandboxShopSuiteCaptures())))

	// Without the cart table's capture, the one checkpoint naming it is refused.
	err := Validate(s, has(slices.DeleteFunc(SandboxShopSuiteCaptures(), func(n string) bool { return n == "cart-table" })))
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	i := slices.IndexFunc(s.Tests, func(t Test) bool { return t.ID == "b2-cart-read-back" })
	require.Equal(t, []Problem{{Path: fmt.Sprintf("tests[%d].checkpoints[0].capture", i), Message: `no reference capture named "cart-table"`}}, verr.Problems)
}

func TestSandboxShopSuite_RoundTrip(t *testing.T) {
	t.Parallel()
	s := parseSample(t)
	first, err := json.Marshal(s)
	require.NoError(t, err)
	again, err := Parse(bytes.NewReader(first))
	require.NoError(t, err)
	require.Equal(t, s, again)
	second, err := json.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, string(first), string(second))
}

func TestSandboxShopSuite_EveryGotoAnswersOnTheShop(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sandbox.New(sandbox.Options{}))
	t.Cleanup(srv.Close)
	n := 0
	for i, test := range parseSample(t).Tests {
		if test.Journey == nil {
			continue
		}
		for j, st := range test.Journey.Steps {
			if st.Action != ActionGoto {
				continue
			}
			resp, err := http.Get(JoinURL(fmt.Sprintf("%s/sandbox/g%d-%d/shop", srv.URL, i, j), st.URL))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s steps[%d] goto %s", test.ID, j, st.URL)
			n++
		}
	}
	require.Greater(t, n, 30)
}

// The HTTP side of the suite (request tests, health, restart and security
// probes) is run here against the real sandbox shop, which must pass all of it,
// and against a broken copy, which must fail exactly the tests its defects
// touch. Browser journeys need Chromium and are run by the executor.
func TestSandboxShopSuite_HTTPTestsOnTheShop(t *testing.T) {
	t.Parallel()
	s := parseSample(t)

	t.Run("the shop passes", func(t *testing.T) {
		t.Parallel()
		failed, ran := runHTTPTests(t, s, sandbox.New(sandbox.Options{}))
		require.Empty(t, failed)
		require.Equal(t, 13+7, ran) // every request and system test but the offline build
	})

	t.Run("a broken copy fails the tests its defects touch", func(t *testing.T) {
		t.Parallel()
		failed, _ := runHTTPTests(t, s, brokenShop(sandbox.New(sandbox.Options{})))
		ids := make([]string, 0, len(failed))
		for id := range failed {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		require.Equal(t, []string{"req-unknown-page", "sys-no-directory-listing", "sys-path-traversal", "sys-security-headers"}, ids)
		require.Equal(t, []string{"the status is 200, expected 404", `the body does not contain "There is no page at this address."`,
			`the body contains "All products"`}, failed["req-unknown-page"])
		require.Equal(t, []string{`/../../../../etc/passwd: the body shows "root:x:0:0:"`}, failed["sys-path-traversal"][:1])
	})
}

// brokenShop serves a soft 404 without security headers for unknown pages, a
// directory index under /static/ and /etc/passwd to paths that climb out.
func brokenShop(shop http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := r.URL.EscapedPath(); {
		case strings.HasSuffix(path, "/no-such-page"):
			_, _ = io.WriteString(w, "<h1>All products</h1>")
		case strings.Contains(path, "passwd"):
			_, _ = io.WriteString(w, "root:x:0:0:root:/root:/bin/bash\n")
		case strings.Contains(path, "/static/"):
			_, _ = io.WriteString(w, "<title>Index of /static/</title>")
		default:
			shop.ServeHTTP(w, r)
		}
	})
}

// runHTTPTests runs the suite's request and system tests (but the offline
// build, which needs a build command) against handler, each in a sandbox
// namespace of its own. The sandbox keeps its state in memory and stands for a
// candidate whose restart hook does nothing, so a restart test is its health
// check. It returns the failures of each failing test and how many tests ran.
func runHTTPTests(t *testing.T, s *Suite, handler http.Handler) (map[string][]string, int) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	failed := map[string][]string{}
	ran := 0
	for i, test := range s.Tests {
		base := fmt.Sprintf("%s/sandbox/t%d/shop", srv.URL, i)
		var fails []string
		switch {
		case test.Request != nil:
			fails = runRequest(t, base, test.Request)
		case test.System != nil && test.System.Kind == SystemSecurity:
			fails = runProbe(t, base, test.System)
		case test.System != nil && (test.System.Kind == SystemHealth || test.System.Kind == SystemRestart):
			fails = runHealth(t, base, test.System.Path)
		default:
			continue
		}
		ran++
		if len(fails) > 0 {
			failed[test.ID] = fails
		}
	}
	return failed, ran
}

func runRequest(t *testing.T, base string, r *RequestTest) []string {
	t.Helper()
	var body io.Reader
	contentType := r.ContentType
	switch {
	case len(r.Form) > 0:
		body, contentType = strings.NewReader(r.FormBody()), "application/x-www-form-urlencoded"
	case r.Body != "":
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequest(r.EffectiveMethod(), r.URL(base), body)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) > r.Redirects() {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	got := Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
	if loc, err := resp.Location(); err == nil {
		got.Location = RelativeURL(base, loc.String())
	}
	return r.Expect.Failures(got)
}

func runProbe(t *testing.T, base string, s *SystemTest) []string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var fails []string
	for _, p := range s.Paths {
		var body io.Reader
		if s.Body != "" {
			body = strings.NewReader(s.Body)
		}
		req, err := http.NewRequest((&RequestTest{Method: s.Method}).EffectiveMethod(), JoinURL(base, p), body)
		require.NoError(t, err)
		if s.ContentType != "" {
			req.Header.Set("Content-Type", s.ContentType)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		if why := s.ProbeFailure(resp.Header, data); why != "" {
			fails = append(fails, p+": "+why)
		}
	}
	return fails
}

func runHealth(t *testing.T, base, path string) []string {
	t.Helper()
	if path == "" {
		path = "/"
	}
	resp, err := http.Get(JoinURL(base, path))
	if err != nil {
		return []string{err.Error()}
	}
	require.NoError(t, resp.Body.Close())
	if !(Status{Class: 2}).Matches(resp.StatusCode) {
		return []string{fmt.Sprintf("%s answered %d", path, resp.StatusCode)}
	}
	return nil
}
