package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// AgentService is what the agent pages and the agent API need from the team
// service.
type AgentService interface {
	ListAgents(ctx context.Context, teamSlug string) (*models.TeamAgents, error)
	ListAllAgents(ctx context.Context, page, perPage int) ([]models.Agent, int, error)
	AgentBySlug(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error)
	AgentTeam(ctx context.Context, teamSlug string) (*models.Team, error)
	EditableAgent(ctx context.Context, teamSlug, agentSlug string) (*models.Agent, error)
	CreateAgent(ctx context.Context, teamSlug string, a *models.Agent, secrets map[string]string) error
	UpdateAgent(ctx context.Context, teamSlug, agentSlug string, a *models.Agent, secrets map[string]string, clearSecrets []string) error
	PatchAgent(ctx context.Context, teamSlug, agentSlug string, p *models.AgentPatch, secrets map[string]string, clearSecrets []string) (*models.Agent, error)
	DeleteAgent(ctx context.Context, teamSlug, agentSlug string) error
}

// agentRoutes registers the agent registry pages. Lists and details are public;
// the team service lets only team members and admins register, edit and delete.
func (s *Server) agentRoutes(e *echo.Echo) {
	e.GET("/agents", s.listAllAgents)
	e.GET("/teams/:slug/agents", s.listTeamAgents)
	e.GET("/teams/:slug/agents/new", s.newAgent, requireUser)
	e.POST("/teams/:slug/agents", s.createAgent, requireUser)
	e.GET("/teams/:slug/agents/:agent", s.showAgent)
	e.GET("/teams/:slug/agents/:agent/edit", s.editAgent, requireUser)
	e.POST("/teams/:slug/agents/:agent/edit", s.updateAgent, requireUser)
	e.POST("/teams/:slug/agents/:agent/delete", s.deleteAgent, requireUser)
}

// agentFields are the agent form's plain fields, echoed back when it re-renders.
func agentFields() []string {
	return []string{"name", "slug", "description", "kind", "model", "framework", "open_source", "paper_url", "code_url", "endpoint_url", "config"}
}

func agentPath(team, agent string) string {
	return "/teams/" + url.PathEscape(team) + "/agents/" + url.PathEscape(agent)
}

func (s *Server) listAllAgents(c echo.Context) error {
	page, perPage, err := pageParams(c)
	if err != nil {
		return err
	}
	list, total, err := s.deps.Teams.ListAllAgents(c.Request().Context(), page, perPage)
	if err != nil {
		return err
	}
	v := web.AgentIndexView{Agents: list, Page: page, Total: total, HasMore: page*perPage < total}
	return s.render(c, http.StatusOK, web.AgentIndexPage(s.page(c, "Agents"), v))
}

func (s *Server) listTeamAgents(c echo.Context) error {
	res, err := s.deps.Teams.ListAgents(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	v := web.TeamAgentsView{Team: *res.Team, Agents: res.Agents, CanManage: res.CanManage}
	return s.render(c, http.StatusOK, web.TeamAgentsPage(s.page(c, "Agents of "+res.Team.Name), v))
}

func (s *Server) showAgent(c echo.Context) error {
	a, err := s.deps.Teams.AgentBySlug(c.Request().Context(), c.Param("slug"), c.Param("agent"))
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.AgentPage(s.page(c, a.Name), *a))
}

func (s *Server) newAgent(c echo.Context) error {
	team, err := s.deps.Teams.AgentTeam(c.Request().Context(), c.Param("slug"))
	if err != nil {
		return err
	}
	f := web.NewForm()
	f.Values["kind"] = models.AgentHTTP
	return s.render(c, http.StatusOK, web.AgentFormPage(s.page(c, "Register an agent"), web.AgentFormView{Team: *team, Form: f}))
}

func (s *Server) createAgent(c echo.Context) error {
	a, secrets, _, err := agentFromForm(c)
	if err != nil {
		return s.agentFormError(c, err, "")
	}
	if err := s.deps.Teams.CreateAgent(c.Request().Context(), c.Param("slug"), a, secrets); err != nil {
		return s.agentFormError(c, err, "")
	}
	return redirect(c, agentPath(c.Param("slug"), a.Slug)+"?notice=saved")
}

