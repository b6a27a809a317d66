package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// TokenService is what the account pages and the token API need from the
// team service: the caller's account and API tokens.
type TokenService interface {
	// TokenUser authenticates an API bearer token.
	TokenUser(ctx context.Context, token string) (*models.User, error)
	AccountOverview(ctx context.Context) (*models.Account, error)
	CreateAPIToken(ctx context.Context, name string) (*models.APIToken, string, error)
	ListAPITokens(ctx context.Context) ([]models.APIToken, error)
	RevokeAPIToken(ctx context.Context, id int64) (*models.APIToken, error)
}

// TeamsService is the team service: teams, agents and API tokens.
type TeamsService interface {
	TeamService
	AgentService
	TokenService
}

// passwordPath is where a signed-in user changes their password.
const passwordPath = "/account/password"

func (s *Server) accountRoutes(e *echo.Echo) {
	e.GET("/account", s.showAccount, requireUser)
	e.GET(passwordPath, s.showPassword, requireUser)
	e.POST(passwordPath, s.changePassword, requireUser)
	e.POST("/account/tokens", s.createToken, requireUser)
	e.POST("/account/tokens/:id/revoke", s.revokeToken, requireUser)
}

func (s *Server) showAccount(c echo.Context) error {
	return s.renderAccount(c, http.StatusOK, web.NewForm())
}

// renderAccount renders the account page with the token form f.
func (s *Server) renderAccount(c echo.Context, status int, f web.Form) error {
	acc, err := s.deps.Teams.AccountOverview(c.Request().Context())
	if err != nil {
		return err
	}
	v := web.AccountView{User: acc.User, Memberships: acc.Memberships, Tokens: acc.Tokens}
	return s.render(c, status, web.AccountPage(s.page(c, "Your account"), v, f))
}

// createToken answers with the page that shows the new token's plaintext, once;
// it is not a redirect so the secret never travels in a URL.
func (s *Server) createToken(c echo.Context) error {
	t, plain, err := s.deps.Teams.CreateAPIToken(c.Request().Context(), c.FormValue("name"))
	if err != nil {
		switch models.ErrorCode(err) {
		case models.EINVALID, models.ECONFLICT:
			return s.renderAccount(c, statusOf(models.ErrorCode(err)), formOf(c, "name").WithError(err))
		}
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, http.StatusOK, web.TokenCreatedPage(s.page(c, "Token created"), *t, plain))
}

func (s *Server) revokeToken(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if _, err := s.deps.Teams.RevokeAPIToken(c.Request().Context(), id); err != nil {
		return err
	}
	return redirect(c, "/account?notice=saved")
}

// showPassword shows the form that changes the signed-in user's password.
func (s *Server) showPassword(c echo.Context) error {
	f := web.NewForm()
	f.Values["next"] = safeNext(c.QueryParam("next"))
	return s.render(c, http.StatusOK, web.PasswordPage(s.page(c, "Change your password"), f, currentUser(c).MustChangePassword))
}

// changePassword replaces the password (the current one required) and goes
// on to where a one-time password's user was headed, or to the account.
func (s *Server) changePassword(c echo.Context) error {
	f := formOf(c, "next")
	err := s.deps.Accounts.ChangePassword(c.Request().Context(), c.FormValue("current_password"), c.FormValue("new_password"))
	if err != nil {
		return s.formError(c, err, web.PasswordPage(s.page(c, "Change your password"), f.WithError(err), currentUser(c).MustChangePassword))
	}
	if next := safeNext(c.FormValue("next")); next != "/" {
		return redirect(c, next)
	}
	return redirect(c, "/account?notice=password-changed")
}

// passwordChangeFirst keeps a user signed in with a one-time password on the
// password form until they choose their own: a page is redirected there
// (and back once done), anything else refused saying where to go.
func passwordChangeFirst(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := currentUser(c)
		if u == nil || !u.MustChangePassword || c.Get(ctxBearer) == true {
			return next(c)
		}
		switch p := c.Request().URL.Path; {
		case p == passwordPath, p == "/logout", p == "/healthz", p == "/readyz", strings.HasPrefix(p, "/static/"):
			return next(c)
		}
		if c.Request().Method == http.MethodGet && !isAPI(c) {
			return c.Redirect(http.StatusSeeOther, passwordPath+"?next="+url.QueryEscape(c.Request().URL.RequestURI()))
		}
		return models.Errorf(models.EFORBIDDEN, "You signed in with a one-time password: choose your own at %s first.", passwordPath)
	}
}
