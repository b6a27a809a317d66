package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
)

// agentSecret is a secret value no page or API response may ever contain.
const agentSecret = "sk-agent-secret-NEVER-RENDERED-42"

// publicEndpoint is an IP literal, so that the SSRF guard needs no DNS.
const publicEndpoint = "https://93.184.216.34/step"

// agentFixture is a team "lab" with a plain member, and a member of another team.
type agentFixture struct {
	b                *testBundle
	member, outsider *client
}

func newAgentFixture(t *testing.T, b *testBundle) *agentFixture {
	t.Helper()
	f := &agentFixture{b: b, member: b.newUser(t, "member@lab.test", false), outsider: b.newUser(t, "outsider@other.test", false)}
	owner := b.newUser(t, "owner@lab.test", false)
	now := time.Now().UTC()
	for slug, users := range map[string][]*client{"lab": {owner, f.member}, "other": {f.outsider}} {
		team := &models.Team{Slug: slug, Name: strings.ToUpper(slug), CreatedAt: now, UpdatedAt: now}
		require.NoError(t, b.db.Gorm().Create(team).Error)
		for i, u := range users {
			role := models.RoleMember
			if i == 0 {
				role = models.RoleOwner
			}
			require.NoError(t, b.db.Gorm().Create(&models.Membership{TeamID: team.ID, UserID: u.user.ID, Role: role, CreatedAt: now}).Error)
		}
	}
	return f
}

// createAgent registers an http agent in lab with one secret, as the member.
func (f *agentFixture) createAgent(t *testing.T, name string) *models.Agent {
	t.Helper()
	a := &models.Agent{Name: name, Kind: models.AgentHTTP, EndpointURL: publicEndpoint, Model: "test-model"}
	require.NoError(t, servicetest.CreateAgent(f.b.db, actorCtx(f.member), "lab", a, map[string]string{"OPENAI_API_KEY": agentSecret}))
	return a
}

// TestAuthz_Agents checks every agent page and API route for each kind of caller:
// anonymous, a member of the team, a member of another team only, and an
// administrator. Each check runs against a fresh agent.
func TestAuthz_Agents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newAgentFixture(t, b)
	clients := map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin}
	apiClients := map[string]*client{"anonymous": clients["anonymous"]}
	for name, c := range clients {
		if name != "anonymous" {
			apiClients[name] = withToken(t, b, c)
		}
	}
	actors := []string{"anonymous", "member", "outsider", "admin"}
	var seq atomic.Int64

	all := func(status int) map[string]int {
		return map[string]int{"anonymous": status, "member": status, "outsider": status, "admin": status}
	}
	members := func(anon, member, outsider int) map[string]int {
		return map[string]int{"anonymous": anon, "member": member, "outsider": outsider, "admin": member}
	}
	const (
		ok, created, noContent, see = http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusSeeOther
		unauth, forbidden, notFound = http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound
	)
	editForm := url.Values{"name": {"Edited {n}"}, "kind": {"http"}, "endpoint_url": {publicEndpoint}}
	for _, tc := range []authzCase{
		// Pages.
		{method: "GET", path: "/agents", want: all(ok)},
		{method: "GET", path: "/agents?page=0", want: all(http.StatusBadRequest)},
		{method: "GET", path: "/teams/lab/agents", want: all(ok)},
		{method: "GET", path: "/teams/nope/agents", want: all(notFound)},
		{method: "GET", path: "/teams/lab/agents/new", want: members(see, ok, forbidden)},
		{method: "GET", path: "/teams/nope/agents/new", want: members(see, notFound, notFound)},
		{method: "POST", path: "/teams/lab/agents", form: url.Values{"name": {"New {n}"}, "kind": {"replay"}}, want: members(unauth, see, forbidden)},
		{method: "GET", path: "/teams/lab/agents/{agent}", want: all(ok)},
		{method: "GET", path: "/teams/lab/agents/missing", want: all(notFound)},
		{method: "GET", path: "/teams/lab/agents/{agent}/edit", want: members(see, ok, forbidden)},
		{method: "POST", path: "/teams/lab/agents/{agent}/edit", form: editForm, want: members(unauth, see, forbidden)},
		{method: "POST", path: "/teams/lab/agents/missing/edit", form: editForm, want: members(unauth, notFound, forbidden)},
		{method: "POST", path: "/teams/lab/agents/{agent}/delete", want: members(unauth, see, forbidden)},
		// JSON API.
		{method: "GET", path: "/api/v1/agents", want: all(ok)},
		{method: "GET", path: "/api/v1/teams/lab/agents", want: all(ok)},
		{method: "GET", path: "/api/v1/teams/nope/agents", want: all(notFound)},
		{method: "POST", path: "/api/v1/teams/lab/agents", json: `{"name":"API {n}","kind":"replay"}`, want: members(unauth, created, forbidden)},
		{method: "GET", path: "/api/v1/teams/lab/agents/{agent}", want: all(ok)},
		{method: "PATCH", path: "/api/v1/teams/lab/agents/{agent}", json: `{"description":"patched {n}"}`, want: members(unauth, ok, forbidden)},
		{method: "DELETE", path: "/api/v1/teams/lab/agents/{agent}", want: members(unauth, noContent, forbidden)},
	} {
		for _, actor := range actors {
			want, listed := tc.want[actor]
			require.True(t, listed, "%s %s: no expectation for %s", tc.method, tc.path, actor)
			t.Run(tc.method+" "+tc.path+" as "+actor, func(t *testing.T) {
				n := strconv.FormatInt(seq.Add(1), 10)
				a := f.createAgent(t, "Agent "+n)
				row := tc
				row.path = strings.ReplaceAll(tc.path, "{agent}", a.Slug)
				c := clients[actor]
				if strings.HasPrefix(row.path, "/api/") {
					c = apiClients[actor]
				}
				res := c.send(row, n)
				path := row.path
				body := readBody(t, res)
				require.Equal(t, want, res.StatusCode, "%s %s as %s: %s", tc.method, path, actor, body)
				require.NotContains(t, body, agentSecret)
				if want == see && tc.method == http.MethodGet {
					require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/login?next="), res.Header.Get("Location"))
				}
			})
		}
	}
}

