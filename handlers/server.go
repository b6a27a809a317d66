// Package handlers is Proctor's HTTP layer: the Echo server, routes, middleware,
// sessions and CSRF, the JSON API and the one error handler. Handlers parse the
// request, call one store method and render; permissions are enforced by the
// store from the actor in the request context.
package handlers

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"proctor/eval"
)

// Options are the server's settings.
type Options struct {
	BaseURL string
	// SecureCookies marks cookies Secure; on when BaseURL is https.
	SecureCookies bool
	// MaxImportBytes caps benchmark uploads through the admin form.
	MaxImportBytes int64
	// LoginAttemptsPerMinute is the sign-in attempts an address may make a
	// minute, whatever the accounts (default 10); see loginThrottle for how
	// wrong passwords slow an address and an account further.
	LoginAttemptsPerMinute int
	// TrustedProxies are the networks whose X-Forwarded-For is believed; without
	// any, the client address is the TCP peer and forwarding headers are ignored,
	// so nobody can dodge rate limits or forge audit addresses with a header.
	TrustedProxies []*net.IPNet
	// ServerJudge describes the server's LLM judge ("model at URL") for the
	// judge settings page; "" when none is configured.
	ServerJudge string
	// BoardCacheBytes bounds the rendered leaderboards the server keeps
	// (their bodies' bytes); 0 is 64 MiB, negative keeps none.
	BoardCacheBytes int64
}

// Pinger is a dependency /readyz checks.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the services the server uses; main wires them.
type Deps struct {
	Store Store
	// Artifacts is the artifact store: /readyz pings it, and the timeline
	// reads accessibility texts, HARs and screenshots through it when it is
	// an ArtifactReader (artifact.Store is).
	Artifacts Pinger
	// ArtifactHandler serves signed local artifact URLs under /artifacts/; nil for S3.
	ArtifactHandler http.Handler
	Static          fs.FS
	// Docs is the documentation served under /docs/ (docs.Files()); nil serves none.
	Docs   fs.FS
	Logger *slog.Logger
	Now    func() time.Time

	// ArtifactURLs signs the screenshot links of timelines; nil shows none.
	ArtifactURLs ArtifactURLSigner
	// Runs is the run service; it answers 503 to queuing when this process
	// has no queue.
	Runs RunService
	// Episodes hands out the episodes of connecting agents (service.Episodes)
	// and EpisodeGateway serves the calls on them (connect.Gateway); nil
	// serves none.
	Episodes       EpisodeService
	EpisodeGateway EpisodeGateway
	// Benchmarks is the benchmark service (service.Benchmarks).
	Benchmarks BenchmarkService
	// Teams is the team service: teams, memberships, API tokens and agents.
	Teams TeamsService
	// Accounts is the account service: sign-up, sign-in, sessions and
	// passwords.
	Accounts AccountService
	// Moderation is the publication and moderation service (service.Moderation).
	Moderation ModerationService
	// Submissions is the submission portal's service; without a queue it
	// lists submissions and answers 503 to the rest.
	Submissions SubmissionService
	// Studies is the agreement-study service; it answers 503 to judging
	// when this process has no queue.
	Studies StudyService
	// Candidates is the candidate service: the candidate form and
	// hidden-tests runs of submitted candidate websites (submitting answers
	// 503 when it has no queue).
	Candidates CandidateService
	// QueueUI is River UI built for QueueUIPrefix, the admins' view of the job
	// queue; nil answers 503 there.
	QueueUI http.Handler
	// Evaluators is the evaluator registry: imports check their tasks' specs
	// with it, and administrators see a task's upstream defects from it.
	// Required to import benchmarks (EUNAVAILABLE otherwise).
	Evaluators *eval.Registry
}

// Store is everything the handlers need from storage, one small interface per feature.
type Store interface {
	Pinger
}

// isUpload reports whether a request is an upload POST, which skips the global
// body limit for the larger one that limitImportBody applies before routing.
func isUpload(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && isUploadRoute(c.Path())
}

// isUploadRoute reports whether a route pattern or path takes large uploads.
func isUploadRoute(path string) bool {
	switch path {
	case "/admin/benchmarks/import", "/api/v1/benchmarks/import":
		return true
	}
	return false
}

// isSubmissionUpload reports whether a request carries a submission's bytes:
// a part PUT through the API, which its handler caps at the part's length, or
// the upload form's POST, which the submission service caps at the largest
// bundle it accepts while streaming it. Neither is ever read whole here.
func isSubmissionUpload(c echo.Context) bool {
	switch c.Request().Method {
	case http.MethodPut:
		return c.Path() == "/api/v1"+apiSubmissionPartRoute
	case http.MethodPost:
		return c.Path() == submissionUploadRoute
	}
	return false
}

// Server is Proctor's web server.
type Server struct {
	echo    *echo.Echo
	store   Store
	deps    Deps
	opts    Options
	log     *slog.Logger
	assets  *assets
	logins  *loginThrottle
	signups *attemptLimiter
	// boards are the rendered leaderboards, by variant and board version.
	boards *boardCache
	// episodeLimits bound the calls on connecting agents' episodes.
	episodeLimits *episodeLimits
}

// New builds the server and its routes.
func New(opts Options, deps Deps) (*Server, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if opts.MaxImportBytes == 0 {
		opts.MaxImportBytes = 256 << 20
	}
	if opts.LoginAttemptsPerMinute == 0 {
		opts.LoginAttemptsPerMinute = 10
	}
	a, err := newAssets(deps.Static)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{
		echo: e, store: deps.Store, deps: deps, opts: opts, log: deps.Logger, assets: a,
		logins:  newLoginThrottle(opts.LoginAttemptsPerMinute, deps.Now),
		signups: newAttemptLimiter(opts.LoginAttemptsPerMinute, time.Minute, deps.Now),
		boards:  newBoardCache(opts.BoardCacheBytes),

		episodeLimits: newEpisodeLimits(),
	}
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = echo.ExtractIPDirect()
	if len(opts.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range opts.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}
	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{RedirectCode: http.StatusMovedPermanently}))
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{TargetHeader: echo.HeaderXRequestID}))
	e.Use(s.logRequests)
	e.Use(retryAfterOn429)
	e.Use(s.recoverPanics)
	e.Use(securityHeaders)
	e.Use(refusedFormsStayPut)
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{
		Limit:   "2M",
		Skipper: func(c echo.Context) bool { return isUpload(c) || isSubmissionUpload(c) || isStudyImport(c) },
	}))
	e.Use(s.authenticate)
	e.Use(s.guardUploads)
	e.Use(s.checkCSRF)
	e.Use(passwordChangeFirst)
	s.routes()
	return s, nil
}

// ServeHTTP makes the server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Routes lists the registered routes (method and path), for tests and docs.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

// RoutePattern returns the registered route pattern (such as /teams/:slug) that
// serves method and path, or "" when none does; tests use it to prove that every
// route is exercised by every kind of caller.
func (s *Server) RoutePattern(method, path string) string {
	c := s.echo.NewContext(nil, nil)
	s.echo.Router().Find(method, path, c)
	if c.Handler() == nil {
		return ""
	}
	return c.Path()
}
