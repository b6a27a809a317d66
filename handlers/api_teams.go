package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// apiAccountRoutes registers the caller's own account and API tokens.
func (s *Server) apiAccountRoutes(g *echo.Group) {
	g.GET("/me", s.apiMe)
	g.GET("/tokens", s.apiListTokens)
	g.POST("/tokens", s.apiCreateToken)
	g.DELETE("/tokens/:id", s.apiRevokeToken)
}

// apiTeamRoutes registers teams, invitations and memberships.
func (s *Server) apiTeamRoutes(g *echo.Group) {
	g.GET("/teams", s.apiListTeams)
	g.POST("/teams", s.apiCreateTeam)
	g.GET("/teams/:slug", s.apiShowTeam)
	g.POST("/teams/:slug/invites", s.apiCreateInvite)
	g.DELETE("/teams/:slug/members/:userID", s.apiRemoveMember)
}

func toAPIToken(t models.APIToken) api.Token {
	return api.Token{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

func toAPITeam(t models.Team) api.Team {
	return api.Team{ID: t.ID, Slug: t.Slug, Name: t.Name, Description: t.Description, CreatedAt: t.CreatedAt}
}

func (s *Server) apiMe(c echo.Context) error {
	acc, err := s.deps.Teams.AccountOverview(c.Request().Context())
	if err != nil {
		return err
	}
	u := acc.User
	out := api.MeResponse{
		User:  api.User{ID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin, CreatedAt: u.CreatedAt},
		Teams: []api.UserTeam{},
	}
	for _, m := range acc.Memberships {
		if m.Team != nil {
			out.Teams = append(out.Teams, api.UserTeam{ID: m.Team.ID, Slug: m.Team.Slug, Name: m.Team.Name, Role: m.Role})
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiListTokens(c echo.Context) error {
	list, err := s.deps.Teams.ListAPITokens(c.Request().Context())
	if err != nil {
		return err
	}
	out := api.TokenList{Items: make([]api.Token, 0, len(list))}
	for _, t := range list {
		out.Items = append(out.Items, toAPIToken(t))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiCreateToken(c echo.Context) error {
	var in api.TokenInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	t, plain, err := s.deps.Teams.CreateAPIToken(c.Request().Context(), in.Name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, api.CreatedToken{Token: toAPIToken(*t), Value: plain})
}

func (s *Server) apiRevokeToken(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	t, err := s.deps.Teams.RevokeAPIToken(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIToken(*t))
}

func (s *Server) apiListTeams(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, total, err := s.deps.Teams.ListTeams(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	items := make([]api.TeamListItem, 0, len(list))
	for _, t := range list {
		items = append(items, api.TeamListItem{Team: toAPITeam(t.Team), MemberCount: t.MemberCount})
	}
	return c.JSON(http.StatusOK, api.NewPage(items, page, perPage, total))
}

func (s *Server) apiCreateTeam(c echo.Context) error {
	var in api.TeamInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	t, err := s.deps.Teams.CreateTeam(c.Request().Context(), in.Name, in.Slug, in.Description)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toAPITeam(*t))
}

func (s *Server) apiShowTeam(c echo.Context) error {
	d, err := s.deps.Teams.TeamDetails(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPITeamDetail(d))
}

func toAPITeamDetail(d *models.TeamDetail) api.TeamDetail {
	out := api.TeamDetail{Team: toAPITeam(d.Team)}
	if d.MembersVisible {
		members := make([]api.Member, 0, len(d.Members))
		for _, m := range d.Members {
			am := api.Member{UserID: m.UserID, Role: m.Role, JoinedAt: m.CreatedAt}
			if m.User != nil {
				am.Name, am.Email = m.User.Name, m.User.Email
			}
			members = append(members, am)
		}
		out.Members = &members
	}
	return out
}

func (s *Server) apiCreateInvite(c echo.Context) error {
	var in api.InviteInput
	if c.Request().ContentLength != 0 { // the body is optional: the role defaults to member
		if err := bindJSON(c, &in); err != nil {
			return err
		}
	}
	d, token, err := s.deps.Teams.CreateTeamInvite(c.Request().Context(), c.Param("slug"), in.Role)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, api.Invite{URL: s.inviteURL(c, token), Team: d.Team.Slug, Role: d.Invite.Role, ExpiresAt: d.Invite.ExpiresAt})
}

func (s *Server) apiRemoveMember(c echo.Context) error {
	userID, err := int64Param(c, "userID")
	if err != nil {
		return err
	}
	if err := s.deps.Teams.RemoveTeamMember(c.Request().Context(), c.Param("slug"), userID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
