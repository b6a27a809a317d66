package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
)

var tokenPattern = regexp.MustCompile(`prt_[A-Za-z0-9_-]{43}`)

// actorCtx returns a context acting as the client's user, for direct store calls.
func actorCtx(c *client) context.Context {
	u := c.user
	return models.WithActor(context.Background(), models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin})
}

// withToken returns a copy of c that authenticates with a new API token.
func withToken(t *testing.T, b *testBundle, c *client) *client {
	t.Helper()
	unique, _ := models.NewToken("")
	_, plain, err := servicetest.Teams(b.db).CreateAPIToken(actorCtx(c), "test "+unique[:10])
	require.NoError(t, err)
	cp := *c
	cp.t = t
	cp.token = plain
	return &cp
}

func TestAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.newUser(t, "alice@example.org", false)

	t.Run("AnonymousRedirectsToLogin", func(t *testing.T) {
		res := b.anonymous(t).get("/account")
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/login?next=%2Faccount", res.Header.Get("Location"))
	})
	t.Run("ShowsProfileTeamsTokens", func(t *testing.T) {
		_, err := servicetest.Teams(b.db).CreateTeam(actorCtx(alice), "Alice Lab", "", "")
		require.NoError(t, err)
		res := alice.get("/account")
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="account-email">alice@example.org<`)
		require.Contains(t, body, `data-testid="account-team-row"`)
		require.Contains(t, body, `href="/teams/alice-lab"`)
		require.Contains(t, body, `data-testid="no-tokens"`)
		require.Contains(t, body, `data-testid="create-token-form"`)
		require.Contains(t, body, `<th scope="col">Team</th>`)
	})
	t.Run("TokenPlaintextShownOnce", func(t *testing.T) {
		res := alice.postForm("/account/tokens", url.Values{"name": {"laptop"}})
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="token-plaintext"`)
		require.Contains(t, body, "Copy your new token now")
		plain := tokenPattern.FindString(body)
		require.NotEmpty(t, plain)
		require.Equal(t, 1, strings.Count(body, plain), "the plaintext appears exactly once")

		page := readBody(t, alice.get("/account"))
		require.NotContains(t, page, plain)
		require.NotContains(t, page, `data-testid="token-plaintext"`)
		require.Contains(t, page, plain[:12]+"…", "the prefix identifies the token")
		require.Contains(t, page, `data-testid="token-name">laptop<`)
		require.Contains(t, page, "never", "not used yet")

		api := *alice
		api.t, api.token = t, plain
		require.Equal(t, http.StatusOK, api.api(http.MethodGet, "/api/v1/me", nil).StatusCode)
		page = readBody(t, alice.get("/account"))
		require.NotContains(t, page, plain)
		require.NotContains(t, page, "<td>never</td>", "last used is recorded")
	})
	t.Run("TokenNameErrors", func(t *testing.T) {
		res := alice.postForm("/account/tokens", url.Values{"name": {"laptop"}})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		body := readBody(t, res)
		require.Contains(t, body, `data-testid="error-name"`)
		require.Contains(t, body, "a token named &#34;laptop&#34; already exists")
		require.NotRegexp(t, tokenPattern, body)

		res = alice.postForm("/account/tokens", url.Values{"name": {"  "}})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, readBody(t, res), `data-testid="error-name"`)
	})
	t.Run("Revoke", func(t *testing.T) {
		tok, plain, err := servicetest.Teams(b.db).CreateAPIToken(actorCtx(alice), "to revoke")
		require.NoError(t, err)
		path := "/account/tokens/" + strconv.FormatInt(tok.ID, 10) + "/revoke"
		bob := b.newUser(t, "bob@example.org", false)
		require.Equal(t, http.StatusNotFound, bob.postForm(path, nil).StatusCode)
		require.Equal(t, http.StatusNotFound, b.admin.postForm(path, nil).StatusCode)
		require.Equal(t, http.StatusUnauthorized, b.anonymous(t).postForm(path, nil).StatusCode)

		res := alice.postForm(path, nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/account?notice=saved", res.Header.Get("Location"))
		_, err = servicetest.Teams(b.db).TokenUser(context.Background(), plain)
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		require.Contains(t, readBody(t, alice.get("/account")), `data-testid="token-revoked"`)
		require.Equal(t, http.StatusNotFound, alice.postForm("/account/tokens/abc/revoke", nil).StatusCode)
	})
	t.Run("CSRFRequired", func(t *testing.T) {
		for _, path := range []string{"/account/tokens", "/teams"} {
			res := alice.postForm(path, url.Values{"_csrf": {"forged-forged-forged-forged-forged-forged"}, "name": {"csrf"}})
			require.Equal(t, http.StatusForbidden, res.StatusCode, path)
			req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader("name=csrf"))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			require.Equal(t, http.StatusForbidden, alice.do(req).StatusCode, path)
		}
		list, err := servicetest.Teams(b.db).ListAPITokens(actorCtx(alice))
		require.NoError(t, err)
		for _, tok := range list {
			require.NotEqual(t, "csrf", tok.Name)
		}
	})
}