func (s *Server) editAgent(c echo.Context) error {
	a, err := s.deps.Teams.EditableAgent(c.Request().Context(), c.Param("slug"), c.Param("agent"))
	if err != nil {
		return err
	}
	v := web.AgentFormView{Team: *a.Team, Agent: a, Form: web.AgentFormValues(*a)}
	return s.render(c, http.StatusOK, web.AgentFormPage(s.page(c, "Edit "+a.Name), v))
}

func (s *Server) updateAgent(c echo.Context) error {
	a, secrets, clear, err := agentFromForm(c)
	if err != nil {
		return s.agentFormError(c, err, c.Param("agent"))
	}
	a.Slug = "" // fixed after registration; the form does not send it
	if err := s.deps.Teams.UpdateAgent(c.Request().Context(), c.Param("slug"), c.Param("agent"), a, secrets, clear); err != nil {
		return s.agentFormError(c, err, c.Param("agent"))
	}
	return redirect(c, agentPath(c.Param("slug"), a.Slug)+"?notice=saved")
}

func (s *Server) deleteAgent(c echo.Context) error {
	slug := c.Param("slug")
	if err := s.deps.Teams.DeleteAgent(c.Request().Context(), slug, c.Param("agent")); err != nil {
		return err
	}
	return redirect(c, "/teams/"+url.PathEscape(slug)+"/agents?notice=deleted")
}

// agentFormError re-renders the register (agentSlug "") or edit form with an
// error the user can fix, next to its field; anything else goes to the error
// handler. Secret values are never echoed back.
func (s *Server) agentFormError(c echo.Context, err error, agentSlug string) error {
	switch models.ErrorCode(err) {
	case models.EINVALID, models.ECONFLICT:
	default:
		return err
	}
	ctx := c.Request().Context()
	f := formOf(c, agentFields()...)
	for i := 1; i <= web.AgentSecretRows; i++ {
		name := "secret_name_" + itoa(i)
		f.Values[name] = c.FormValue(name)
	}
	v := web.AgentFormView{Form: f.WithError(err)}
	title := "Register an agent"
	if agentSlug == "" {
		team, terr := s.deps.Teams.AgentTeam(ctx, c.Param("slug"))
		if terr != nil {
			return terr
		}
		v.Team = *team
	} else {
		a, aerr := s.deps.Teams.EditableAgent(ctx, c.Param("slug"), agentSlug)
		if aerr != nil {
			return aerr
		}
		v.Team, v.Agent, title = *a.Team, a, "Edit "+a.Name
	}
	return s.render(c, statusOf(models.ErrorCode(err)), web.AgentFormPage(s.page(c, title), v))
}

// agentFromForm reads the agent form: the agent's fields, the new secrets from
// the name/value rows (rows with neither are skipped) and the names ticked for
// removal.
func agentFromForm(c echo.Context) (*models.Agent, map[string]string, []string, error) {
	params, err := c.FormParams()
	if err != nil {
		return nil, nil, nil, models.Errorf(models.EINVALID, "The form could not be read.")
	}
	a := &models.Agent{
		Name: params.Get("name"), Slug: params.Get("slug"), Description: params.Get("description"),
		Kind: params.Get("kind"), Model: params.Get("model"), Framework: params.Get("framework"),
		OpenSource: params.Get("open_source") != "", PaperURL: params.Get("paper_url"),
		CodeURL: params.Get("code_url"), EndpointURL: params.Get("endpoint_url"), Config: params.Get("config"),
	}
	secrets := map[string]string{}
	for i := 1; i <= web.AgentSecretRows; i++ {
		name := strings.TrimSpace(params.Get("secret_name_" + itoa(i)))
		value := params.Get("secret_value_" + itoa(i))
		if name == "" && value == "" {
			continue
		}
		if _, dup := secrets[name]; dup {
			return nil, nil, nil, models.FieldError("secrets", "secret %q is named twice", name)
		}
		secrets[name] = value
	}
	return a, secrets, params["clear_secrets"], nil
}

func itoa(i int) string { return web.Itoa(i) }