// TestAgents_SecretNeverRendered saves secrets through the form and the API and
// reads every page and response back as every kind of caller.
func TestAgents_SecretNeverRendered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newAgentFixture(t, b)
	memberAPI := withToken(t, b, f.member)

	res := f.member.postForm("/teams/lab/agents", url.Values{
		"name": {"Form Agent"}, "kind": {"openai"}, "endpoint_url": {"https://93.184.216.34/v1"},
		"secret_name_1": {"OPENAI_API_KEY"}, "secret_value_1": {agentSecret},
		"secret_name_2": {"OTHER_TOKEN"}, "secret_value_2": {agentSecret + "-2"},
	})
	require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
	require.Equal(t, "/teams/lab/agents/form-agent?notice=saved", res.Header.Get("Location"))

	res = memberAPI.api("POST", "/api/v1/teams/lab/agents", map[string]any{
		"name": "Api Agent", "kind": "http", "endpoint_url": publicEndpoint,
		"secrets": map[string]string{"API_KEY": agentSecret + "-3"},
	})
	body := readBody(t, res)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	require.NotContains(t, body, agentSecret)
	require.Contains(t, body, `"secrets":{"API_KEY":"set"}`)

	res = memberAPI.api("PATCH", "/api/v1/teams/lab/agents/api-agent", map[string]any{
		"secrets": map[string]string{"SECOND": agentSecret + "-4"},
	})
	body = readBody(t, res)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.NotContains(t, body, agentSecret)

	// The values are stored and open for the runner.
	formAgent, err := servicetest.Teams(b.db).AgentBySlug(context.Background(), "lab", "form-agent")
	require.NoError(t, err)
	stored, err := b.db.AgentSecrets(models.WithActor(context.Background(), models.SystemActor()), formAgent.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"OPENAI_API_KEY": agentSecret, "OTHER_TOKEN": agentSecret + "-2"}, stored)

	paths := []string{
		"/agents", "/teams/lab/agents", "/teams/lab/agents/form-agent", "/teams/lab/agents/api-agent",
		"/teams/lab/agents/form-agent/edit", "/teams/lab/agents/api-agent/edit", "/teams/lab/agents/new",
		"/api/v1/agents", "/api/v1/teams/lab/agents", "/api/v1/teams/lab/agents/form-agent", "/api/v1/teams/lab/agents/api-agent",
	}
	for name, c := range map[string]*client{"anonymous": b.anonymous(t), "member": f.member, "outsider": f.outsider, "admin": b.admin, "member-api": memberAPI} {
		for _, p := range paths {
			res := c.get(p)
			body := readBody(t, res)
			require.NotContains(t, body, agentSecret, "%s as %s", p, name)
		}
	}

	detail := readBody(t, f.member.get("/teams/lab/agents/form-agent"))
	require.Contains(t, detail, `data-testid="secret-status-OPENAI_API_KEY">set<`)
	require.Contains(t, detail, `data-testid="secret-status-OTHER_TOKEN">set<`)
	edit := readBody(t, f.member.get("/teams/lab/agents/form-agent/edit"))
	require.Contains(t, edit, `name="clear_secrets" value="OPENAI_API_KEY"`)
	require.Contains(t, edit, `name="secret_value_1" type="password"`)

	var got struct {
		Secrets map[string]string `json:"secrets"`
	}
	decodeJSON(t, memberAPI.get("/api/v1/teams/lab/agents/api-agent"), &got)
	require.Equal(t, map[string]string{"API_KEY": "set", "SECOND": "set"}, got.Secrets)

	t.Run("FormErrorDoesNotEchoSecret", func(t *testing.T) {
		res := f.member.postForm("/teams/lab/agents", url.Values{
			"name": {"Leaky"}, "kind": {"http"}, "endpoint_url": {"http://10.0.0.5/"},
			"secret_name_1": {"KEY"}, "secret_value_1": {agentSecret},
		})
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.NotContains(t, body, agentSecret)
		require.Contains(t, body, `value="KEY"`, "secret names are kept")
	})
}

