package handlers

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// TeamService is what the team pages and the team API need from the team
// service.
type TeamService interface {
	ListTeams(ctx context.Context, page, perPage int) ([]models.TeamSummary, int, error)
	MemberTeams(ctx context.Context) ([]models.Team, error)
	CreateTeam(ctx context.Context, name, slug, description string) (*models.Team, error)
	TeamDetails(ctx context.Context, slug string) (*models.TeamDetail, error)
	CreateTeamInvite(ctx context.Context, slug, role string) (*models.InviteDetail, string, error)
	InviteByToken(ctx context.Context, token string) (*models.InviteDetail, error)
	AcceptTeamInvite(ctx context.Context, token string) (*models.Team, error)
	RemoveTeamMember(ctx context.Context, slug string, userID int64) error
	LeaveTeam(ctx context.Context, slug string) error
	SetTeamMemberRole(ctx context.Context, slug string, userID int64, role string) error
}

// teamRoutes registers the team pages. Team pages are public; the team service
// decides who may act (owners and admins manage, members leave).
func (s *Server) teamRoutes(e *echo.Echo) {
	e.GET("/teams", s.listTeams)
	e.POST("/teams", s.createTeam, requireUser)
	e.GET("/teams/:slug", s.showTeam)
	e.POST("/teams/:slug/invites", s.createInvite, requireUser)
	e.POST("/teams/:slug/leave", s.leaveTeam, requireUser)
	e.POST("/teams/:slug/members/:userID/remove", s.removeMember, requireUser)
	e.POST("/teams/:slug/members/:userID/role", s.changeMemberRole, requireUser)
	e.GET("/invites/:token", s.showInvite, requireUser)
	e.POST("/invites/:token", s.acceptInvite, requireUser)
}

func (s *Server) listTeams(c echo.Context) error {
	return s.renderTeams(c, http.StatusOK, web.NewForm())
}

// renderTeams renders the team list with the create form f.
func (s *Server) renderTeams(c echo.Context, status int, f web.Form) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, total, err := s.deps.Teams.ListTeams(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	l := web.TeamList{Page: page, Total: total, HasMore: page*perPage < total}
	for _, t := range list {
		l.Rows = append(l.Rows, web.TeamRow{Team: t.Team, Members: t.MemberCount})
	}
	return s.render(c, status, web.TeamsPage(s.page(c, "Teams"), l, f))
}

func (s *Server) createTeam(c echo.Context) error {
	t, err := s.deps.Teams.CreateTeam(c.Request().Context(), c.FormValue("name"), c.FormValue("slug"), c.FormValue("description"))
	if err != nil {
		switch models.ErrorCode(err) {
		case models.EINVALID, models.ECONFLICT:
			return s.renderTeams(c, statusOf(models.ErrorCode(err)), formOf(c, "name", "slug", "description").WithError(err))
		}
		return err
	}
	return redirect(c, "/teams/"+url.PathEscape(t.Slug)+"?notice=team-created")
}

func (s *Server) showTeam(c echo.Context) error {
	return s.renderTeam(c, http.StatusOK, web.NewForm())
}

// renderTeam renders a team's page with f carrying a refused action's error.
func (s *Server) renderTeam(c echo.Context, status int, f web.Form) error {
	d, err := s.deps.Teams.TeamDetails(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	v := web.TeamView{Team: d.Team, Members: d.Members, MembersVisible: d.MembersVisible, Viewer: d.Viewer, CanManage: d.CanManage,
		JustCreated: c.QueryParam("notice") == "team-created" && d.CanManage}
	return s.render(c, status, web.TeamPage(s.page(c, d.Team.Name), v, f))
}

// teamActionError re-renders the team page with a refusal the user can act on
// (last owner, bad role); anything else goes to the error handler.
func (s *Server) teamActionError(c echo.Context, err error) error {
	switch models.ErrorCode(err) {
	case models.EINVALID, models.ECONFLICT:
		f := web.NewForm()
		f.Error = models.ErrorMessage(err)
		return s.renderTeam(c, statusOf(models.ErrorCode(err)), f)
	}
	return err
}

// createInvite answers with the page that shows the invitation link, once.
func (s *Server) createInvite(c echo.Context) error {
	d, token, err := s.deps.Teams.CreateTeamInvite(c.Request().Context(), c.Param("slug"), c.FormValue("role"))
	if err != nil {
		return s.teamActionError(c, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, http.StatusOK, web.InviteCreatedPage(s.page(c, "Invitation created"), d.Team, d.Invite, s.inviteURL(c, token)))
}

// inviteURL is the absolute address of an invitation link.
func (s *Server) inviteURL(c echo.Context, token string) string {
	base := s.opts.BaseURL
	if base == "" {
		base = c.Scheme() + "://" + c.Request().Host
	}
	return base + "/invites/" + url.PathEscape(token)
}

func (s *Server) leaveTeam(c echo.Context) error {
	slug := c.Param("slug")
	if err := s.deps.Teams.LeaveTeam(c.Request().Context(), slug); err != nil {
		return s.teamActionError(c, err)
	}
	return redirect(c, "/teams/"+url.PathEscape(slug)+"?notice=saved")
}

func (s *Server) removeMember(c echo.Context) error {
	slug := c.Param("slug")
	userID, err := int64Param(c, "userID")
	if err != nil {
		return err
	}
	if err := s.deps.Teams.RemoveTeamMember(c.Request().Context(), slug, userID); err != nil {
		return s.teamActionError(c, err)
	}
	return redirect(c, "/teams/"+url.PathEscape(slug)+"?notice=saved")
}

func (s *Server) changeMemberRole(c echo.Context) error {
	slug := c.Param("slug")
	userID, err := int64Param(c, "userID")
	if err != nil {
		return err
	}
	if err := s.deps.Teams.SetTeamMemberRole(c.Request().Context(), slug, userID, c.FormValue("role")); err != nil {
		return s.teamActionError(c, err)
	}
	return redirect(c, "/teams/"+url.PathEscape(slug)+"?notice=saved")
}

func (s *Server) showInvite(c echo.Context) error {
	token := c.Param("token")
	d, err := s.deps.Teams.InviteByToken(c.Request().Context(), token)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return s.render(c, http.StatusOK, web.InvitePage(s.page(c, "Join "+d.Team.Name), d.Team, d.Invite, token))
}

func (s *Server) acceptInvite(c echo.Context) error {
	t, err := s.deps.Teams.AcceptTeamInvite(c.Request().Context(), c.Param("token"))
	if err != nil {
		return err
	}
	return redirect(c, "/teams/"+url.PathEscape(t.Slug)+"?notice=joined")
}
