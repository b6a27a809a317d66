package handlers

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

const (
	sessionCookie = "proctor_session"
	csrfCookie    = "proctor_csrf"
	csrfField     = "_csrf"
	csrfHeader    = "X-CSRF-Token"

	ctxSession = "proctor.session"
	ctxUser    = "proctor.user"
	ctxCSRF    = "proctor.csrf"
	ctxBearer  = "proctor.bearer"
	// ctxEpisodeToken is an episode token (models.EpisodeTokenPrefix) sent
	// as the bearer token: it opens one episode and makes nobody an actor.
	ctxEpisodeToken = "proctor.episode_token"
)

// requestLogger returns the request-scoped logger carrying the request id.
func (s *Server) requestLogger(c echo.Context) *slog.Logger {
	return s.log.With("request_id", c.Response().Header().Get(echo.HeaderXRequestID))
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		level := slog.LevelInfo
		if res.Status >= 500 {
			level = slog.LevelError
		}
		if strings.HasPrefix(req.URL.Path, "/static/") || req.URL.Path == "/healthz" {
			level = slog.LevelDebug
		}
		path := req.URL.Path
		if strings.Contains(c.Path(), ":token") {
			path = c.Path() // invitation links are credentials: log the route, not the token
		}
		s.requestLogger(c).Log(req.Context(), level, "request",
			"method", req.Method, "path", path, "status", res.Status,
			"bytes", res.Size, "duration_ms", time.Since(start).Milliseconds(), "user_id", models.ActorFrom(req.Context()).UserID)
		return nil
	}
}

func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		return next(c)
	}
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob: https: http:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}

// refusedFormsStayPut keeps the address of the page whose form an
// htmx-boosted submission refused. htmx would show the re-rendered form (or
// the error) at the action's address, where a reload finds nothing; with
// HX-Replace-Url the address stays the form's page, so a reload shows the
// form again. Without JavaScript the browser keeps the POST, which a reload
// sends again.
func refusedFormsStayPut(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method == http.MethodGet || req.Method == http.MethodHead || req.Header.Get("HX-Boosted") != "true" {
			return next(c)
		}
		page, err := url.Parse(req.Header.Get("HX-Current-URL"))
		if err != nil || page.Host != req.Host || page.Path == "" {
			return next(c)
		}
		res := c.Response()
		res.Before(func() {
			h := res.Header()
			if res.Status >= http.StatusBadRequest && h.Get("HX-Push-Url") == "" && h.Get("HX-Replace-Url") == "" {
				h.Set("HX-Replace-Url", page.RequestURI())
			}
		})
		return next(c)
	}
}

// authenticate resolves the caller from an API bearer token or a session cookie
// and puts the actor into the request context.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		if auth := req.Header.Get(echo.HeaderAuthorization); auth != "" {
			token, ok := strings.CutPrefix(auth, "Bearer ")
			if !ok || token == "" {
				return models.Errorf(models.EUNAUTHORIZED, "Authorization must be \"Bearer <token>\".")
			}
			if strings.HasPrefix(token, models.EpisodeTokenPrefix) {
				c.Set(ctxEpisodeToken, strings.TrimSpace(token))
				c.Set(ctxBearer, true)
				return next(c)
			}
			u, err := s.deps.Teams.TokenUser(ctx, strings.TrimSpace(token))
			if err != nil {
				return err
			}
			c.Set(ctxUser, u)
			c.Set(ctxBearer, true)
			c.SetRequest(req.WithContext(models.WithActor(ctx, actorOf(u, c.RealIP()))))
			return next(c)
		}
		if cookie, err := req.Cookie(sessionCookie); err == nil && cookie.Value != "" {
			sess, u, err := s.deps.Accounts.SessionUser(ctx, cookie.Value)
			switch models.ErrorCode(err) {
			case "":
				c.Set(ctxSession, sess)
				c.Set(ctxUser, u)
				c.Set(ctxCSRF, sess.CSRFToken)
				c.SetRequest(req.WithContext(models.WithActor(ctx, actorOf(u, c.RealIP()))))
			case models.EUNAUTHORIZED:
				s.clearCookie(c, sessionCookie)
			default:
				return err
			}
		}
		return next(c)
	}
}

func actorOf(u *models.User, ip string) models.Actor {
	return models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin, IP: ip}
}

// checkCSRF requires a token on every state-changing request made with cookies:
// the session's token when signed in, else a double-submit cookie. Bearer-token
// API calls carry no ambient credentials and are exempt.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get(ctxBearer) == true {
			return next(c)
		}
		if isAPI(c) && c.Get(ctxSession) == nil {
			// No cookie session means no ambient credentials to forge: the route's
			// own authentication answers (401 for anonymous writes).
			return next(c)
		}
		token, _ := c.Get(ctxCSRF).(string)
		if token == "" {
			if cookie, err := c.Request().Cookie(csrfCookie); err == nil && len(cookie.Value) >= 32 {
				token = cookie.Value
			} else {
				token, _ = models.NewToken("")
				s.setCookie(c, csrfCookie, token, 0)
			}
			c.Set(ctxCSRF, token)
		}
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		sent := c.Request().Header.Get(csrfHeader)
		if sent == "" {
			sent = c.FormValue(csrfField)
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return models.Errorf(models.EFORBIDDEN, "The form has expired or did not come from this site. Reload the page and try again.")
		}
		return next(c)
	}
}

func (s *Server) setCookie(c echo.Context, name, value string, maxAge time.Duration) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.opts.SecureCookies,
		SameSite: http.SameSiteLaxMode, MaxAge: int(maxAge.Seconds()),
	})
}

func (s *Server) clearCookie(c echo.Context, name string) {
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", HttpOnly: true, Secure: s.opts.SecureCookies, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// currentUser returns the signed-in user or nil.
func currentUser(c echo.Context) *models.User {
	u, _ := c.Get(ctxUser).(*models.User)
	return u
}

// requireUser sends anonymous page visitors to the login page and answers API
// calls with 401.
func requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if currentUser(c) == nil {
			if isAPI(c) || c.Request().Method != http.MethodGet {
				return models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
			}
			return c.Redirect(http.StatusSeeOther, loginURL(c.Request().URL.RequestURI()))
		}
		return next(c)
	}
}

// requireAdmin answers 401 to anonymous callers and 403 to signed-in non-admins.
func requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return requireUser(func(c echo.Context) error {
		if !currentUser(c).IsAdmin {
			return models.Errorf(models.EFORBIDDEN, "Only administrators may see this page.")
		}
		return next(c)
	})
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }

func isHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// safeNext keeps post-login redirects on this site: only a path that starts
// with a single slash, with no scheme, host, backslash or control character
// (browsers drop tabs and newlines, so "/\t/evil.example" would leave the site).
func safeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
