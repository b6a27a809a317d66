package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"proctor/models"
)

// Headers of protocol v1 requests.
const (
	HeaderProtocol = "X-Proctor-Protocol"
	UserAgent      = "Proctor/1 (agent protocol v1)"
)

// httpSettings are the keys an http agent's configuration may set; other keys
// are the team's own and are ignored.
type httpSettings struct {
	Screenshot *bool `json:"screenshot"`
	// Pull makes the agent fetch its observations and post its actions
	// (docs/agent-protocol.md, pull mode) instead of being called.
	Pull bool `json:"pull"`
}

// PullScreenshots reports whether a pull-mode http agent's observations
// carry the screenshot: the "screenshot" setting, true unless set to false.
func PullScreenshots(settings json.RawMessage) bool {
	s, err := parseHTTPSettings(settings)
	return err != nil || s.Screenshot == nil || *s.Screenshot
}

// parseHTTPSettings reads an http agent's settings.
func parseHTTPSettings(settings json.RawMessage) (httpSettings, error) {
	var s httpSettings
	err := decodeSettings(settings, &s, false)
	return s, err
}

// httpAgent calls a team's endpoint with protocol v1.
type httpAgent struct {
	url        string
	token      string
	screenshot bool
	poster     *poster
}

// newHTTP builds an http agent from cfg.
func newHTTP(cfg Config) (*httpAgent, error) {
	s, err := parseHTTPSettings(cfg.Settings)
	if err != nil {
		return nil, err
	}
	if cfg.EndpointURL == "" {
		return nil, models.FieldError("endpoint_url", "an http agent needs an endpoint URL")
	}
	if u, err := url.Parse(cfg.EndpointURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, models.FieldError("endpoint_url", "the endpoint URL is not an http or https URL")
	}
	if cfg.HTTPClient == nil {
		return nil, errors.New("agent: an http agent needs an HTTP client (the SSRF-guarded one from netguard)")
	}
	a := &httpAgent{
		url:        cfg.EndpointURL,
		token:      cfg.Secrets[SecretAgentToken],
		screenshot: s.Screenshot == nil || *s.Screenshot,
		poster:     newPoster(cfg, "agent endpoint"),
	}
	return a, nil
}

// WantsScreenshot is the "screenshot" setting, true unless set to false.
func (a *httpAgent) WantsScreenshot() bool { return a.screenshot }

// Step POSTs the request to the endpoint and decodes its answer strictly.
func (a *httpAgent) Step(ctx context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	out := *req
	out.Protocol = models.AgentProtocol
	if !a.screenshot {
		out.Observation.Screenshot, out.Observation.ScreenshotType = "", ""
	}
	body, err := json.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("encode step request: %w", err)
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Accept", "application/json")
	header.Set("User-Agent", UserAgent)
	header.Set(HeaderProtocol, models.AgentProtocol)
	if a.token != "" {
		header.Set("Authorization", "Bearer "+a.token)
	}
	data, err := a.poster.post(ctx, a.url, header, body)
	if err != nil {
		return nil, err
	}
	return DecodeStepResponse(data)
}

// DecodeStepResponse decodes an agent's answer strictly: exactly one JSON object
// with no unknown fields (KindMalformed otherwise), a valid action
// (KindInvalidAction) and non-negative usage.
func DecodeStepResponse(data []byte) (*models.StepResponse, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, agentErr(KindMalformed, nil, "the answer is empty; expected one JSON object such as {\"action\": {\"type\": \"stop\"}}")
	}
	if trimmed[0] != '{' {
		return nil, agentErr(KindMalformed, nil, "the answer is not a JSON object (it starts with %q)", firstRunes(string(trimmed), 20))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var resp models.StepResponse
	if err := dec.Decode(&resp); err != nil {
		return nil, agentErr(KindMalformed, err, "the answer is not a valid step response: %s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, agentErr(KindMalformed, nil, "the answer has data after its JSON object; send exactly one object")
	}
	if err := resp.Action.Validate(); err != nil {
		return nil, agentErr(KindInvalidAction, err, "%s", err.Error())
	}
	if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 || resp.Usage.Cost < 0 {
		return nil, agentErr(KindMalformed, nil, "usage values must not be negative")
	}
	return &resp, nil
}

// firstRunes returns at most n runes of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
