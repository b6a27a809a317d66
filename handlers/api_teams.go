package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

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

// Response shapes: explicit structs so that no hash or internal field can leak.

type apiUser struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
}

type apiUserTeam struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
	Role string `json:"role"`
}

type apiMeResponse struct {
	apiUser
	Teams []apiUserTeam `json:"teams"`
}

type apiToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

type apiCreatedToken struct {
	apiToken
	// Token is the plaintext, present only in the creation response.
	Token string `json:"token"`
}

type apiTeam struct {
	ID          int64     `json:"id"`
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

type apiTeamListItem struct {
	apiTeam
	MemberCount int `json:"member_count"`
}

type apiMember struct {
	UserID   int64     `json:"user_id"`
	Name     string    `json:"name"`
	Email    string    `json:"email"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
}

type apiTeamDetail struct {
	apiTeam
	// Members is present only for the team's members and administrators.
	Members *[]apiMember `json:"members,omitempty"`
}

type apiInvite struct {
	URL       string    `json:"url"`
	Team      string    `json:"team"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
}

func toAPIToken(t models.APIToken) apiToken {
	return apiToken{ID: t.ID, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

func toAPITeam(t models.Team) apiTeam {
	return apiTeam{ID: t.ID, Slug: t.Slug, Name: t.Name, Description: t.Description, CreatedAt: t.CreatedAt}
}

func (s *Server) apiMe(c echo.Context) error {
	acc, err := s.store.AccountOverview(c.Request().Context())
	if err != nil {
		return err
	}
	u := acc.User
	out := apiMeResponse{
		apiUser: apiUser{ID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin, CreatedAt: u.CreatedAt},
		Teams:   []apiUserTeam{},
	}
	for _, m := range acc.Memberships {
		if m.Team != nil {
			out.Teams = append(out.Teams, apiUserTeam{ID: m.Team.ID, Slug: m.Team.Slug, Name: m.Team.Name, Role: m.Role})
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiListTokens(c echo.Context) error {
	list, err := s.store.ListAPITokens(c.Request().Context())
	if err != nil {
		return err
	}
	items := make([]apiToken, 0, len(list))
	for _, t := range list {
		items = append(items, toAPIToken(t))
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items})
}

func (s *Server) apiCreateToken(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	t, plain, err := s.store.CreateAPIToken(c.Request().Context(), in.Name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, apiCreatedToken{apiToken: toAPIToken(*t), Token: plain})
}

func (s *Server) apiRevokeToken(c echo.Context) error {
	id, err := int64Param(c, "id")
	if err != nil {
		return err
	}
	t, err := s.store.RevokeAPIToken(c.Request().Context(), id)
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
	list, total, err := s.store.ListTeams(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	items := make([]apiTeamListItem, 0, len(list))
	for _, t := range list {
		items = append(items, apiTeamListItem{apiTeam: toAPITeam(t.Team), MemberCount: t.MemberCount})
	}
	return c.JSON(http.StatusOK, listResponse{Items: items, Page: page, PerPage: perPage, Total: total, HasMore: page*perPage < total})
}

func (s *Server) apiCreateTeam(c echo.Context) error {
	var in struct {
		Name        string `json:"name"`
		Slug        string `json:"slug"`
		Description string `json:"description"`
	}
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	t, err := s.store.CreateTeam(c.Request().Context(), in.Name, in.Slug, in.Description)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toAPITeam(*t))
}

func (s *Server) apiShowTeam(c echo.Context) error {
	d, err := s.store.TeamDetails(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPITeamDetail(d))
}

func toAPITeamDetail(d *models.TeamDetail) apiTeamDetail {
	out := apiTeamDetail{apiTeam: toAPITeam(d.Team)}
	if d.MembersVisible {
		members := make([]apiMember, 0, len(d.Members))
		for _, m := range d.Members {
			am := apiMember{UserID: m.UserID, Role: m.Role, JoinedAt: m.CreatedAt}
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
	var in struct {
		Role string `json:"role"`
	}
	if c.Request().ContentLength != 0 { // the body is optional: the role defaults to member
		if err := bindJSON(c, &in); err != nil {
			return err
		}
	}
	d, token, err := s.store.CreateTeamInvite(c.Request().Context(), c.Param("slug"), in.Role)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, apiInvite{URL: s.inviteURL(c, token), Team: d.Team.Slug, Role: d.Invite.Role, ExpiresAt: d.Invite.ExpiresAt})
}

func (s *Server) apiRemoveMember(c echo.Context) error {
	userID, err := int64Param(c, "userID")
	if err != nil {
		return err
	}
	if err := s.store.RemoveTeamMember(c.Request().Context(), c.Param("slug"), userID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
