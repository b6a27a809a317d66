package handlers_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuthz_Public checks the site-wide routes (home, health, sign-up, log-in,
// log-out, the API index) for each kind of caller. Feature routes have their own
// tables (TestAuthz_Teams, TestAuthz_Agents, TestAuthz_Benchmarks); TestMain
// fails the package if any route is missing a kind of caller.
func TestAuthz_Public(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const ok, see, unauth = http.StatusOK, http.StatusSeeOther, http.StatusUnauthorized
	for _, tc := range []struct {
		method, path string
		form         url.Values
		want         map[string]int // by role
	}{
		{method: "GET", path: "/", want: map[string]int{"anonymous": ok, "user": ok, "admin": ok}},
		{method: "GET", path: "/healthz", want: map[string]int{"anonymous": ok, "user": ok, "admin": ok}},
		{method: "GET", path: "/readyz", want: map[string]int{"anonymous": ok, "user": ok, "admin": ok}},
		{method: "GET", path: "/api/v1", want: map[string]int{"anonymous": ok, "user": ok, "admin": ok}},
		{method: "GET", path: "/signup", want: map[string]int{"anonymous": ok, "user": see, "admin": see}},
		{method: "GET", path: "/login", want: map[string]int{"anonymous": ok, "user": see, "admin": see}},
		// Signing up again while signed in creates a second account; the form is
		// what is refused here (the email is taken).
		{method: "POST", path: "/signup", form: url.Values{"email": {"admin@example.org"}, "password": {"a long enough password"}}, want: map[string]int{"anonymous": http.StatusConflict, "user": http.StatusConflict, "admin": http.StatusConflict}},
		{method: "POST", path: "/logout", want: map[string]int{"anonymous": unauth, "user": see, "admin": see}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			for role, want := range tc.want {
				var c *client
				switch role {
				case "anonymous":
					c = b.anonymous(t)
				case "user":
					c = b.newUser(t, "user-"+randomSuffix(t)+"@example.org", false)
				case "admin":
					c = b.newUser(t, "admin-"+randomSuffix(t)+"@example.org", true)
				}
				c.t = t
				var res *http.Response
				if tc.method == http.MethodGet {
					res = c.get(tc.path)
				} else {
					res = c.postForm(tc.path, tc.form)
				}
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, tc.path, role, readBody(t, res))
			}
		})
	}
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
