package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// apiAgentRoutes registers the agent registry API. Reads are public; the store
// lets only team members and admins create, change and delete.
func (s *Server) apiAgentRoutes(g *echo.Group) {
	g.GET("/agents", s.apiListAllAgents)
	g.GET("/teams/:slug/agents", s.apiListTeamAgents)
	g.POST("/teams/:slug/agents", s.apiCreateAgent)
	g.GET("/teams/:slug/agents/:agent", s.apiShowAgent)
	g.PATCH("/teams/:slug/agents/:agent", s.apiPatchAgent)
	g.DELETE("/teams/:slug/agents/:agent", s.apiDeleteAgent)
}

// apiAgent is an agent in API responses. Secrets appear only as name → "set" /
// "not set"; the endpoint URL only for the team's members and admins.
type apiAgent struct {
	ID          int64             `json:"id"`
	Team        string            `json:"team"`
	Slug        string            `json:"slug"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Model       string            `json:"model"`
	Framework   string            `json:"framework"`
	OpenSource  bool              `json:"open_source"`
	PaperURL    string            `json:"paper_url"`
	CodeURL     string            `json:"code_url"`
	Kind        string            `json:"kind"`
	EndpointURL *string           `json:"endpoint_url,omitempty"`
	Config      json.RawMessage   `json:"config,omitempty"`
	Secrets     map[string]string `json:"secrets"`
	CanManage   bool              `json:"can_manage"`
	URL         string            `json:"url"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// apiAgentInput is the body of POST (all fields) and PATCH (only the fields to
// change). Secrets with an empty value keep the stored one on PATCH.
type apiAgentInput struct {
	Slug         *string           `json:"slug"`
	Name         *string           `json:"name"`
	Description  *string           `json:"description"`
	Model        *string           `json:"model"`
	Framework    *string           `json:"framework"`
	OpenSource   *bool             `json:"open_source"`
	PaperURL     *string           `json:"paper_url"`
	CodeURL      *string           `json:"code_url"`
	Kind         *string           `json:"kind"`
	EndpointURL  *string           `json:"endpoint_url"`
	Config       json.RawMessage   `json:"config"`
	Secrets      map[string]string `json:"secrets"`
	ClearSecrets []string          `json:"clear_secrets"`
}

// patch turns the input into an agent patch; config may be a JSON object or null
// (to remove it).
func (in *apiAgentInput) patch() *models.AgentPatch {
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

func toAPIAgent(a models.Agent) apiAgent {
	out := apiAgent{
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

func toAPIAgents(list []models.Agent) []apiAgent {
	out := make([]apiAgent, 0, len(list))
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
	list, total, err := s.store.ListAllAgents(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listResponse{Items: toAPIAgents(list), Page: page, PerPage: perPage, Total: total, HasMore: page*perPage < total})
}

// apiListTeamAgents lists a whole team registry in one page: teams hold few agents.
func (s *Server) apiListTeamAgents(c echo.Context) error {
	res, err := s.store.ListAgents(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	n := len(res.Agents)
	return c.JSON(http.StatusOK, listResponse{Items: toAPIAgents(res.Agents), Page: 1, PerPage: max(n, 1), Total: n})
}

func (s *Server) apiShowAgent(c echo.Context) error {
	a, err := s.store.AgentBySlug(c.Request().Context(), c.Param("slug"), c.Param("agent"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIAgent(*a))
}

func (s *Server) apiCreateAgent(c echo.Context) error {
	var in apiAgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if len(in.ClearSecrets) > 0 {
		return models.FieldError("clear_secrets", "clear_secrets only applies when changing an agent (PATCH)")
	}
	a := &models.Agent{}
	in.patch().Apply(a)
	if err := s.store.CreateAgent(c.Request().Context(), c.Param("slug"), a, in.Secrets); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/teams/"+a.Team.Slug+"/agents/"+a.Slug)
	return c.JSON(http.StatusCreated, toAPIAgent(*a))
}

func (s *Server) apiPatchAgent(c echo.Context) error {
	var in apiAgentInput
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	a, err := s.store.PatchAgent(c.Request().Context(), c.Param("slug"), c.Param("agent"), in.patch(), in.Secrets, in.ClearSecrets)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAPIAgent(*a))
}

func (s *Server) apiDeleteAgent(c echo.Context) error {
	if err := s.store.DeleteAgent(c.Request().Context(), c.Param("slug"), c.Param("agent")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