func TestAgents_Pages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newAgentFixture(t, b)
	f.createAgent(t, "Shown")

	t.Run("FormErrorNextToEndpoint", func(t *testing.T) {
		for endpoint, msg := range map[string]string{
			"http://10.0.0.5/":         `host &#34;10.0.0.5&#34; resolves to a private address (10.0.0.5); ask an admin to allow-list it with PROCTOR_AGENT_ALLOW_HOSTS`,
			"http://169.254.169.254/":  "link-local address",
			"http://127.0.0.1:8080/":   "loopback address",
			"file:///etc/passwd":       "is not an http or https URL",
			"http://[::ffff:10.0.0.1]": "private address",
		} {
			res := f.member.postForm("/teams/lab/agents", url.Values{"name": {"Refused"}, "kind": {"http"}, "endpoint_url": {endpoint}, "model": {"kept-model"}})
			body := readBody(t, res)
			require.Equal(t, http.StatusBadRequest, res.StatusCode, endpoint)
			require.Contains(t, body, `data-testid="error-endpoint_url"`, endpoint)
			require.Contains(t, body, msg, endpoint)
			require.Contains(t, body, `aria-describedby="e-endpoint_url"`)
			require.Contains(t, body, `value="kept-model"`, "the other values are kept")
		}
		list := readBody(t, f.member.get("/teams/lab/agents"))
		require.NotContains(t, list, "Refused", "nothing written")
	})
	t.Run("SlugConflict", func(t *testing.T) {
		res := f.member.postForm("/teams/lab/agents", url.Values{"name": {"Shown"}, "kind": {"replay"}})
		body := readBody(t, res)
		require.Equal(t, http.StatusConflict, res.StatusCode)
		require.Contains(t, body, `data-testid="error-slug"`)
	})
	t.Run("SecretErrors", func(t *testing.T) {
		res := f.member.postForm("/teams/lab/agents", url.Values{"name": {"Bad secret"}, "kind": {"replay"}, "secret_name_1": {"lower"}, "secret_value_1": {"x"}})
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, body, `data-testid="error-secrets"`)
	})
	t.Run("EndpointOnlyForMembers", func(t *testing.T) {
		for name, c := range map[string]*client{"anonymous": b.anonymous(t), "outsider": f.outsider} {
			body := readBody(t, c.get("/teams/lab/agents/shown"))
			require.NotContains(t, body, "93.184.216.34", name)
			require.Contains(t, body, `data-testid="agent-endpoint-hidden"`, name)
			require.NotContains(t, body, `data-testid="edit-agent-link"`, name)
			var got map[string]any
			decodeJSON(t, c.get("/api/v1/teams/lab/agents/shown"), &got)
			require.NotContains(t, got, "endpoint_url", name)
			require.Equal(t, false, got["can_manage"], name)
		}
		for name, c := range map[string]*client{"member": f.member, "admin": b.admin} {
			body := readBody(t, c.get("/teams/lab/agents/shown"))
			require.Contains(t, body, publicEndpoint, name)
			require.Contains(t, body, `data-testid="edit-agent-link"`, name)
		}
		require.Contains(t, readBody(t, f.member.get("/teams/lab/agents")), `data-testid="new-agent-link"`)
		require.NotContains(t, readBody(t, f.outsider.get("/teams/lab/agents")), `data-testid="new-agent-link"`)
	})
	t.Run("EditKeepsAndClearsSecrets", func(t *testing.T) {
		a := f.createAgent(t, "Editable")
		res := f.member.postForm("/teams/lab/agents/editable/edit", url.Values{
			"name": {"Editable"}, "kind": {"http"}, "endpoint_url": {publicEndpoint}, "open_source": {"on"},
			"secret_name_1": {"NEW_ONE"}, "secret_value_1": {"fresh"},
		})
		require.Equal(t, http.StatusSeeOther, res.StatusCode, readBody(t, res))
		sys := models.WithActor(context.Background(), models.SystemActor())
		got, err := b.db.AgentSecrets(sys, a.ID)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"OPENAI_API_KEY": agentSecret, "NEW_ONE": "fresh"}, got)

		res = f.member.postForm("/teams/lab/agents/editable/edit", url.Values{
			"name": {"Editable"}, "kind": {"http"}, "endpoint_url": {publicEndpoint}, "clear_secrets": {"OPENAI_API_KEY"},
		})
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		got, err = b.db.AgentSecrets(sys, a.ID)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"NEW_ONE": "fresh"}, got)

		// A refused edit re-renders the edit form with the stored secrets listed.
		res = f.member.postForm("/teams/lab/agents/editable/edit", url.Values{"name": {"Editable"}, "kind": {"http"}, "endpoint_url": {"http://192.168.0.1/"}})
		body := readBody(t, res)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Contains(t, body, `data-testid="error-endpoint_url"`)
		require.Contains(t, body, `name="clear_secrets" value="NEW_ONE"`)
		require.Contains(t, body, `action="/teams/lab/agents/editable/edit"`)
	})
	t.Run("DeleteRedirects", func(t *testing.T) {
		f.createAgent(t, "Doomed")
		res := f.member.postForm("/teams/lab/agents/doomed/delete", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/teams/lab/agents?notice=deleted", res.Header.Get("Location"))
		require.Equal(t, http.StatusNotFound, f.member.get("/teams/lab/agents/doomed").StatusCode)
	})
	t.Run("Index", func(t *testing.T) {
		body := readBody(t, b.anonymous(t).get("/agents?per_page=1"))
		require.Contains(t, body, `data-testid="agents-table"`)
		require.Contains(t, body, `rel="next"`)
	})
}

