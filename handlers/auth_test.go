package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage/artifact"
	"proctor/storage/storagetest"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("SignupLogsIn", func(t *testing.T) {
		c := b.anonymous(t)
		res := c.postForm("/signup", url.Values{"email": {"New@Example.org"}, "name": {"New"}, "password": {"a long enough password"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		body := readBody(t, c.get("/"))
		require.Contains(t, body, `data-testid="nav-account"`)
	})
	t.Run("SignupErrorsNextToField", func(t *testing.T) {
		c := b.anonymous(t)
		res := c.postForm("/signup", url.Values{"email": {"not-an-email"}, "password": {"a long enough password"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-email"`)
		res = c.postForm("/signup", url.Values{"email": {"x@example.org"}, "password": {"short"}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-password"`)
		res = c.postForm("/signup", url.Values{"email": {"admin@example.org"}, "password": {"a long enough password"}})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), "already exists")
	})
	t.Run("WrongPassword", func(t *testing.T) {
		c := b.anonymous(t)
		res := c.postForm("/login", url.Values{"email": {"admin@example.org"}, "password": {"wrong password!"}})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, readBody(t, res), "Email or password is incorrect.")
	})
	t.Run("CSRFRequired", func(t *testing.T) {
		c := b.anonymous(t)
		req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/login", strings.NewReader("email=a%40b.c&password=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res := c.do(req)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		res = c.postForm("/login", url.Values{"_csrf": {"forged-token-forged-token-forged-token"}, "email": {"a@b.c"}})
		require.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("SessionCookieFlags", func(t *testing.T) {
		c := b.anonymous(t)
		res := c.postForm("/login", url.Values{"email": {"admin@example.org"}, "password": {"correct horse battery"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		var found bool
		for _, ck := range res.Cookies() {
			if ck.Name == "proctor_session" {
				found = true
				require.True(t, ck.HttpOnly)
				require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
			}
		}
		require.True(t, found)
	})
	t.Run("Logout", func(t *testing.T) {
		c := b.newUser(t, "leaver@example.org", false)
		res := c.postForm("/logout", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.NotContains(t, readBody(t, c.get("/")), `data-testid="nav-account"`)
	})
	t.Run("OpenRedirectRefused", func(t *testing.T) {
		c := b.anonymous(t)
		res := c.postForm("/login", url.Values{"email": {"admin@example.org"}, "password": {"correct horse battery"}, "next": {"//evil.example/"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/"))
		require.False(t, strings.HasPrefix(res.Header.Get("Location"), "//"))
	})
}

// TestLoginThrottle shows sign-in throttled per address and per address
// and account, an account under attack from many addresses slowing those
// addresses down, and its owner signing in from a fresh address at once;
// every refusal carries Retry-After and is lifted when it says.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	_, loopback, err := net.ParseCIDR("127.0.0.0/8")
	require.NoError(t, err)
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 10, TrustedProxies: []*net.IPNet{loopback}}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock,
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db}
	_, err = db.CreateUser(context.Background(), "victim@example.org", "victim", "correct horse battery", false)
	require.NoError(t, err)

	// login signs in from address (as the proxy in front reports it).
	login := func(address, email, password string) (int, string) {
		t.Helper()
		c := b.anonymous(t)
		form := url.Values{"email": {email}, "password": {password}, "_csrf": {c.csrf()}}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/login", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", address)
		res := c.do(req)
		retry := res.Header.Get("Retry-After")
		if res.StatusCode == http.StatusTooManyRequests {
			require.NotEmpty(t, retry, "every 429 says when to try again")
			require.Contains(t, readBody(t, res), "Too many attempts. Wait ")
		}
		return res.StatusCode, retry
	}
	seconds := func(retry string) time.Duration {
		n, err := strconv.Atoi(retry)
		require.NoError(t, err, retry)
		return time.Duration(n) * time.Second
	}

	t.Run("PerAddress", func(t *testing.T) {
		for i := range 10 {
			code, _ := login("198.51.100.1", fmt.Sprintf("user%d@example.org", i), "guess")
			require.Equal(t, http.StatusUnauthorized, code, "attempt %d", i+1)
		}
		code, retry := login("198.51.100.1", "someone@example.org", "guess")
		require.Equal(t, http.StatusTooManyRequests, code, "the eleventh attempt of the minute")
		require.Equal(t, 60*time.Second, seconds(retry))
		advance(seconds(retry))
		code, _ = login("198.51.100.1", "someone@example.org", "guess")
		require.Equal(t, http.StatusUnauthorized, code, "allowed again when Retry-After said")
	})

	t.Run("PerAddressAndAccount", func(t *testing.T) {
		address := "198.51.100.2"
		for i := range 3 {
			code, _ := login(address, "victim@example.org", "guess")
			require.Equal(t, http.StatusUnauthorized, code, "failure %d is free", i+1)
		}
		code, _ := login(address, "victim@example.org", "guess")
		require.Equal(t, http.StatusUnauthorized, code)
		code, retry := login(address, "victim@example.org", "guess")
		require.Equal(t, http.StatusTooManyRequests, code, "after the fourth failure the address waits")
		require.Equal(t, time.Second, seconds(retry))
		code, _ = login("198.51.100.3", "victim@example.org", "correct horse battery")
		require.Equal(t, http.StatusSeeOther, code, "the owner elsewhere is not held")
		advance(time.Minute)
	})

	t.Run("AccountUnderAttackFromManyAddresses", func(t *testing.T) {
		// 60 addresses guess twice each: the account's failures pile up.
		for round := range 2 {
			for i := range 60 {
				code, retry := login(fmt.Sprintf("203.0.113.%d", i+1), "victim@example.org", fmt.Sprintf("guess %d", round))
				if code == http.StatusTooManyRequests {
					require.LessOrEqual(t, seconds(retry), 30*time.Second, "an account's delay stays short")
					continue
				}
				require.Equal(t, http.StatusUnauthorized, code)
			}
		}
		// An attacking address is slowed by the account's failures...
		code, retry := login("203.0.113.1", "victim@example.org", "another guess")
		require.Equal(t, http.StatusTooManyRequests, code)
		wait := seconds(retry)
		require.Greater(t, wait, time.Second)
		require.LessOrEqual(t, wait, 30*time.Second)
		// ...while the owner, from an address that has not failed, gets in at once.
		code, _ = login("192.0.2.77", "victim@example.org", "correct horse battery")
		require.Equal(t, http.StatusSeeOther, code)
		// Her success forgets the account's failures; the attacker's own
		// address still waits out what it earned.
		advance(wait)
		code, _ = login("203.0.113.1", "victim@example.org", "another guess")
		require.Equal(t, http.StatusUnauthorized, code)
	})

	t.Run("SignUpPerAddress", func(t *testing.T) {
		c := b.anonymous(t)
		var res *http.Response
		for i := range 11 {
			res = c.postForm("/signup", url.Values{"email": {fmt.Sprintf("new%d@example.org", i)}, "name": {"New"}, "password": {"short"}})
		}
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		require.NotEmpty(t, res.Header.Get("Retry-After"))
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.anonymous(t)
	res := c.get("/healthz")
	require.Equal(t, http.StatusOK, res.StatusCode)
	res = c.get("/readyz")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, readBody(t, res), `"status":"ok"`)
}

// TestHealth_ArtifactsLowOnSpace shows /readyz answering 503 with
// "low_space" while the local artifact store's file system has less free
// space than configured, and ready again once the threshold is met.
func TestHealth_ArtifactsLowOnSpace(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	store, err := artifact.NewLocal(t.TempDir(), artifact.NewURLSigner([]byte(strings.Repeat("s", 32))), "")
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	h, err := handlers.New(handlers.Options{}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Store: db, Artifacts: store, Static: static.Files(), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := (&testBundle{srv: srv, db: db, app: h}).anonymous(t)

	store.SetMinFreeBytes(1 << 62) // more than any disk holds
	res := c.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.JSONEq(t, `{"status":"unavailable","checks":{"database":"ok","artifacts":"low_space"}}`, readBody(t, res))

	store.SetMinFreeBytes(1)
	res = c.get("/readyz")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.JSONEq(t, `{"status":"ok","checks":{"database":"ok","artifacts":"ok"}}`, readBody(t, res))
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.anonymous(t)
	res := c.get("/no/such/page")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	body := readBody(t, res)
	require.Contains(t, body, `data-testid="error-page"`)
	require.NotContains(t, body, "echo")
	res = c.get("/api/v1/no/such")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.JSONEq(t, `{"error":{"code":"not_found","message":"There is nothing at this address."}}`, readBody(t, res))
}

func TestAPI_ErrorsNameTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := withToken(t, b, b.admin)
	res := c.api(http.MethodPost, "/api/v1/teams", map[string]any{"name": "Lab", "bogus": 1})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.JSONEq(t, `{"error":{"code":"invalid","field":"bogus","message":"unknown field \"bogus\""}}`, readBody(t, res))

	res = c.api(http.MethodPost, "/api/v1/teams", map[string]any{"name": ""})
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	var got struct {
		Error struct{ Code, Field, Message string }
	}
	decodeJSON(t, res, &got)
	require.Equal(t, "invalid", got.Error.Code)
	require.Equal(t, "name", got.Error.Field)

	res = c.api(http.MethodGet, "/api/v1/benchmarks?per_page=0", nil)
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, readBody(t, res), `"field":"per_page"`)

	for _, path := range []string{"/api/v1/benchmarks", "/api/v1/teams", "/api/v1/agents", "/teams", "/agents"} {
		res = c.api(http.MethodGet, path+"?page=4611686018427387905", nil)
		require.Equal(t, http.StatusBadRequest, res.StatusCode, path)
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for next, want := range map[string]string{
		"/teams/lab":           "/teams/lab",
		"/benchmarks?site=x":   "/benchmarks?site=x",
		"//evil.example/":      "/",
		"/\\evil.example":      "/",
		"/\t/evil.example":     "/",
		"/\n/evil.example":     "/",
		"https://evil.example": "/",
		"javascript:alert(1)":  "/",
		"evil.example":         "/",
	} {
		c := b.anonymous(t)
		res := c.postForm("/login", url.Values{"email": {"admin@example.org"}, "password": {"correct horse battery"}, "next": {next}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, next)
		loc := res.Header.Get("Location")
		if want == "/" {
			require.Equal(t, "/?notice=signed-in", loc, "next=%q", next)
		} else {
			require.Equal(t, want, loc, "next=%q", next)
		}
	}
}

// TestClientAddress: without trusted proxies a forged X-Forwarded-For changes
// nothing, so the login limit still applies to the real peer.
func TestClientAddress_ForwardedForIgnored(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 2}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := (&testBundle{srv: srv, db: db}).anonymous(t)
	var codes []int
	for i := 0; i < 4; i++ {
		form := url.Values{"email": {"victim" + strconv.Itoa(i) + "@example.org"}, "password": {"guess guess guess"}, "_csrf": {c.csrf()}}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/login", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", "203.0.113."+strconv.Itoa(i))
		codes = append(codes, c.do(req).StatusCode)
	}
	require.Equal(t, []int{401, 401, 429, 429}, codes)
}

func TestRequestLog_HidesInviteTokens(t *testing.T) {
	t.Parallel()
	db := storagetest.OpenSQLite(t)
	var logs syncBuffer
	h, err := handlers.New(handlers.Options{}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Teams: servicetest.Teams(db), Accounts: servicetest.Accounts(db), Candidates: servicetest.Candidates(db, nil),
		Store: db, Static: static.Files(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := (&testBundle{srv: srv, db: db}).anonymous(t)
	c.get("/invites/inv_secretsecretsecret")
	require.Contains(t, logs.String(), "path=/invites/:token")
	require.NotContains(t, logs.String(), "inv_secretsecretsecret")
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
