package api

import (
	"encoding/json"
	"time"
)

// Agent is an agent in API answers. Secrets appear only as name → "set" /
// "not set"; the endpoint URL only for the team's members and admins.
type Agent struct {
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

// AgentInput is the body of POST (all fields) and PATCH (only the fields to
// change) of an agent. Secrets with an empty value keep the stored one on
// PATCH; config may be a JSON object, or null to remove it.
type AgentInput struct {
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