func TestAPI_Agents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newAgentFixture(t, b)
	api := withToken(t, b, f.member)

	res := api.api("POST", "/api/v1/teams/lab/agents", map[string]any{
		"name": "Replayer", "kind": "replay", "open_source": true, "code_url": "https://example.org/code",
		"config": map[string]any{"actions": []string{"stop"}},
	})
	body := readBody(t, res)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	require.Equal(t, "/api/v1/teams/lab/agents/replayer", res.Header.Get("Location"))
	var a map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &a))
	require.Equal(t, "replayer", a["slug"])
	require.Equal(t, "lab", a["team"])
	require.Equal(t, true, a["open_source"])
	require.Equal(t, map[string]any{"actions": []any{"stop"}}, a["config"])
	require.Equal(t, map[string]any{}, a["secrets"])
	require.Equal(t, "", a["endpoint_url"], "members see the (empty) endpoint")

	t.Run("RefusedEndpoint", func(t *testing.T) {
		res := api.api("POST", "/api/v1/teams/lab/agents", map[string]any{"name": "Bad", "kind": "http", "endpoint_url": "http://169.254.169.254/"})
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		decodeJSON(t, res, &e)
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		require.Equal(t, models.EINVALID, e.Error.Code)
		require.Contains(t, e.Error.Message, "link-local address")
	})
	t.Run("PatchRules", func(t *testing.T) {
		res := api.api("PATCH", "/api/v1/teams/lab/agents/replayer", map[string]any{"slug": "renamed"})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		res = api.api("PATCH", "/api/v1/teams/lab/agents/replayer", map[string]any{"unknown": 1})
		require.Equal(t, http.StatusBadRequest, res.StatusCode)
		res = api.api("PATCH", "/api/v1/teams/lab/agents/replayer", map[string]any{"config": nil, "secrets": map[string]string{"K": "v"}})
		var got map[string]any
		decodeJSON(t, res, &got)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.NotContains(t, got, "config")
		require.Equal(t, map[string]any{"K": "set"}, got["secrets"])
		res = api.api("PATCH", "/api/v1/teams/lab/agents/replayer", map[string]any{"clear_secrets": []string{"K"}, "kind": "openai"})
		decodeJSON(t, res, &got)
		require.Equal(t, map[string]any{"OPENAI_API_KEY": "not set"}, got["secrets"])
	})
	t.Run("ListEnvelope", func(t *testing.T) {
		var l struct {
			Items   []map[string]any `json:"items"`
			Total   int              `json:"total"`
			HasMore bool             `json:"has_more"`
		}
		decodeJSON(t, api.get("/api/v1/agents?per_page=1"), &l)
		require.Equal(t, 1, l.Total)
		require.Len(t, l.Items, 1)
		require.False(t, l.HasMore)
	})
}
