package api

import (
	"encoding/json"
	"time"

	"proctor/models"
)

// Connecting agents (docs/agent-protocol.md): an agent that Proctor does not
// call claims its run's episodes and drives each one's browser over MCP or
// in pull mode.

// EpisodeClaim is the answer to a successful claim: the task, where the
// episode is served and the token that opens it.
type EpisodeClaim struct {
	RunID     int64           `json:"run_id"`
	EpisodeID int64           `json:"episode_id"` // the attempt's id
	Try       int             `json:"try"`
	Task      models.StepTask `json:"task"`
	Budget    struct {
		MaxSteps int `json:"max_steps"`
		// MaxSeconds bounds the episode, MaxIdleSeconds the time from one
		// observation to the agent's next action.
		MaxSeconds     int      `json:"max_seconds"`
		MaxIdleSeconds int      `json:"max_idle_seconds"`
		MaxCost        *float64 `json:"max_cost,omitempty"`
	} `json:"budget"`
	// Token opens this episode only, as `Authorization: Bearer …`, until the
	// lease ends.
	Token string `json:"token"`
	// LeaseSeconds is how long the lease lasts unrenewed; renew it with
	// HeartbeatURL (or any call on the episode) well within it.
	LeaseSeconds   int       `json:"lease_seconds"`
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
	MCPURL         string    `json:"mcp_url"`
	ObservationURL string    `json:"observation_url"`
	ActionURL      string    `json:"action_url"`
	HeartbeatURL   string    `json:"heartbeat_url"`
}

// EpisodeHeartbeat is the answer to a heartbeat: the lease's new end.
type EpisodeHeartbeat struct {
	LeaseExpiresAt time.Time `json:"lease_expires_at"`
}

// ActionAccepted is pull mode's answer to an action: the step it was taken for.
type ActionAccepted struct {
	Step int `json:"step"`
}

// MCPMessage is a JSON-RPC 2.0 message of the Model Context Protocol, as the
// episode's MCP endpoint takes and answers them (for the documentation; the
// MCP SDK reads and writes them).
type MCPMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}
