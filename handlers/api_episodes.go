package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"proctor/api"
	"proctor/models"
)

// EpisodeService hands the episodes of connecting agents' runs out and opens
// them to their token's holder (service.Episodes).
type EpisodeService interface {
	Claim(ctx context.Context, runID int64, wait time.Duration) (*models.ClaimedEpisode, string, error)
	Open(ctx context.Context, runID, episodeID int64, token string) (*models.EpisodeLease, error)
	LeaseTTL() time.Duration
}

// EpisodeGateway serves the calls on an opened episode, from this process
// or forwarded to the worker running it (connect.Gateway).
type EpisodeGateway interface {
	Serve(w http.ResponseWriter, r *http.Request, lease *models.EpisodeLease, endpoint string, local bool) error
}

// Episode endpoints, under /api/v1/runs/{id}/episodes/{episode}/.
const (
	episodeMCP         = "mcp"
	episodeObservation = "observation"
	episodeAction      = "action"
)

// defaultClaimWait is a claim's long poll when ?wait= is not given.
const defaultClaimWait = 30 * time.Second

// apiEpisodeRoutes registers the endpoints of connecting agents. The claim
// takes an API token of a member of the run's team; the rest take the
// episode token the claim returned.
func (s *Server) apiEpisodeRoutes(g *echo.Group) {
	g.POST("/runs/:id/episodes/claim", s.apiClaimEpisode)
	s.episodeEndpoints(g, false)
}

// episodeEndpoints registers the episode token's endpoints; local serves
// only the episodes this process runs (a worker's internal address).
func (s *Server) episodeEndpoints(g *echo.Group, local bool) {
	g.POST("/runs/:id/episodes/:episode/heartbeat", s.apiEpisodeHeartbeat)
	g.GET("/runs/:id/episodes/:episode/observation", s.episodeCall(episodeObservation, local))
	g.POST("/runs/:id/episodes/:episode/action", s.episodeCall(episodeAction, local))
	// A stateless MCP server: POST only (no event stream, no session to end).
	g.POST("/runs/:id/episodes/:episode/mcp", s.episodeCall(episodeMCP, local))
}

// episodeLimits bound the calls on episodes: per address before the token
// is looked up (so guessing costs the guesser), then per episode, once the
// token opened it (so nobody else can spend an episode's allowance).
type episodeLimits struct {
	byAddress, byEpisode *middleware.RateLimiterMemoryStore
	// claims bounds each user's claims: each one is a transaction under
	// the scheduling lock.
	claims *middleware.RateLimiterMemoryStore
}

// Rates of episodeLimits, a second; bursts are twice as many.
const (
	episodeCallsPerSecond = 20
	addressCallsPerSecond = 100
	userClaimsPerSecond   = 5
)

func newEpisodeLimits() *episodeLimits {
	store := func(perSecond int) *middleware.RateLimiterMemoryStore {
		return middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(perSecond), Burst: 2 * perSecond, ExpiresIn: time.Minute})
	}
	return &episodeLimits{byAddress: store(addressCallsPerSecond), byEpisode: store(episodeCallsPerSecond), claims: store(userClaimsPerSecond)}
}

// episodeClaim is the claim's answer with the episode's addresses.
func (s *Server) episodeClaim(ec echo.Context, c *models.ClaimedEpisode, token string, ttl time.Duration) api.EpisodeClaim {
	origin := strings.TrimRight(s.opts.BaseURL, "/")
	if origin == "" || strings.HasSuffix(origin, ":0") {
		// No public origin is configured (a server on a port picked at
		// start): the address the agent reached.
		origin = ec.Scheme() + "://" + ec.Request().Host
	}
	base := origin + fmt.Sprintf("/api/v1/runs/%d/episodes/%d/", c.Run.ID, c.Lease.AttemptID)
	out := api.EpisodeClaim{
		RunID: c.Run.ID, EpisodeID: c.Lease.AttemptID, Try: c.Lease.Try, Task: c.Task, Token: token,
		LeaseSeconds: int(ttl.Seconds()), LeaseExpiresAt: c.Lease.ExpiresAt,
		MCPURL: base + episodeMCP, ObservationURL: base + episodeObservation, ActionURL: base + episodeAction,
		HeartbeatURL: base + "heartbeat",
	}
	out.Budget.MaxSteps, out.Budget.MaxSeconds, out.Budget.MaxIdleSeconds = c.Run.MaxSteps, c.Run.MaxEpisodeSeconds, c.Run.MaxAgentCallSeconds
	out.Budget.MaxCost = c.Run.MaxCost
	return out
}

