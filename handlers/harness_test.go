package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/docs"
	"proctor/handlers"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/static"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// testBundle is a running server over a real, migrated SQLite database.
type testBundle struct {
	srv   *httptest.Server
	db    *storage.DB
	admin *client
	app   *handlers.Server
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := storagetest.OpenSQLite(t)
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer) // tests use IP literals: no DNS
	h, err := handlers.New(handlers.Options{LoginAttemptsPerMinute: 1000}, handlers.Deps{Evaluators: evaltest.Registry(), Runs: servicetest.Runs(db, 0), Benchmarks: servicetest.Benchmarks(db), Submissions: servicetest.Submissions(db), Teams: servicetest.Teams(db), Candidates: servicetest.Candidates(db, nil), Studies: servicetest.Studies(db, nil), Accounts: servicetest.Accounts(db), Moderation: servicetest.Moderation(db),
		Store: db, Static: static.Files(), Docs: docs.Files(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, db: db, app: h}
	b.admin = b.newUser(t, "admin@example.org", true)
	return b
}

// client is a browser-like HTTP client with its own cookie jar.
type client struct {
	t     *testing.T
	base  string
	http  *http.Client
	user  *models.User
	token string           // API bearer token when set
	app   *handlers.Server // for recording which routes each kind of caller reached
}

// role names the kind of caller for route coverage: anonymous, user or admin.
func (c *client) role() string {
	switch {
	case c.user == nil:
		return "anonymous"
	case c.user.IsAdmin:
		return "admin"
	}
	return "user"
}

// anonymous returns a client with no session.
func (b *testBundle) anonymous(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: b.srv.URL, app: b.app, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// newUser creates a user in the database and signs them in through the login form.
func (b *testBundle) newUser(t *testing.T, email string, admin bool) *client {
	t.Helper()
	u, err := b.db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
	require.NoError(t, err)
	c := b.anonymous(t)
	c.user = u
	res := c.postForm("/login", url.Values{"email": {email}, "password": {"correct horse battery"}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "login of %s", email)
	return c
}

var csrfPattern = regexp.MustCompile(`name="_csrf" value="([^"]+)"|name="csrf-token" content="([^"]+)"`)

// csrf fetches a page and returns the CSRF token it carries.
func (c *client) csrf() string {
	c.t.Helper()
	res := c.get("/")
	body := readBody(c.t, res)
	m := csrfPattern.FindStringSubmatch(body)
	require.NotNil(c.t, m, "no CSRF token on the page")
	if m[1] != "" {
		return m[1]
	}
	return m[2]
}

func (c *client) do(req *http.Request) *http.Response {
	c.t.Helper()
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.app != nil {
		coverage.record(c.app.RoutePattern(req.Method, req.URL.Path), req.Method, c.role())
	}
	res, err := c.http.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { res.Body.Close() })
	return res
}

func (c *client) get(path string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

// postForm submits a form with a valid CSRF token (unless one is given).
func (c *client) postForm(path string, form url.Values) *http.Response {
	c.t.Helper()
	form = cloneValues(form) // the caller's values may be reused for other clients
	if form.Get("_csrf") == "" && c.token == "" {
		form.Set("_csrf", c.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// postBoosted sends a form as htmx does for a boosted form on the page at
// from (a path of the server).
func (c *client) postBoosted(from, path string, form url.Values) *http.Response {
	c.t.Helper()
	form = cloneValues(form)
	if form.Get("_csrf") == "" && c.token == "" {
		form.Set("_csrf", c.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("HX-Boosted", "true")
	req.Header.Set("HX-Current-URL", c.base+from)
	return c.do(req)
}

// api sends a JSON request with the client's bearer token.
func (c *client) api(method, path string, body any) *http.Response {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.base+path, r)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.do(req)
}

func readBody(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// decodeJSON reads a JSON response body into v.
func decodeJSON(t *testing.T, res *http.Response, v any) {
	t.Helper()
	require.NoError(t, json.NewDecoder(res.Body).Decode(v))
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// authzCase is one row of a permission table: a request and the status each
// kind of caller must get. In path, form values and json, "{n}" becomes a number
// unique to the row and caller, so rows can create things without colliding.
type authzCase struct {
	method, path string
	form         url.Values // a page form (POST), or
	json         string     // an API body
	want         map[string]int
}

// send performs a table row as this client: API paths as JSON (with the client's
// bearer token, if any), page GETs as GETs, other page requests as forms.
func (c *client) send(tc authzCase, n string) *http.Response {
	c.t.Helper()
	path := strings.ReplaceAll(tc.path, "{n}", n)
	switch {
	case strings.HasPrefix(path, "/api/"):
		var payload any
		if tc.json != "" {
			payload = json.RawMessage(strings.ReplaceAll(tc.json, "{n}", n))
		}
		return c.api(tc.method, path, payload)
	case tc.method == http.MethodGet:
		return c.get(path)
	}
	form := url.Values{}
	for k, vs := range tc.form {
		for _, v := range vs {
			form.Add(k, strings.ReplaceAll(v, "{n}", n))
		}
	}
	return c.postForm(path, form)
}
