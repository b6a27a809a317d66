package models

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// Agent kinds.
const (
	AgentHTTP   = "http"   // Proctor calls the team's endpoint with protocol v1
	AgentOpenAI = "openai" // the built-in LLM agent over an OpenAI-compatible endpoint
	AgentReplay = "replay" // plays a scripted action list
	AgentUpload = "upload" // results are only uploaded, never executed here
	AgentMCP    = "mcp"    // the agent claims episodes and drives each one's browser over MCP
)

// AgentKinds lists the valid agent kinds in display order.
func AgentKinds() []string {
	return []string{AgentHTTP, AgentMCP, AgentOpenAI, AgentReplay, AgentUpload}
}

// Agent is a team-owned entry in the agent registry.
type Agent struct {
	ID          int64
	TeamID      int64
	Slug        string
	Name        string
	Description string
	Model       string
	Framework   string
	OpenSource  bool
	PaperURL    string
	CodeURL     string
	Kind        string
	EndpointURL string
	// Config is kind-specific public configuration as JSON (e.g. the replay script).
	Config string
	// SecretsCiphertext holds the AES-GCM sealed JSON map of secret name to value.
	// It is never rendered; pages show only which secret names are set.
	SecretsCiphertext []byte
	SecretNames       string // comma-separated names of the secrets that are set
	CreatedAt         time.Time
	UpdatedAt         time.Time

	Team *Team `gorm:"foreignKey:TeamID"`
	// CanManage is set by the team service when the caller may edit the agent (a member of
	// its team or an admin); the endpoint URL is blanked for everyone else.
	CanManage bool `gorm:"-"`
}

// TeamAgents is a team's agent registry as one caller sees it.
type TeamAgents struct {
	Team   *Team
	Agents []Agent
	// CanManage is true for the team's members and administrators.
	CanManage bool
}

// Limits on agent secrets.
const (
	MaxAgentSecrets     = 20   // secrets per agent
	MaxAgentSecretBytes = 4096 // bytes per secret value
	maxAgentConfigBytes = 64 << 10
)

// HasSecrets reports whether any secret is stored for the agent.
func (a *Agent) HasSecrets() bool { return a.SecretNames != "" }

// SecretOpenAIKey is the secret the built-in openai agent sends as its API key.
const SecretOpenAIKey = "OPENAI_API_KEY"

// ExpectedAgentSecrets names the secrets an agent kind uses, so pages can show
// which of them are not set yet.
func ExpectedAgentSecrets(kind string) []string {
	if kind == AgentOpenAI {
		return []string{SecretOpenAIKey}
	}
	return nil
}

// SecretStatus maps every stored secret name to "set" and every secret the kind
// expects but lacks to "not set": the only thing pages and the API ever show
// about secrets.
func (a *Agent) SecretStatus() map[string]string {
	out := map[string]string{}
	for _, n := range ExpectedAgentSecrets(a.Kind) {
		out[n] = "not set"
	}
	for _, n := range a.SecretNameList() {
		out[n] = "set"
	}
	return out
}

// SecretStatusNames lists the names of SecretStatus in order.
func (a *Agent) SecretStatusNames() []string {
	st := a.SecretStatus()
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ValidSecretName reports whether name is an upper-case environment-style name
// such as OPENAI_API_KEY: a letter, then letters, digits or underscores, at most 64.
func ValidSecretName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// MergeAgentSecrets applies an edit to the stored secrets: names in clear are
// removed, then every non-empty value in set replaces or adds its secret; an
// empty value keeps the stored one. The result is checked (names, sizes, count)
// and EINVALID errors name the field "secrets".
func MergeAgentSecrets(stored, set map[string]string, clear []string) (map[string]string, error) {
	out := make(map[string]string, len(stored)+len(set))
	for k, v := range stored {
		out[k] = v
	}
	for _, n := range clear {
		if !ValidSecretName(n) {
			return nil, FieldError("secrets", "cannot clear %q: it is not a secret name", n)
		}
		delete(out, n)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := set[n]
		if n == "" {
			return nil, FieldError("secrets", "every secret value needs a name")
		}
		if !ValidSecretName(n) {
			return nil, FieldError("secrets", "secret name %q must be upper-case letters, digits and underscores, starting with a letter, at most 64 characters (for example OPENAI_API_KEY)", n)
		}
		if len(v) > MaxAgentSecretBytes {
			return nil, FieldError("secrets", "secret %s is %d bytes; at most %d are allowed", n, len(v), MaxAgentSecretBytes)
		}
		if v == "" {
			if _, kept := out[n]; !kept {
				return nil, FieldError("secrets", "secret %s has no value", n)
			}
			continue
		}
		out[n] = v
	}
	if len(out) > MaxAgentSecrets {
		return nil, FieldError("secrets", "an agent may have at most %d secrets, this edit would leave %d", MaxAgentSecrets, len(out))
	}
	return out, nil
}

// SortedSecretNames returns the names of secrets in order, comma-joined, as
// stored in SecretNames.
func SortedSecretNames(secrets map[string]string) string {
	names := make([]string, 0, len(secrets))
	for n := range secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// AgentPatch is a partial edit of an agent: nil fields are left unchanged. A slug
// may be given but must equal the current one, because it binds the sealed secrets.
type AgentPatch struct {
	Slug        *string
	Name        *string
	Description *string
	Model       *string
	Framework   *string
	OpenSource  *bool
	PaperURL    *string
	CodeURL     *string
	Kind        *string
	EndpointURL *string
	Config      *string
}

// Apply copies the patch's set fields onto a.
func (p *AgentPatch) Apply(a *Agent) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&a.Slug, p.Slug)
	set(&a.Name, p.Name)
	set(&a.Description, p.Description)
	set(&a.Model, p.Model)
	set(&a.Framework, p.Framework)
	set(&a.PaperURL, p.PaperURL)
	set(&a.CodeURL, p.CodeURL)
	set(&a.Kind, p.Kind)
	set(&a.EndpointURL, p.EndpointURL)
	set(&a.Config, p.Config)
	if p.OpenSource != nil {
		a.OpenSource = *p.OpenSource
	}
}

