package hidden

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
	"proctor/netguard"
	"proctor/sandbox"
)

// loopbackClient is the executor's client with the test servers' loopback
// address allow-listed, as an admin would list an internal candidate host.
func loopbackClient() *http.Client {
	return NewClient(netguard.New([]string{"127.0.0.1"}, nil))
}

func sampleSuite(t *testing.T) *hiddentest.Suite {
	t.Helper()
	s, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	require.NoError(t, err)
	return s
}

// restartableShop is the sandbox shop with a restart hook at /restart that
// takes the site down (503) for a moment and brings it back, as a real
// restart would.
func restartableShop(t *testing.T) *httptest.Server {
	t.Helper()
	shop := sandbox.New(sandbox.Options{})
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/restart" && r.Method == http.MethodPost:
			down.Store(true)
			time.AfterFunc(600*time.Millisecond, func() { down.Store(false) })
			w.WriteHeader(http.StatusAccepted)
		case down.Load():
			http.Error(w, "restarting", http.StatusServiceUnavailable)
		default:
			shop.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The sandbox shop is an exact copy of itself: every request and system test
// of the sample suite that runs over HTTP passes on it, but the offline build,
// which Proctor cannot run, and the restart test, which needs a hook.
func TestSandboxShopSuite_OverHTTP(t *testing.T) {
	t.Parallel()
	s := sampleSuite(t)
	srv := restartableShop(t)
	client := loopbackClient()
	noHook := Candidate{BaseURL: srv.URL + "/sandbox/{visitor}/shop"}
	withHook := noHook
	withHook.RestartURL = srv.URL + "/restart"

	ran := 0
	for i := range s.Tests {
		test := &s.Tests[i]
		var out Outcome
		switch {
		case test.Request != nil:
			out = RunRequest(t.Context(), client, noHook, test)
		case test.System != nil:
			out = RunSystem(t.Context(), client, noHook, test)
		default:
			continue
		}
		ran++
		require.Equal(t, test.ID, out.TestID)
		switch test.ID {
		case "sys-offline-build":
			require.Equal(t, NotRun, out.Result)
			require.Equal(t, OfflineBuildReason, out.Reason)
		case "sys-restart":
			require.Equal(t, Errored, out.Result)
			require.Equal(t, NoRestartHookReason, out.Reason)
		default:
			require.Equal(t, Passed, out.Result, "%s: %s", test.ID, out.Reason)
			require.Empty(t, out.Reason, test.ID)
			require.NotEmpty(t, out.Steps, test.ID)
			for _, st := range out.Steps {
				require.Equal(t, Passed, st.Result, "%s: %+v", test.ID, st)
				require.NotContains(t, st.Detail, VisitorToken, test.ID)
			}
		}
	}
	require.Equal(t, 13+8, ran)

	t.Run("restart with a hook", func(t *testing.T) {
		i := sampleIndex(t, s, "sys-restart")
		out := RunSystem(t.Context(), client, withHook, &s.Tests[i])
		require.Equal(t, Passed, out.Result, out.Reason)
		require.Len(t, out.Steps, 2)
		require.Equal(t, "restart", out.Steps[0].Action)
		require.Equal(t, "POST <restart hook> → 202", out.Steps[0].Detail, "the hook is named by its role, never by its address")
		require.Equal(t, "wait_healthy", out.Steps[1].Action)
		require.GreaterOrEqual(t, out.Duration, 500*time.Millisecond, "the site was down for 600 ms")
	})
}

func sampleIndex(t *testing.T, s *hiddentest.Suite, id string) int {
	t.Helper()
	for i := range s.Tests {
		if s.Tests[i].ID == id {
			return i
		}
	}
	t.Fatalf("no test %q", id)
	return -1
}

func requestTest(timeoutMS int, r hiddentest.RequestTest) *hiddentest.Test {
	if r.Expect.Status == nil {
		r.Expect.Status = &hiddentest.Status{Class: 2}
	}
	return &hiddentest.Test{ID: "t", Group: hiddentest.GroupRequest, TimeoutMS: timeoutMS, Request: &r}
}

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRunRequest_Exchanges(t *testing.T) {
	t.Parallel()
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/login":
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1", Path: "/"})
			http.Redirect(w, r, "/v1/account", http.StatusSeeOther)
		case "/v1/account":
			c, err := r.Cookie("session")
			if err != nil {
				http.Error(w, "no session", http.StatusForbidden)
				return
			}
			fmt.Fprintf(w, "method %s session %s", r.Method, c.Value)
		case "/v1/hop1":
			http.Redirect(w, r, "hop2", http.StatusFound)
		case "/v1/hop2":
			http.Redirect(w, r, "/v1/hop3", http.StatusFound)
		case "/v1/hop3":
			io.WriteString(w, "end")
		case "/v1/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Seen", r.Header.Get("X-Probe"))
			fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RawQuery, r.Header.Get("Content-Type"), body)
		}
	})
	candidate := Candidate{BaseURL: base + "/v1"}
	client := loopbackClient()

	t.Run("a followed redirect keeps cookies and turns the POST into a GET", func(t *testing.T) {
		out := RunRequest(t.Context(), client, candidate, requestTest(0, hiddentest.RequestTest{
			Method: "POST", Path: "/login?who=a", Form: map[string]string{"x": "1"}, FollowRedirects: true,
			Expect: hiddentest.RequestExpect{BodyContains: []string{"method GET session s1"}},
		}))
		require.Equal(t, Passed, out.Result, out.Reason)
		require.Len(t, out.Steps, 2)
		require.Equal(t, "POST "+base+"/v1/login?who=a → 303", out.Steps[0].Detail)
		require.Equal(t, "GET "+base+"/v1/account → 200", out.Steps[1].Detail)
		require.Equal(t, 1, out.Steps[1].Index)
	})

	t.Run("without following, the location is checked relative to the base", func(t *testing.T) {
		out := RunRequest(t.Context(), client, candidate, requestTest(0, hiddentest.RequestTest{
			Path: "/login", Expect: hiddentest.RequestExpect{
				Status: &hiddentest.Status{Code: 303}, Location: &hiddentest.TextMatch{Equals: ptr("/account")},
			},
		}))
		require.Equal(t, Passed, out.Result, out.Reason)
		require.Len(t, out.Steps, 1)
	})

	t.Run("more redirects than allowed: the last answer is judged, with a note", func(t *testing.T) {
		out := RunRequest(t.Context(), client, candidate, requestTest(0, hiddentest.RequestTest{
			Path: "/hop1", FollowRedirects: true, MaxRedirects: 1,
		}))
		require.Equal(t, Failed, out.Result)
		require.Equal(t, "the status is 302, expected 2xx; stopped following redirects after 1, as the test allows", out.Reason)
		require.Len(t, out.Steps, 2)
		require.Equal(t, Failed, out.Steps[1].Result)

		out = RunRequest(t.Context(), client, candidate, requestTest(0, hiddentest.RequestTest{
			Path: "/hop1", FollowRedirects: true, MaxRedirects: 2, Expect: hiddentest.RequestExpect{BodyContains: []string{"end"}},
		}))
		require.Equal(t, Passed, out.Result, out.Reason)
		require.Len(t, out.Steps, 3)
	})

	t.Run("query, body, headers; every failure listed", func(t *testing.T) {
		out := RunRequest(t.Context(), client, candidate, requestTest(0, hiddentest.RequestTest{
			Method: "PUT", Path: "/echo?a=1", Query: map[string]string{"b": "2 3"}, Body: `{"k":1}`, ContentType: "application/json",
			Headers: map[string]string{"X-Probe": "yes"},
			Expect: hiddentest.RequestExpect{
				BodyContains: []string{`PUT a=1&b=2+3 application/json {"k":1}`, "absent-1", "absent-2"},
				Headers:      []hiddentest.HeaderExpect{{Name: "x-seen", TextMatch: hiddentest.TextMatch{Equals: ptr("yes")}}},
			},
		}))
		require.Equal(t, Failed, out.Result)
		require.Equal(t, `the body does not contain "absent-1"; the body does not contain "absent-2"`, out.Reason)
	})
}