func (s *Server) apiClaimEpisode(c echo.Context) error {
	if s.deps.Episodes == nil {
		return models.Errorf(models.EUNAVAILABLE, "This server hands out no episodes: it has no run queue.")
	}
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if u := currentUser(c); u != nil {
		if ok, _ := s.episodeLimits.claims.Allow(strconv.FormatInt(u.ID, 10)); !ok {
			return models.RateLimited(time.Second, "Too many claims: at most %d a second for each user. A claim waits for an episode by itself (?wait=).", userClaimsPerSecond)
		}
	}
	wait := defaultClaimWait
	if v := c.QueryParam("wait"); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 0 || secs > 60 {
			return models.FieldError("wait", "wait is the seconds to wait for an episode, 0 to 60, not %q", v)
		}
		wait = time.Duration(secs) * time.Second
	}
	claimed, token, err := s.deps.Episodes.Claim(c.Request().Context(), id, wait)
	if err != nil {
		return err
	}
	if claimed == nil {
		c.Response().Header().Set("Retry-After", "1")
		return c.NoContent(http.StatusNoContent)
	}
	s.requestLogger(c).Info("episode claimed", "run_id", id, "attempt_id", claimed.Lease.AttemptID, "try", claimed.Lease.Try)
	return c.JSON(http.StatusOK, s.episodeClaim(c, claimed, token, s.deps.Episodes.LeaseTTL()))
}

// openEpisode checks the request's episode token against the path.
func (s *Server) openEpisode(c echo.Context) (*models.EpisodeLease, error) {
	if s.deps.Episodes == nil {
		return nil, models.Errorf(models.EUNAVAILABLE, "This server serves no episodes.")
	}
	runID, err := int64Param(c, "id")
	if err != nil {
		return nil, err
	}
	episodeID, err := int64Param(c, "episode")
	if err != nil {
		return nil, err
	}
	if ok, _ := s.episodeLimits.byAddress.Allow(c.RealIP()); !ok {
		return nil, models.RateLimited(time.Second, "Too many calls on episodes from this address: at most %d a second.", addressCallsPerSecond)
	}
	token, _ := c.Get(ctxEpisodeToken).(string)
	lease, err := s.deps.Episodes.Open(c.Request().Context(), runID, episodeID, token)
	if err != nil {
		return nil, err
	}
	if ok, _ := s.episodeLimits.byEpisode.Allow(strconv.FormatInt(lease.ID, 10)); !ok {
		return nil, models.RateLimited(time.Second, "Too many calls on this episode: at most %d a second.", episodeCallsPerSecond)
	}
	return lease, nil
}

func (s *Server) apiEpisodeHeartbeat(c echo.Context) error {
	lease, err := s.openEpisode(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.EpisodeHeartbeat{LeaseExpiresAt: lease.ExpiresAt})
}

// episodeCall serves one endpoint of an opened episode.
func (s *Server) episodeCall(endpoint string, local bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		lease, err := s.openEpisode(c)
		if err != nil {
			return err
		}
		if s.deps.EpisodeGateway == nil {
			return models.Errorf(models.EUNAVAILABLE, "This server serves no episodes.")
		}
		return s.deps.EpisodeGateway.Serve(c.Response(), c.Request(), lease, endpoint, local)
	}
}

// NewEpisodeServer is a worker's internal HTTP server: the episode token's
// endpoints for the episodes the worker runs, which serve processes forward
// calls to. It has the API's error handler and nothing else of the site.
func NewEpisodeServer(episodes EpisodeService, gateway EpisodeGateway, log *slog.Logger) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{echo: e, log: log, deps: Deps{Episodes: episodes, EpisodeGateway: gateway, Logger: log}, episodeLimits: newEpisodeLimits()}
	e.HTTPErrorHandler = s.handleError
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !isAPI(c) {
				return c.NoContent(http.StatusNotFound)
			}
			return next(c)
		}
	})
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{TargetHeader: echo.HeaderXRequestID}))
	e.Use(s.logRequests)
	e.Use(s.recoverPanics)
	e.Use(s.episodeTokenOnly)
	s.episodeEndpoints(e.Group("/api/v1"), true)
	return e
}

// episodeTokenOnly reads the episode token of a worker's internal call.
func (s *Server) episodeTokenOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, _ := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
		if strings.HasPrefix(token, models.EpisodeTokenPrefix) {
			c.Set(ctxEpisodeToken, strings.TrimSpace(token))
		}
		return next(c)
	}
}