// SecretNameList returns the names of the stored secrets.
func (a *Agent) SecretNameList() []string {
	if a.SecretNames == "" {
		return nil
	}
	return strings.Split(a.SecretNames, ",")
}

// Validate checks the agent's fields, returning the first problem as an EINVALID
// error naming the field. Endpoint address safety (SSRF) is checked separately
// because it needs DNS.
func (a *Agent) Validate() error {
	for _, f := range []*string{&a.Name, &a.Slug, &a.Model, &a.Framework, &a.PaperURL, &a.CodeURL, &a.Kind, &a.EndpointURL, &a.Config} {
		*f = strings.TrimSpace(*f)
	}
	a.Slug = strings.ToLower(a.Slug)
	if a.Name == "" {
		return FieldError("name", "name is required")
	}
	if len(a.Name) > 100 {
		return FieldError("name", "name must be at most 100 characters")
	}
	if a.Slug == "" {
		a.Slug = Slugify(a.Name)
	}
	if !ValidSlug(a.Slug) {
		return FieldError("slug", "%q is not a valid slug: use lower-case letters, digits and hyphens", a.Slug)
	}
	if a.Slug == "new" {
		return FieldError("slug", `"new" is reserved for the registration form's address; choose another slug`)
	}
	if len(a.Description) > 5000 {
		return FieldError("description", "description must be at most 5000 characters")
	}
	if len(a.Model) > 200 {
		return FieldError("model", "model must be at most 200 characters")
	}
	if len(a.Framework) > 200 {
		return FieldError("framework", "framework must be at most 200 characters")
	}
	for _, l := range []struct{ field, link string }{{"paper_url", a.PaperURL}, {"code_url", a.CodeURL}} {
		field, link := l.field, l.link
		if link == "" {
			continue
		}
		if len(link) > 2000 {
			return FieldError(field, "the link must be at most 2000 characters")
		}
		if _, err := ParseHTTPURL(link, "link"); err != nil {
			return FieldError(field, "%s", ErrorMessage(err))
		}
	}
	switch a.Kind {
	case AgentHTTP:
		if a.EndpointURL == "" && !ConfigPulls(a.Config) {
			return FieldError("endpoint_url", "an http agent needs an endpoint URL, or {\"pull\": true} in its configuration to fetch its observations itself")
		}
	case AgentMCP, AgentOpenAI, AgentReplay, AgentUpload:
	default:
		return FieldError("kind", "kind must be one of %s", strings.Join(AgentKinds(), ", "))
	}
	if len(a.EndpointURL) > 2000 {
		return FieldError("endpoint_url", "the endpoint URL must be at most 2000 characters")
	}
	if a.EndpointURL != "" {
		if _, err := ParseHTTPURL(a.EndpointURL, "endpoint URL"); err != nil {
			return FieldError("endpoint_url", "%s", ErrorMessage(err))
		}
	}
	if a.Config != "" {
		if len(a.Config) > maxAgentConfigBytes {
			return FieldError("config", "the configuration must be at most %d bytes", maxAgentConfigBytes)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(a.Config), &obj); err != nil || obj == nil {
			return FieldError("config", "the configuration must be a JSON object, such as {\"actions\": []}")
		}
	}
	return nil
}
