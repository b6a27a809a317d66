package handlers_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// setupQueueUI is setup with a stand-in for River UI that names the path it got.
func setupQueueUI(t *testing.T) *testBundle {
	t.Helper()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "queue ui "+r.Method+" "+r.URL.Path)
	})
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil), Moderation: servicetest.Moderation(db),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		QueueUI: stub,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	return b
}

// queueUIRequest sends a request the way River UI's script does: JSON from a
// page of this site, with Proctor's CSRF token only when csrf is set.
func (c *client) queueUIRequest(method, path string, csrf bool) *http.Response {
	c.t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(`{"ids":["1"]}`)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(c.t, err)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf {
		req.Header.Set("X-CSRF-Token", c.csrf())
	}
	return c.do(req)
}

// TestAuthz_QueueUI checks River UI's routes for each kind of caller: only
// administrators reach it. Writes carry the CSRF token here so that the
// permission, not the CSRF check, is what answers.
func TestAuthz_QueueUI(t *testing.T) {
	t.Parallel()
	b := setupQueueUI(t)
	clients := map[string]*client{
		"anonymous": b.anonymous(t),
		"user":      b.newUser(t, "user@example.org", false),
		"admin":     b.admin,
	}
	const ok, see, unauth, forbidden = http.StatusOK, http.StatusSeeOther, http.StatusUnauthorized, http.StatusForbidden
	adminOnly := func(anon int) map[string]int {
		return map[string]int{"anonymous": anon, "user": forbidden, "admin": ok}
	}
	for _, tc := range []struct {
		method, path string
		want         map[string]int
	}{
		{method: "GET", path: "/admin/queue", want: adminOnly(see)},
		{method: "GET", path: "/admin/queue/jobs", want: adminOnly(see)},
		{method: "GET", path: "/admin/queue/api/jobs?state=available", want: adminOnly(see)},
		{method: "POST", path: "/admin/queue/api/jobs/retry", want: adminOnly(unauth)},
		{method: "PUT", path: "/admin/queue/api/queues/episode/pause", want: adminOnly(unauth)},
		{method: "PATCH", path: "/admin/queue/api/queues/episode", want: adminOnly(unauth)},
	} {
		for _, actor := range []string{"anonymous", "user", "admin"} {
			want := tc.want[actor]
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				c := clients[actor]
				c.t = t
				res := c.queueUIRequest(tc.method, tc.path, tc.method != http.MethodGet)
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, tc.path, actor, body)
				require.NotContains(t, body, "did not come from this site", "the CSRF check must not be what refuses")
				switch want {
				case see:
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				case ok:
					require.True(t, strings.HasPrefix(body, "queue ui "+tc.method+" /admin/queue/"), body)
				}
			})
		}
	}
}

func TestQueueUI(t *testing.T) {
	t.Parallel()
	b := setupQueueUI(t)

	t.Run("Index", func(t *testing.T) {
		// The site drops trailing slashes; River UI gets its index as prefix + "/".
		res := b.admin.get("/admin/queue/")
		require.Equal(t, http.StatusMovedPermanently, res.StatusCode)
		require.Equal(t, "/admin/queue", res.Header.Get("Location"))
		res = b.admin.get("/admin/queue")
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "queue ui GET /admin/queue/", readBody(t, res))
	})
	t.Run("ContentSecurityPolicy", func(t *testing.T) {
		res := b.admin.get("/admin/queue/jobs")
		require.Equal(t, http.StatusOK, res.StatusCode)
		csp := res.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "style-src 'self' 'unsafe-inline';")
		require.Contains(t, csp, "script-src 'self';")
		require.Contains(t, csp, "frame-ancestors 'none'")
		require.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))

		res = b.admin.get("/admin")
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "style-src 'self';", "only River UI's pages allow inline styles")
	})
	t.Run("ActionsRefused", func(t *testing.T) {
		// River UI's own job and queue actions carry no CSRF token: the view is
		// read-only, whatever headers a same-origin script sends.
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch} {
			res := b.admin.queueUIRequest(method, "/admin/queue/api/jobs/cancel", false)
			require.Equal(t, http.StatusForbidden, res.StatusCode, method)
			require.Contains(t, readBody(t, res), "did not come from this site", method)
		}
	})
	t.Run("DashboardLink", func(t *testing.T) {
		body := readBody(t, b.admin.get("/admin"))
		require.Contains(t, body, `href="/admin/queue"`)
		require.Contains(t, body, `data-testid="queue-link"`)
	})
	t.Run("NotConfigured", func(t *testing.T) {
		t.Parallel()
		plain := setup(t) // no River UI in this process
		res := plain.admin.get("/admin/queue")
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		res = plain.newUser(t, "user@example.org", false).get("/admin/queue")
		require.Equal(t, http.StatusForbidden, res.StatusCode, "permission is checked before availability")
	})
}
