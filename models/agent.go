package models

import (
	"net/url"
	"strings"
	"time"
)

// Agent kinds.
const (
	AgentHTTP   = "http"   // Proctor calls the team's endpoint with protocol v1
	AgentOpenAI = "openai" // the built-in LLM agent over an OpenAI-compatible endpoint
	AgentReplay = "replay" // plays a scripted action list
	AgentUpload = "upload" // results are only uploaded, never executed here
)

// AgentKinds lists the valid agent kinds in display order.
func AgentKinds() []string { return []string{AgentHTTP, AgentOpenAI, AgentReplay, AgentUpload} }

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
}

// HasSecrets reports whether any secret is stored for the agent.
func (a *Agent) HasSecrets() bool { return len(a.SecretsCiphertext) > 0 }

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
	a.Name = strings.TrimSpace(a.Name)
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
	if len(a.Description) > 5000 {
		return FieldError("description", "description must be at most 5000 characters")
	}
	if len(a.Model) > 200 {
		return FieldError("model", "model must be at most 200 characters")
	}
	if len(a.Framework) > 200 {
		return FieldError("framework", "framework must be at most 200 characters")
	}
	for field, link := range map[string]string{"paper_url": a.PaperURL, "code_url": a.CodeURL} {
		if link == "" {
			continue
		}
		if u, err := url.Parse(link); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return FieldError(field, "%q is not an http(s) link", link)
		}
	}
	switch a.Kind {
	case AgentHTTP:
		if a.EndpointURL == "" {
			return FieldError("endpoint_url", "an http agent needs an endpoint URL")
		}
	case AgentOpenAI, AgentReplay, AgentUpload:
	default:
		return FieldError("kind", "kind must be one of %s", strings.Join(AgentKinds(), ", "))
	}
	if a.EndpointURL != "" {
		u, err := url.Parse(a.EndpointURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return FieldError("endpoint_url", "%q is not an http or https URL", a.EndpointURL)
		}
		if u.User != nil {
			return FieldError("endpoint_url", "credentials in the endpoint URL are not allowed; store them as secrets")
		}
	}
	return nil
}
