package models_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

func TestValidSecretName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"OPENAI_API_KEY": true, "A": true, "K1": true, strings.Repeat("A", 64): true,
		"": false, "lower": false, "1KEY": false, "_KEY": false, "KEY-1": false, "KEY 1": false,
		strings.Repeat("A", 65): false, "CLÉ": false,
	} {
		require.Equal(t, ok, models.ValidSecretName(name), name)
	}
}

func TestMergeAgentSecrets(t *testing.T) {
	t.Parallel()
	stored := map[string]string{"KEEP": "k", "DROP": "d", "SWAP": "old"}
	got, err := models.MergeAgentSecrets(stored, map[string]string{"KEEP": "", "SWAP": "new", "ADD": "a"}, []string{"DROP"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"KEEP": "k", "SWAP": "new", "ADD": "a"}, got)
	require.Equal(t, "ADD,KEEP,SWAP", models.SortedSecretNames(got))
	require.Equal(t, "d", stored["DROP"], "the stored map is not modified")

	for _, tc := range []struct {
		set   map[string]string
		clear []string
		msg   string
	}{
		{map[string]string{"": "v"}, nil, "needs a name"},
		{map[string]string{"bad": "v"}, nil, `secret name "bad"`},
		{map[string]string{"NEW": ""}, nil, "has no value"},
		{map[string]string{"BIG": strings.Repeat("x", models.MaxAgentSecretBytes+1)}, nil, "at most 4096"},
		{nil, []string{"no good"}, "cannot clear"},
	} {
		_, err := models.MergeAgentSecrets(stored, tc.set, tc.clear)
		require.Equal(t, "secrets", models.ErrorField(err), tc.msg)
		require.Contains(t, models.ErrorMessage(err), tc.msg)
	}
	many := map[string]string{}
	for i := range models.MaxAgentSecrets {
		many["K"+strings.Repeat("X", i)] = "v"
	}
	_, err = models.MergeAgentSecrets(nil, many, nil)
	require.NoError(t, err)
	_, err = models.MergeAgentSecrets(map[string]string{"ONE_MORE": "v"}, many, nil)
	require.Contains(t, models.ErrorMessage(err), "at most 20 secrets")
}

func TestAgent_Validate(t *testing.T) {
	t.Parallel()
	ok := func() models.Agent {
		return models.Agent{Name: " My Agent ", Kind: models.AgentHTTP, EndpointURL: " https://agent.example.com/step "}
	}
	a := ok()
	require.NoError(t, a.Validate())
	require.Equal(t, "my-agent", a.Slug)
	require.Equal(t, "My Agent", a.Name)
	require.Equal(t, "https://agent.example.com/step", a.EndpointURL)

	for field, edit := range map[string]func(*models.Agent){
		"name":         func(a *models.Agent) { a.Name = "" },
		"slug":         func(a *models.Agent) { a.Slug = "new" },
		"kind":         func(a *models.Agent) { a.Kind = "exec" },
		"endpoint_url": func(a *models.Agent) { a.EndpointURL = "file:///etc/passwd" },
		"paper_url":    func(a *models.Agent) { a.PaperURL = "javascript:alert(1)" },
		"code_url":     func(a *models.Agent) { a.CodeURL = "ftp://example.org" },
		"config":       func(a *models.Agent) { a.Config = "null" },
	} {
		a := ok()
		edit(&a)
		err := a.Validate()
		require.Equal(t, models.EINVALID, models.ErrorCode(err), field)
		require.Equal(t, field, models.ErrorField(err), field)
	}
}

func TestAgent_ValidateConnecting(t *testing.T) {
	t.Parallel()
	push := models.Agent{Name: "Pusher", Kind: models.AgentHTTP}
	err := push.Validate()
	require.Equal(t, "endpoint_url", models.ErrorField(err), "a push-mode http agent needs its endpoint")
	require.Contains(t, models.ErrorMessage(err), `{"pull": true}`, "and the error says how to pull instead")

	pull := models.Agent{Name: "Puller", Kind: models.AgentHTTP, Config: `{"pull": true, "screenshot": false}`}
	require.NoError(t, pull.Validate())
	require.True(t, models.SnapshotOf(&pull).Connects())
	mcp := models.Agent{Name: "Browser", Kind: models.AgentMCP}
	require.NoError(t, mcp.Validate())
	require.True(t, models.SnapshotOf(&mcp).Connects())
	for _, called := range []models.Agent{
		{Kind: models.AgentHTTP, EndpointURL: "https://agent.example.com/step"},
		{Kind: models.AgentHTTP, Config: `{"pull": false}`},
		{Kind: models.AgentHTTP, Config: `{"pull": "yes"}`},
		{Kind: models.AgentReplay, Config: `{"pull": true}`},
		{Kind: models.AgentOpenAI},
	} {
		require.False(t, models.SnapshotOf(&called).Connects(), "%s %s", called.Kind, called.Config)
	}
}

func TestAgent_SecretStatus(t *testing.T) {
	t.Parallel()
	a := models.Agent{Kind: models.AgentOpenAI, SecretNames: "EXTRA"}
	require.Equal(t, map[string]string{"OPENAI_API_KEY": "not set", "EXTRA": "set"}, a.SecretStatus())
	require.Equal(t, []string{"EXTRA", "OPENAI_API_KEY"}, a.SecretStatusNames())
	a.SecretNames = "EXTRA,OPENAI_API_KEY"
	require.Equal(t, map[string]string{"OPENAI_API_KEY": "set", "EXTRA": "set"}, a.SecretStatus())
}