func TestAPI_Account(t *testing.T) {
	t.Parallel()
	b := setup(t)
	carol := withToken(t, b, b.newUser(t, "carol@example.org", false))
	_, err := servicetest.Teams(b.db).CreateTeam(actorCtx(carol), "Carol Co", "", "")
	require.NoError(t, err)

	t.Run("Me", func(t *testing.T) {
		res := carol.api(http.MethodGet, "/api/v1/me", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		body := readBody(t, res)
		require.NotContains(t, body, "hash")
		require.NotContains(t, body, "password")
		require.Contains(t, body, `"email":"carol@example.org"`)
		require.Contains(t, body, `"is_admin":false`)
		require.Contains(t, body, `"teams":[{"id":`)
		require.Contains(t, body, `"slug":"carol-co","name":"Carol Co","role":"owner"`)
	})
	t.Run("TokensLifecycle", func(t *testing.T) {
		res := carol.api(http.MethodPost, "/api/v1/tokens", map[string]string{"name": "ci"})
		require.Equal(t, http.StatusCreated, res.StatusCode)
		var created struct {
			ID         int64   `json:"id"`
			Name       string  `json:"name"`
			Prefix     string  `json:"prefix"`
			Token      string  `json:"token"`
			LastUsedAt *string `json:"last_used_at"`
			RevokedAt  *string `json:"revoked_at"`
		}
		decodeJSON(t, res, &created)
		require.Equal(t, "ci", created.Name)
		require.True(t, strings.HasPrefix(created.Token, storage.APITokenPrefix))
		require.True(t, strings.HasPrefix(created.Token, created.Prefix))
		require.Nil(t, created.RevokedAt)

		res = carol.api(http.MethodPost, "/api/v1/tokens", map[string]string{"name": "ci"})
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"conflict"`)
		res = carol.api(http.MethodPost, "/api/v1/tokens", map[string]string{"nom": "ci"})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)

		res = carol.api(http.MethodGet, "/api/v1/tokens", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		list := readBody(t, res)
		require.Contains(t, list, `"name":"ci"`)
		require.NotContains(t, list, created.Token, "listings never include the plaintext")
		require.NotContains(t, list, "hash")

		res = carol.api(http.MethodDelete, "/api/v1/tokens/"+strconv.FormatInt(created.ID, 10), nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, readBody(t, res), `"revoked_at":"`)
		revoked := *carol
		revoked.t, revoked.token = t, created.Token
		res = revoked.api(http.MethodGet, "/api/v1/me", nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, readBody(t, res), `"code":"unauthorized"`)
	})
	t.Run("AnonymousWithoutCredentials", func(t *testing.T) {
		res := b.anonymous(t).api(http.MethodGet, "/api/v1/me", nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		bad := b.anonymous(t)
		bad.token = "prt_not-a-real-token"
		require.Equal(t, http.StatusUnauthorized, bad.api(http.MethodPost, "/api/v1/tokens", map[string]string{"name": "x"}).StatusCode)
	})
}

// TestAccount_ChangePassword: every user changes their password on the
// account page, giving the current one; a user who signed in with a
// one-time password is kept on that form until they choose their own, and
// sent on to where they were going.
func TestAccount_ChangePassword(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	t.Run("FromTheAccountPage", func(t *testing.T) {
		bob := b.newUser(t, "bob@example.org", false)
		require.Contains(t, readBody(t, bob.get("/account")), `href="/account/password"`)
		page := readBody(t, bob.get("/account/password"))
		require.Contains(t, page, `data-testid="password-form"`)
		require.NotContains(t, page, `data-testid="one-time-password"`)
		for _, tc := range []struct{ current, replacement, field, message string }{
			{"wrong password!!", "a brand new password", "current_password", "This is not your current password."},
			{"correct horse battery", "short", "new_password", "password must be at least 10 characters"},
			{"correct horse battery", "correct horse battery", "new_password", "Choose a password different from the current one."},
		} {
			res := bob.postForm("/account/password", url.Values{"current_password": {tc.current}, "new_password": {tc.replacement}})
			require.Equal(t, http.StatusBadRequest, res.StatusCode, tc.message)
			body := readBody(t, res)
			require.Contains(t, body, tc.message)
			require.Contains(t, body, `data-testid="error-`+tc.field+`"`)
			require.NotContains(t, body, tc.current, "no password is echoed back")
		}
		res := bob.postForm("/account/password", url.Values{"current_password": {"correct horse battery"}, "new_password": {"a brand new password"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/account?notice=password-changed", res.Header.Get("Location"))
		require.Contains(t, readBody(t, bob.get("/account?notice=password-changed")), "Your password is changed.")
		_, err := servicetest.Accounts(b.db).Authenticate(ctx, "bob@example.org", "correct horse battery")
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the old password no longer works")
		_, err = servicetest.Accounts(b.db).Authenticate(ctx, "bob@example.org", "a brand new password")
		require.NoError(t, err)
	})

	t.Run("OneTimePasswordFirst", func(t *testing.T) {
		carol := b.newUser(t, "carol@example.org", false)
		require.NoError(t, b.db.ExpirePassword(ctx, carol.user.ID))
		res := carol.get("/teams")
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "every page leads to the password form")
		require.Equal(t, "/account/password?next=%2Fteams", res.Header.Get("Location"))
		page := readBody(t, carol.get("/account/password?next=%2Fteams"))
		require.Contains(t, page, `data-testid="one-time-password"`)
		require.Contains(t, page, `name="next" value="/teams"`)
		m := csrfPattern.FindStringSubmatch(page)
		require.NotNil(t, m)
		token := m[1] + m[2]
		res = carol.postForm("/teams", url.Values{"_csrf": {token}, "name": {"Carol Lab"}})
		require.Equal(t, http.StatusForbidden, res.StatusCode, "nothing else can be done")
		require.Contains(t, readBody(t, res), `choose your own at <a href="/account/password">/account/password</a> first`)

		res = carol.postForm("/account/password", url.Values{"_csrf": {token}, "next": {"/teams"},
			"current_password": {"correct horse battery"}, "new_password": {"carol's own password"}})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/teams", res.Header.Get("Location"), "on to where she was going")
		require.Equal(t, http.StatusOK, carol.get("/teams").StatusCode)
		u, err := servicetest.Accounts(b.db).Authenticate(ctx, "carol@example.org", "carol's own password")
		require.NoError(t, err)
		require.False(t, u.MustChangePassword)
		_, err = servicetest.Accounts(b.db).Authenticate(ctx, "carol@example.org", "correct horse battery")
		require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "the one-time password is spent")
	})
}
