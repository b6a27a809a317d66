// Package agent holds the clients Proctor asks for the next action at every step
// of an episode: the http client of protocol v1 (docs/agent-protocol.md), the
// built-in openai agent over any OpenAI-compatible chat-completions endpoint, and
// the replay agent that plays a scripted action list.
//
// An Agent may keep state between steps (the openai agent's history, the replay
// agent's position), so create one with New for every episode.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"proctor/models"
)

// Agent answers each step of an episode with one action.
type Agent interface {
	// Step asks for the next action. Failures the agent caused are *Error,
	// including ctx's deadline passing (KindTimeout, still matching
	// context.DeadlineExceeded); ctx being canceled or a bug is a plain error.
	Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error)
	// WantsScreenshot reports whether observations should carry a screenshot.
	WantsScreenshot() bool
}

// Kinds of agent failure, stored on Error.Kind.
const (
	KindTimeout       = "timeout"        // no complete answer within the call timeout
	KindConnection    = "connection"     // the endpoint could not be reached (or the SSRF guard refused it)
	KindHTTPStatus    = "http_status"    // the endpoint answered with a non-2xx status
	KindMalformed     = "malformed"      // the answer is not the expected JSON
	KindInvalidAction = "invalid_action" // the JSON is well formed but the action breaks a protocol rule
	KindTooLarge      = "too_large"      // the answer exceeds MaxResponseBytes
)

// Error is a failure the agent is responsible for; episodes classify it as
// error class "agent". Message is safe to show on an attempt (it never holds the
// endpoint address or a secret); Err keeps the internal cause for logs.
type Error struct {
	Kind    string
	Message string
	Err     error
	// Usage is what the failed call consumed anyway (the openai agent's tokens
	// and cost for a reply it could not use), so cost budgets still count it.
	Usage models.Usage
}

// Error returns the kind and the client-safe message. The internal cause is left
// out on purpose because it may name the endpoint; log Err separately.
func (e *Error) Error() string { return "agent " + e.Kind + ": " + e.Message }

// Unwrap exposes the internal cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// agentErr builds an Error with a formatted message.
func agentErr(kind string, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
}

// Defaults applied by New.
const (
	DefaultMaxResponseBytes int64 = 1 << 20
	DefaultCallTimeout            = 60 * time.Second
)

// SecretAgentToken is the secret an http agent sends as `Authorization: Bearer …`.
const SecretAgentToken = "AGENT_TOKEN"

// Config is what New needs to build an agent for one episode.
type Config struct {
	Kind        string // models.AgentHTTP, AgentOpenAI or AgentReplay
	EndpointURL string // http: the step endpoint; openai: the API base URL (default https://api.openai.com/v1)
	Model       string // openai: the model, unless Settings names one
	Secrets     map[string]string
	// Settings is the agent's public JSON configuration (models.Agent.Config);
	// the keys each kind reads are listed in docs/agent-protocol.md.
	Settings json.RawMessage
	// ReferenceActions is the task's reference action script (a JSON list of
	// models.Action) with placeholders already resolved; the replay agent plays it.
	ReferenceActions json.RawMessage
	// HTTPClient makes the http and openai agents' calls. In production it is the
	// SSRF-guarded client from netguard; it is required for those kinds so that
	// no caller bypasses the guard by forgetting it.
	HTTPClient *http.Client
	// CallTimeout bounds one Step call, retries included (default 60s).
	CallTimeout time.Duration
	// MaxResponseBytes caps the body read from an endpoint (default 1 MiB).
	MaxResponseBytes int64
}

// New builds the agent cfg.Kind names. It returns an EINVALID *models.Error
// naming the field when the configuration cannot work (unknown kind, an upload
// agent, malformed settings, a missing endpoint, model or HTTP client).
func New(cfg Config) (Agent, error) {
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	switch cfg.Kind {
	case models.AgentHTTP:
		return newHTTP(cfg)
	case models.AgentOpenAI:
		return newOpenAI(cfg)
	case models.AgentReplay:
		return newReplay(cfg)
	case models.AgentUpload:
		return nil, models.FieldError("kind", "upload-only agents cannot be executed")
	default:
		return nil, models.FieldError("kind", "unknown agent kind %q", cfg.Kind)
	}
}

// CheckSettings reports whether settings suit an agent of the given kind, so the
// registry can refuse a configuration before a run fails on it. Kinds without
// settings of their own accept anything.
func CheckSettings(kind string, settings json.RawMessage) error {
	var err error
	switch kind {
	case models.AgentHTTP:
		_, err = parseHTTPSettings(settings)
	case models.AgentOpenAI:
		_, err = parseOpenAISettings(settings)
	case models.AgentReplay:
		_, err = parseReplaySettings(settings)
	}
	return err
}

// decodeSettings decodes the agent's JSON object configuration into dst. With
// strict set, keys dst does not declare are refused so typos surface early.
// Empty and null settings leave dst as it is.
func decodeSettings(settings json.RawMessage, dst any, strict bool) error {
	trimmed := bytes.TrimSpace(settings)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	if trimmed[0] != '{' {
		return models.FieldError("config", "the configuration must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return models.FieldError("config", "%s", jsonProblem(err))
	}
	return nil
}

// jsonProblem describes a JSON decoding error in one short client-safe phrase.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("expected %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	}
	return err.Error()
}

// jsonKind names a Go kind the way a JSON author thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int64", "int32", "float64", "float32":
		return "a number"
	}
	return kind
}
