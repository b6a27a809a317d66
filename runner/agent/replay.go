package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"proctor/models"
)

// ReplayEndReason is the stop reason once a replay script is exhausted.
const ReplayEndReason = "script ended"

// replaySettings are the keys a replay agent's configuration may set.
type replaySettings struct {
	// Actions, when present, replaces the task's reference script.
	Actions json.RawMessage `json:"actions"`
}

// parseReplaySettings reads a replay agent's settings and checks its script.
func parseReplaySettings(settings json.RawMessage) (replaySettings, error) {
	var s replaySettings
	if err := decodeSettings(settings, &s, true); err != nil {
		return s, err
	}
	if len(s.Actions) > 0 {
		if _, err := parseScript(s.Actions, "config.actions"); err != nil {
			return s, err
		}
	}
	return s, nil
}

// parseScript decodes a JSON list of actions strictly and validates each one.
func parseScript(raw json.RawMessage, field string) ([]models.Action, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	if trimmed[0] != '[' {
		return nil, models.FieldError(field, "the script must be a JSON list of actions")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(trimmed, &items); err != nil {
		return nil, models.FieldError(field, "%s", strings.TrimPrefix(jsonProblem(err), "json: "))
	}
	actions := make([]models.Action, len(items))
	for i, item := range items {
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&actions[i]); err != nil {
			return nil, models.FieldError(field, "action %d: %s", i+1, strings.TrimPrefix(jsonProblem(err), "json: "))
		}
		if err := actions[i].Validate(); err != nil {
			return nil, models.FieldError(field, "action %d: %v", i+1, err)
		}
	}
	return actions, nil
}

// replayAgent plays a scripted action list, one action per step.
type replayAgent struct {
	actions []models.Action
	next    int
	attempt int64
}

// newReplay builds a replay agent over the settings' script or, failing that,
// the task's reference actions.
func newReplay(cfg Config) (*replayAgent, error) {
	s, err := parseReplaySettings(cfg.Settings)
	if err != nil {
		return nil, err
	}
	raw, field := cfg.ReferenceActions, "reference_actions"
	if len(bytes.TrimSpace(s.Actions)) > 0 {
		raw, field = s.Actions, "config.actions"
	}
	actions, err := parseScript(raw, field)
	if err != nil {
		return nil, err
	}
	return &replayAgent{actions: actions}, nil
}

// WantsScreenshot is false: the script ignores what it sees.
func (a *replayAgent) WantsScreenshot() bool { return false }

// Step returns the script's next action, then stop once it is exhausted. A new
// attempt id starts the script over.
func (a *replayAgent) Step(_ context.Context, req *models.StepRequest) (*models.StepResponse, error) {
	if req.AttemptID != a.attempt {
		a.attempt, a.next = req.AttemptID, 0
	}
	if a.next >= len(a.actions) {
		return &models.StepResponse{Action: models.Action{Type: models.ActStop, Reason: ReplayEndReason}}, nil
	}
	action := a.actions[a.next]
	a.next++
	return &models.StepResponse{Action: action, Thought: fmt.Sprintf("replay: action %d of %d", a.next, len(a.actions))}, nil
}
