package handlers

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// AccountService is what sign-up, log-in, sessions and the password page
// need from the account service (service.Accounts).
type AccountService interface {
	SignUp(ctx context.Context, email, name, password string) (*models.User, error)
	Authenticate(ctx context.Context, email, password string) (*models.User, error)
	ChangePassword(ctx context.Context, current, replacement string) error
	StartSession(ctx context.Context, u *models.User, userAgent, ip string) (string, *models.Session, error)
	SessionUser(ctx context.Context, token string) (*models.Session, *models.User, error)
	EndSession(ctx context.Context, token string) error
}

func (s *Server) showSignup(c echo.Context) error {
	if currentUser(c) != nil {
		return c.Redirect(http.StatusSeeOther, "/account")
	}
	f := web.NewForm()
	f.Values["next"] = safeNext(c.QueryParam("next"))
	return s.render(c, http.StatusOK, web.SignupPage(s.page(c, "Sign up"), f))
}

func (s *Server) signup(c echo.Context) error {
	f := formOf(c, "name", "email", "next")
	if wait := s.signups.allow(c.RealIP()); wait > 0 {
		return models.RateLimited(wait, "Too many sign-ups from your address; try again in %s.", waitText(wait))
	}
	ctx := c.Request().Context()
	u, err := s.deps.Accounts.SignUp(ctx, c.FormValue("email"), c.FormValue("name"), c.FormValue("password"))
	if err != nil {
		return s.formError(c, err, web.SignupPage(s.page(c, "Sign up"), f.WithError(err)))
	}
	if err := s.startSession(c, u); err != nil {
		return err
	}
	if next := safeNext(c.FormValue("next")); next != "/" {
		return redirect(c, next)
	}
	return redirect(c, "/account?notice=signed-up")
}

func (s *Server) showLogin(c echo.Context) error {
	if currentUser(c) != nil {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	f := web.NewForm()
	f.Values["next"] = safeNext(c.QueryParam("next"))
	return s.render(c, http.StatusOK, web.LoginPage(s.page(c, "Log in"), f))
}

func (s *Server) login(c echo.Context) error {
	f := formOf(c, "email", "next")
	email := models.CanonicalEmail(c.FormValue("email"))
	address := c.RealIP()
	if wait := s.logins.check(address, email); wait > 0 {
		err := models.RateLimited(wait, "Too many attempts. Wait %s and try again.", waitText(wait))
		return s.formError(c, err, web.LoginPage(s.page(c, "Log in"), f.WithError(err)))
	}
	u, err := s.deps.Accounts.Authenticate(c.Request().Context(), email, c.FormValue("password"))
	if err != nil {
		if models.ErrorCode(err) == models.EUNAUTHORIZED {
			s.logins.failed(address, email)
		}
		return s.formError(c, err, web.LoginPage(s.page(c, "Log in"), f.WithError(err)))
	}
	s.logins.succeeded(address, email)
	if err := s.startSession(c, u); err != nil {
		return err
	}
	next := safeNext(c.FormValue("next"))
	if next == "/" {
		next = "/?notice=signed-in"
	}
	return redirect(c, next)
}

func (s *Server) logout(c echo.Context) error {
	if cookie, err := c.Request().Cookie(sessionCookie); err == nil {
		if err := s.deps.Accounts.EndSession(c.Request().Context(), cookie.Value); err != nil {
			return err
		}
	}
	s.clearCookie(c, sessionCookie)
	return redirect(c, "/?notice=signed-out")
}

func (s *Server) startSession(c echo.Context, u *models.User) error {
	ctx := c.Request().Context()
	if cookie, err := c.Request().Cookie(sessionCookie); err == nil {
		_ = s.deps.Accounts.EndSession(ctx, cookie.Value) // no session fixation
	}
	token, _, err := s.deps.Accounts.StartSession(ctx, u, c.Request().UserAgent(), c.RealIP())
	if err != nil {
		return err
	}
	s.setCookie(c, sessionCookie, token, models.SessionTTL)
	return nil
}

// formOf copies the named submitted values into a form for re-rendering.
// Passwords are never echoed back.
func formOf(c echo.Context, names ...string) web.Form {
	f := web.NewForm()
	for _, n := range names {
		f.Values[n] = c.FormValue(n)
	}
	return f
}

// formError re-renders a form with its error when the error is the user's to fix,
// with the matching status; anything else goes to the error handler.
func (s *Server) formError(c echo.Context, err error, page templ.Component) error {
	switch models.ErrorCode(err) {
	case models.EINVALID, models.ECONFLICT, models.EUNAUTHORIZED, models.ERATELIMIT, models.ETOOLARGE:
		setRetryAfter(c, err)
		return s.render(c, statusOf(models.ErrorCode(err)), page)
	}
	return err
}

// setRetryAfter sends, for a rate-limit refusal, when to try again.
// Responses with status 429 that reach the client without one get a
// minute (retryAfterOn429), so every 429 carries the header.
func setRetryAfter(c echo.Context, err error) {
	if models.ErrorCode(err) != models.ERATELIMIT {
		return
	}
	secs := int64(math.Ceil(models.ErrorRetryAfter(err).Seconds()))
	c.Response().Header().Set("Retry-After", strconv.FormatInt(max(1, secs), 10))
}

// waitText says a wait in words: "12 seconds", "a minute", "5 minutes".
func waitText(d time.Duration) string {
	secs := int(math.Ceil(d.Seconds()))
	switch {
	case secs <= 1:
		return "a second"
	case secs < 60:
		return strconv.Itoa(secs) + " seconds"
	case secs <= 60:
		return "a minute"
	}
	return strconv.Itoa((secs+59)/60) + " minutes"
}

func loginURL(next string) string { return "/login?next=" + url.QueryEscape(safeNext(next)) }

// retryAfterOn429 makes sure every response with status 429 says when to
// try again: a minute unless the refusal set its own (setRetryAfter).
func retryAfterOn429(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Before(func() {
			if res.Status == http.StatusTooManyRequests && res.Header().Get("Retry-After") == "" {
				res.Header().Set("Retry-After", "60")
			}
		})
		return next(c)
	}
}
