package handlers

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// TokenStore is what API-token authentication and the account pages need.
type TokenStore interface {
	TokenUser(ctx context.Context, token string) (*models.User, error)
	AccountOverview(ctx context.Context) (*models.Account, error)
	CreateAPIToken(ctx context.Context, name string) (*models.APIToken, string, error)
	ListAPITokens(ctx context.Context) ([]models.APIToken, error)
	RevokeAPIToken(ctx context.Context, id int64) (*models.APIToken, error)
}

func (s *Server) accountRoutes(e *echo.Echo) {
	e.GET("/account", s.showAccount, requireUser)
	e.POST("/account/tokens", s.createToken, requireUser)
	e.POST("/account/tokens/:id/revoke", s.revokeToken, requireUser)
}

func (s *Server) showAccount(c echo.Context) error {
	return s.renderAccount(c, http.StatusOK, web.NewForm())
}

// renderAccount renders the account page with the token form f.
func (s *Server) renderAccount(c echo.Context, status int, f web.Form) error {
	acc, err := s.store.AccountOverview(c.Request().Context())
	if err != nil {
		return err
	}
	v := web.AccountView{User: acc.User, Memberships: acc.Memberships, Tokens: acc.Tokens}
	return s.render(c, status, web.AccountPage(s.page(c, "Your account"), v, f))
}

// createToken answers with the page that shows the new token's plaintext, once;
// it is not a redirect so the secret never travels in a URL.
func (s *Server) createToken(c echo.Context) error {
	t, plain, err := s.store.CreateAPIToken(c.Request().Context(), c.FormValue("name"))
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
	if _, err := s.store.RevokeAPIToken(c.Request().Context(), id); err != nil {
		return err
	}
	return redirect(c, "/account?notice=saved")
}
