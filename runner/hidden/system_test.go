package hidden

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/hiddentest"
)

func systemTest(timeoutMS int, s hiddentest.SystemTest) *hiddentest.Test {
	return &hiddentest.Test{ID: "s", Group: hiddentest.GroupSystem, TimeoutMS: timeoutMS, System: &s}
}

func TestRunSystem(t *testing.T) {
	t.Parallel()
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.EscapedPath() {
		case "/up", "/declared-health":
			io.WriteString(w, "ok")
		case "/down":
			http.Error(w, "down", http.StatusServiceUnavailable)
		case "/hang":
			<-r.Context().Done()
		case "/hook-broken":
			http.Error(w, "cannot restart", http.StatusInternalServerError)
		case "/hook-ok":
			w.WriteHeader(http.StatusNoContent)
		case "/leaky/../../etc/passwd":
			io.WriteString(w, "root:x:0:0:root:/root:/bin/bash")
		case "/leaky/boom":
			w.Header().Set("X-Content-Type-Options", "nosniff")
			http.Error(w, "panic: runtime error\ngoroutine 1 [running]:", http.StatusInternalServerError)
		default:
			w.Header().Set("X-Content-Type-Options", "nosniff")
			io.WriteString(w, "fine")
		}
	})
	client := loopbackClient()
	plain := Candidate{BaseURL: base}

	tests := []struct {
		name      string
		candidate Candidate
		test      *hiddentest.Test
		result    string
		reason    string // exact, or a prefix when it ends with "…"
		steps     int
	}{
		{name: "health answers 2xx", candidate: plain, test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemHealth, Path: "/up"}),
			result: Passed, steps: 1},
		{name: "health uses the declared health URL without a path", candidate: Candidate{BaseURL: base + "/nothing-here", HealthURL: base + "/declared-health"},
			test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemHealth}), result: Passed, steps: 1},
		{name: "health answering 503 fails", candidate: plain, test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemHealth, Path: "/down"}),
			result: Failed, reason: "the health URL answered 503, expected 2xx", steps: 1},
		{name: "health that hangs errors", candidate: plain, test: systemTest(300, hiddentest.SystemTest{Kind: hiddentest.SystemHealth, Path: "/hang"}),
			result: Errored, reason: "no answer within 300ms", steps: 1},
		{name: "restart without a hook", candidate: plain, test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemRestart, Path: "/up"}),
			result: Errored, reason: NoRestartHookReason},
		{name: "a restart hook answering 500 errors", candidate: Candidate{BaseURL: base, RestartURL: base + "/hook-broken"},
			test:   systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemRestart, Path: "/up"}),
			result: Errored, reason: "the restart hook answered 500, expected 2xx", steps: 1},
		{name: "a restart hook that hangs errors", candidate: Candidate{BaseURL: base, RestartURL: base + "/hang"},
			test:   systemTest(300, hiddentest.SystemTest{Kind: hiddentest.SystemRestart, Path: "/up"}),
			result: Errored, reason: "the restart hook: no answer within 300ms", steps: 1},
		{name: "a candidate that does not come back fails", candidate: Candidate{BaseURL: base, RestartURL: base + "/hook-ok"},
			test:   systemTest(700, hiddentest.SystemTest{Kind: hiddentest.SystemRestart, Path: "/down"}),
			result: Failed, reason: "the candidate did not answer 2xx at its health URL within 700ms of the restart (…", steps: 2},
		{name: "a restart that comes back passes", candidate: Candidate{BaseURL: base, RestartURL: base + "/hook-ok"},
			test:   systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemRestart, Path: "/up"}),
			result: Passed, steps: 2},
		{name: "a probe lists every response that shows what it looks for", candidate: Candidate{BaseURL: base + "/leaky"},
			test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemSecurity, Probe: hiddentest.ProbeErrorDisclosure,
				Paths: []string{"/fine", "/boom"}, Markers: []string{"fine"}}),
			result: Failed, reason: `/fine: the body shows "fine"; /boom: the body shows "goroutine "`, steps: 2},
		{name: "paths are sent as written", candidate: Candidate{BaseURL: base + "/leaky"},
			test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemSecurity, Probe: hiddentest.ProbePathTraversal,
				Paths: []string{"/../../etc/passwd"}}),
			result: Failed, reason: `/../../etc/passwd: the body shows "root:x:0:0:"`, steps: 1},
		{name: "security headers", candidate: plain,
			test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemSecurity, Probe: hiddentest.ProbeSecurityHeaders,
				Paths: []string{"/a", "/b"}, Headers: []string{"X-Content-Type-Options"}}),
			result: Passed, steps: 2},
		{name: "offline build is not run here", candidate: plain, test: systemTest(0, hiddentest.SystemTest{Kind: hiddentest.SystemOfflineBuild}),
			result: NotRun, reason: OfflineBuildReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out := RunSystem(t.Context(), client, tc.candidate, tc.test)
			require.Less(t, time.Since(start), 5*time.Second)
			require.Equal(t, tc.result, out.Result, "%s %+v", out.Reason, out.Steps)
			if prefix, ok := strings.CutSuffix(tc.reason, "…"); ok {
				require.True(t, strings.HasPrefix(out.Reason, prefix), out.Reason)
			} else {
				require.Equal(t, tc.reason, out.Reason)
			}
			require.Len(t, out.Steps, tc.steps)
			if tc.steps > 0 && tc.result != Passed {
				require.Equal(t, tc.result, out.Steps[len(out.Steps)-1].Result)
			}
			// Results may be shown to people who may not see the hooks.
			for _, st := range out.Steps {
				if tc.candidate.RestartURL != "" {
					require.NotContains(t, st.Detail+st.Reason, tc.candidate.RestartURL)
				}
				if st.Action == "restart" {
					require.True(t, strings.HasPrefix(st.Detail, "POST <restart hook>"), st.Detail)
				}
			}
			if tc.candidate.RestartURL != "" {
				require.NotContains(t, out.Reason, tc.candidate.RestartURL)
			}
		})
	}
}