func ptr[T any](v T) *T { return &v }

func TestRunRequest_VisitorIsFreshPerTest(t *testing.T) {
	t.Parallel()
	var seen []string
	base := serve(t, func(w http.ResponseWriter, r *http.Request) { seen = append(seen, r.URL.Path) })
	c := Candidate{BaseURL: base + "/ns/{visitor}/shop"}
	for range 2 {
		out := RunRequest(t.Context(), loopbackClient(), c, requestTest(0, hiddentest.RequestTest{Path: "/"}))
		require.Equal(t, Passed, out.Result, out.Reason)
	}
	require.Len(t, seen, 2)
	require.NotEqual(t, seen[0], seen[1])
	for _, p := range seen {
		require.Regexp(t, `^/ns/v[0-9a-f]{16}/shop/$`, p)
	}
}

// Hostile candidates end their tests Errored (or, for an endless body,
// judged on what was read) and never hold the worker past the test's timeout.
func TestRunRequest_HostileCandidates(t *testing.T) {
	t.Parallel()
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	loop := serve(t, func(w http.ResponseWriter, r *http.Request) {
		next := map[string]string{"/a": "/b", "/b": "/c", "/c": "/a"}[r.URL.Path]
		http.Redirect(w, r, next, http.StatusFound)
	})
	endless := serve(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("lorem ipsum "), 4096)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	tests := []struct {
		name     string
		client   *http.Client
		base     string
		test     *hiddentest.Test
		result   string
		reason   string // exact, or a prefix when it ends with "…"
		maxTaken time.Duration
	}{
		{name: "a hung candidate", base: hang, test: requestTest(300, hiddentest.RequestTest{Path: "/"}),
			result: Errored, reason: "no answer within 300ms", maxTaken: 3 * time.Second},
		{name: "a redirect loop", base: loop, test: requestTest(0, hiddentest.RequestTest{Path: "/a", FollowRedirects: true}),
			result: Errored, reason: "redirect loop: " + loop + "/a → " + loop + "/b → " + loop + "/c → " + loop + "/a", maxTaken: 5 * time.Second},
		{name: "an endless body is capped and judged on its first bytes", base: endless,
			test:   requestTest(0, hiddentest.RequestTest{Path: "/", Expect: hiddentest.RequestExpect{BodyContains: []string{"lorem ipsum"}}}),
			result: Passed, maxTaken: 10 * time.Second},
		{name: "an endless body failing a check says it was capped", base: endless,
			test:   requestTest(0, hiddentest.RequestTest{Path: "/", Expect: hiddentest.RequestExpect{BodyContains: []string{"</html>"}}}),
			result: Failed, reason: `the body does not contain "</html>"; ` + truncatedNote(), maxTaken: 10 * time.Second},
		{name: "connection refused", base: closed, test: requestTest(0, hiddentest.RequestTest{Path: "/"}),
			result: Errored, reason: "unreachable: connection refused", maxTaken: 5 * time.Second},
		{name: "a host that does not resolve", base: "http://no-such-host.invalid", test: requestTest(0, hiddentest.RequestTest{Path: "/"}),
			result: Errored, reason: "unreachable: …", maxTaken: 10 * time.Second},
		{name: "an address the SSRF guard refuses", client: NewClient(netguard.New(nil, nil)), base: hang,
			test:   requestTest(0, hiddentest.RequestTest{Path: "/"}),
			result: Errored, reason: `the SSRF guard refused the candidate's address: host "127.0.0.1" resolves to a loopback address (127.0.0.1)…`, maxTaken: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := tc.client
			if client == nil {
				client = loopbackClient()
			}
			start := time.Now()
			out := RunRequest(t.Context(), client, Candidate{BaseURL: tc.base}, tc.test)
			require.Less(t, time.Since(start), tc.maxTaken)
			require.Equal(t, tc.result, out.Result, "%s %+v", out.Reason, out.Steps)
			if prefix, ok := strings.CutSuffix(tc.reason, "…"); ok {
				require.True(t, strings.HasPrefix(out.Reason, prefix), out.Reason)
			} else {
				require.Equal(t, tc.reason, out.Reason)
			}
			require.NotEmpty(t, out.Steps)
			require.Equal(t, tc.result, out.Steps[len(out.Steps)-1].Result)
		})
	}
}

func TestRunRequest_CanceledByTheCaller(t *testing.T) {
	t.Parallel()
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	out := RunRequest(ctx, loopbackClient(), Candidate{BaseURL: hang}, requestTest(0, hiddentest.RequestTest{Path: "/"}))
	require.Equal(t, Errored, out.Result)
	require.Equal(t, "the test was canceled", out.Reason)
}
