package handlers

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"proctor/web"
)

// render writes a templ component with a status code.
func (s *Server) render(c echo.Context, status int, component templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}

// page returns the layout data every page needs.
func (s *Server) page(c echo.Context, title string) web.Page {
	token, _ := c.Get(ctxCSRF).(string)
	return web.Page{
		Title:    title,
		User:     currentUser(c),
		CSRF:     token,
		Path:     c.Request().URL.Path,
		Asset:    s.assets.url,
		HasAsset: s.assets.has,
		Flash:    flashFrom(c),
	}
}

// redirect answers a form post: 303 to target, or HX-Redirect for htmx.
func redirect(c echo.Context, target string) error {
	if isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", target)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, target)
}

// flashFrom reads a one-time notice passed in the query string by redirects.
func flashFrom(c echo.Context) string {
	switch c.QueryParam("notice") {
	case "signed-up":
		return "Welcome to Proctor. Your account is ready."
	case "signed-in":
		return "You are signed in."
	case "signed-out":
		return "You are signed out."
	case "saved":
		return "Saved."
	case "team-created":
		return "Team created."
	case "password-changed":
		return "Your password is changed."
	case "deleted":
		return "Deleted."
	case "imported":
		return "Benchmark imported."
	case "joined":
		return "You joined the team."
	case "rescored":
		return rescoredNotice(c.QueryParam("n"))
	}
	return ""
}
