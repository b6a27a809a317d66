package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// apiAgentRoutes registers the agent registry API. Reads are public; the team
// service lets only team members and admins create, change and delete.
func (s *Server) apiAgentRoutes(g *echo.Group) {
	g.GET("/agents", s.apiListAllAgents)
	g.GET("/teams/:slug/agents", s.apiListTeamAgents)
	g.POST("/teams/:slug/agents", s.apiCreateAgent)
	g.GET("/teams/:slug/agents/:agent", s.apiShowAgent)
	g.PATCH("/teams/:slug/agents/:agent", s.apiPatchAgent)
	g.DELETE("/teams/:slug/agents/:agent", s.apiDeleteAgent)
}

// agentPatchOf turns an agent's API body into an agent patch; config may be
// a JSON object or null (to remove it).
func agentPatchOf(in *api.AgentInput) *models.AgentPatch {
	p := &models.AgentPatch{
		Slug: in.Slug, Name: in.Name, Description: in.Description, Model: in.Model,
		Framework: in.Framework, OpenSource: in.OpenSource, PaperURL: in.PaperURL,
		CodeURL: in.CodeURL, Kind: in.Kind, EndpointURL: in.EndpointURL,
	}
	if len(in.Config) > 0 {
		cfg := ""
		if !bytes.Equal(bytes.TrimSpace(in.Config), []byte("null")) {
			cfg = string(in.Config)
		}
		p.Config = &cfg
	}
	return p
}

func toAPIAgent(a models.Agent) api.Agent {
	out := api.Agent{
		ID: a.ID, Slug: a.Slug, Name: a.Name, Description: a.Description, Model: a.Model,
		Framework: a.Framework, OpenSource: a.OpenSource, PaperURL: a.PaperURL, CodeURL: a.CodeURL,
		Kind: a.Kind, Secrets: a.SecretStatus(), CanManage: a.CanManage,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
	if a.Team != nil {
		out.Team = a.Team.Slug
		out.URL = agentPath(a.Team.Slug, a.Slug)
	}
	if a.CanManage {
		endpoint := a.EndpointURL
		out.EndpointURL = &endpoint
	}
	if a.Config != "" && json.Valid([]byte(a.Config)) {
		out.Config = json.RawMessage(a.Config)
	}
	return out
}

func toAPIAgents(list []models.Agent) []api.Agent {
	out := make([]api.Agent, 0, len(list))
	for _, a := range list {
		out = append(out, toAPIAgent(a))
	}
	return out
}

func (s *Server) apiListAllAgents(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, total, err := s.deps.Teams.ListAllAgents(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.NewPage(toAPIAgents(list), page, perPage, total))
}

// apiListTeamAgents lists a whole team registry in one page: teams hold few agents.
func (s *Server) apiListTeamAgents(c echo.Context) error {
	res, err := s.deps.Teams.ListAgents(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	n := len(res.Agents)
	return c.JSON(http.StatusOK, api.NewPage(toAPIAgents(res.Agents), 1, max(n, 1), n))
}

func (s *Server) apiShowAgent(c echo.Context) error {
	a, err := s.deps.Teams.AgentBySlug(c.Request().Context(), c.Param("slug"), c.Param("agent"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIAgent(*a))
}

func (s *Server) apiCreateAgent(c echo.Context) error {
	var in api.AgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if len(in.ClearSecrets) > 0 {
		return models.FieldError("clear_secrets", "clear_secrets only applies when changing an agent (PATCH)")
	}
	a := &models.Agent{}
	agentPatchOf(&in).Apply(a)
	if err := s.deps.Teams.CreateAgent(c.Request().Context(), c.Param("slug"), a, in.Secrets); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/teams/"+a.Team.Slug+"/agents/"+a.Slug)
	return c.JSON(http.StatusCreated, toAPIAgent(*a))
}

func (s *Server) apiPatchAgent(c echo.Context) error {
	var in api.AgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	a, err := s.deps.Teams.PatchAgent(c.Request().Context(), c.Param("slug"), c.Param("agent"), agentPatchOf(&in), in.Secrets, in.ClearSecrets)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIAgent(*a))
}

func (s *Server) apiDeleteAgent(c echo.Context) error {
	if err := s.deps.Teams.DeleteAgent(c.Request().Context(), c.Param("slug"), c.Param("agent")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
