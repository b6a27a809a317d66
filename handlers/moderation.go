package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// ModerationService is what the moderation pages need (service.Moderation).
// The service checks permissions: a run's team publishes and withdraws it;
// administrators verify, hide, show again and mark reproduced.
type ModerationService interface {
	PublishRun(ctx context.Context, runID int64) (*models.RunModeration, error)
	WithdrawRun(ctx context.Context, runID int64) (*models.RunModeration, error)
	VerifyRun(ctx context.Context, runID int64) (*models.RunModeration, error)
	HideRun(ctx context.Context, runID int64, reason string) (*models.RunModeration, error)
	UnhideRun(ctx context.Context, runID int64) (*models.RunModeration, error)
	MarkRunReproduced(ctx context.Context, runID int64) (*models.RunModeration, error)
	LeaderboardChanges(ctx context.Context, slug string, f models.ChangeFilter) (*models.LeaderboardChanges, error)
}

// moderationRoutes registers publishing and moderation (pages and API), the
// public leaderboard change log and the run results export. Publishing needs a
// signed-in member of the run's team (or an admin), moderation an admin; the
// API routes let the service answer, so a private run is 404 to outsiders there.
func (s *Server) moderationRoutes(e *echo.Echo) {
	e.POST("/runs/:id/publish", s.publishRun, requireUser)
	e.POST("/runs/:id/withdraw", s.withdrawRun, requireUser)
	e.POST("/runs/:id/verify", s.verifyRun, requireAdmin)
	e.POST("/runs/:id/hide", s.hideRun, requireAdmin)
	e.POST("/runs/:id/unhide", s.unhideRun, requireAdmin)
	e.POST("/runs/:id/reproduce", s.reproduceRun, requireAdmin)
	e.GET("/runs/:id/results.jsonl", s.exportRunResults)
	e.GET("/benchmarks/:slug/leaderboard/changes", s.showLeaderboardChanges)

	v1 := e.Group("/api/v1")
	v1.POST("/runs/:id/publish", s.apiModerate(ModerationService.PublishRun))
	v1.POST("/runs/:id/withdraw", s.apiModerate(ModerationService.WithdrawRun))
	v1.POST("/runs/:id/verify", s.apiModerate(ModerationService.VerifyRun))
	v1.POST("/runs/:id/hide", s.apiHideRun)
	v1.POST("/runs/:id/unhide", s.apiModerate(ModerationService.UnhideRun))
	v1.POST("/runs/:id/reproduce", s.apiModerate(ModerationService.MarkRunReproduced))
	v1.GET("/runs/:id/results.jsonl", s.exportRunResults)
	v1.GET("/benchmarks/:slug/leaderboard/changes", s.apiLeaderboardChanges)
}

// moderationAction is one of ModerationService's run actions, as a method
// expression so that routes can name it before the service is wired.
type moderationAction func(st ModerationService, ctx context.Context, runID int64) (*models.RunModeration, error)

// moderationNotice is the one-time notice after a publication change.
func moderationNotice(c echo.Context) string {
	switch c.QueryParam("notice") {
	case "published":
		return "Run published: it is public and on the benchmark's leaderboards."
	case "withdrawn":
		return "Run withdrawn: it is private to its team again."
	case "verified":
		return "Run marked verified."
	case "hidden":
		return "Run hidden from the leaderboards; its page shows the reason."
	case "unhidden":
		return "Run shown on the leaderboards again."
	case "reproduced":
		return "Run marked reproduced by admins."
	}
	return ""
}

// moderatePage runs a page's moderation action and redirects to the run page
// with its notice; a refused action (409, or a missing reason) re-renders the
// run page with the message.
func (s *Server) moderatePage(c echo.Context, notice string, act moderationAction) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	if _, err := act(s.deps.Moderation, c.Request().Context(), id); err != nil {
		return s.runActionError(c, err)
	}
	return redirect(c, runPath(id)+"?notice="+notice)
}

func (s *Server) publishRun(c echo.Context) error {
	return s.moderatePage(c, "published", ModerationService.PublishRun)
}

func (s *Server) withdrawRun(c echo.Context) error {
	return s.moderatePage(c, "withdrawn", ModerationService.WithdrawRun)
}

func (s *Server) verifyRun(c echo.Context) error {
	return s.moderatePage(c, "verified", ModerationService.VerifyRun)
}

func (s *Server) hideRun(c echo.Context) error {
	reason := c.FormValue("reason")
	return s.moderatePage(c, "hidden", func(st ModerationService, ctx context.Context, runID int64) (*models.RunModeration, error) {
		return st.HideRun(ctx, runID, reason)
	})
}

func (s *Server) unhideRun(c echo.Context) error {
	return s.moderatePage(c, "unhidden", ModerationService.UnhideRun)
}

func (s *Server) reproduceRun(c echo.Context) error {
	return s.moderatePage(c, "reproduced", ModerationService.MarkRunReproduced)
}

func toAPIModeration(m *models.RunModeration) api.Moderation {
	return api.Moderation{
		ID: m.RunID, Status: m.Status, Origin: m.Origin, Published: m.Published, Verified: m.Verified,
		Hidden: m.Hidden(), HiddenAt: m.HiddenAt, HiddenReason: m.HiddenReason, OnLeaderboard: m.OnLeaderboard(),
		URL: runPath(m.RunID), APIURL: apiRunPath(m.RunID),
	}
}

// apiModerate answers a moderation action of the API with the run's state.
func (s *Server) apiModerate(act moderationAction) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := int64Param(c, "id")
		if err != nil {
			return err
		}
		m, err := act(s.deps.Moderation, c.Request().Context(), id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, toAPIModeration(m))
	}
}

func (s *Server) apiHideRun(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	var in api.HideInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	m, err := s.deps.Moderation.HideRun(c.Request().Context(), id, in.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIModeration(m))
}

// changeFilterOf reads the change log's query: subset, page and per_page.
func changeFilterOf(c echo.Context) (models.ChangeFilter, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return models.ChangeFilter{}, err
	}
	return models.ChangeFilter{Subset: strings.TrimSpace(c.QueryParam("subset")), Page: page, PerPage: perPage}, nil
}

// showLeaderboardChanges is a benchmark's public leaderboard change log.
func (s *Server) showLeaderboardChanges(c echo.Context) error {
	f, err := changeFilterOf(c)
	if err != nil {
		return err
	}
	v, err := s.deps.Moderation.LeaderboardChanges(c.Request().Context(), pathParam(c, "slug"), f)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.LeaderboardChangesPage(s.page(c, "Leaderboard changes of "+v.BenchmarkName), *v))
}

func (s *Server) apiLeaderboardChanges(c echo.Context) error {
	f, err := changeFilterOf(c)
	if err != nil {
		return err
	}
	v, err := s.deps.Moderation.LeaderboardChanges(c.Request().Context(), pathParam(c, "slug"), f)
	if err != nil {
		return err
	}
	items := make([]api.Change, len(v.Changes))
	for i, ch := range v.Changes {
		items[i] = api.Change{
			ID: ch.ID, RunID: ch.RunID, Subset: ch.SubsetName, Kind: ch.Kind, Reason: ch.Reason, Actor: ch.ActorRole,
			Agent: ch.AgentName, Team: ch.TeamSlug, TeamName: ch.TeamName, CreatedAt: ch.CreatedAt,
		}
		if ch.RunPublished {
			items[i].RunURL = runPath(ch.RunID)
		}
		if ch.Kind == models.EventRescored && ch.Known() {
			items[i].Rescore = &api.RescoreChange{SuccessesBefore: *ch.SuccessesBefore, SuccessesAfter: *ch.SuccessesAfter,
				Tasks: *ch.Tasks, ChangedAttempts: ch.ChangedAttempts, Evaluators: ch.Evaluators}
		}
	}
	return c.JSON(http.StatusOK, api.NewPage(items, v.Page, v.PerPage, v.Total))
}
