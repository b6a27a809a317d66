package models

import (
	"bytes"
	"encoding/json"
	"time"
)

// Agents that connect to Proctor: instead of Proctor calling the agent at
// every step, the agent claims an episode (POST /api/v1/runs/{id}/episodes/claim)
// and then drives its browser, either through the episode's MCP server (kind
// mcp) or by fetching observations and posting actions (an http agent in pull
// mode). docs/agent-protocol.md describes both.

// ConfigPulls reports whether an http agent's configuration sets "pull": true.
func ConfigPulls(config string) bool {
	trimmed := bytes.TrimSpace([]byte(config))
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	var s struct {
		Pull bool `json:"pull"`
	}
	return json.Unmarshal(trimmed, &s) == nil && s.Pull
}

// Connects reports whether the agent claims its episodes rather than being
// called: kind mcp, or an http agent whose configuration sets "pull": true.
func (s AgentSnapshot) Connects() bool {
	return s.Kind == AgentMCP || (s.Kind == AgentHTTP && ConfigPulls(string(s.Config)))
}

// Episode lease statuses.
const (
	LeaseClaimed = "claimed" // handed to an agent; its episode has not started yet
	LeaseRunning = "running" // a worker holds the episode's browser
	LeaseEnded   = "ended"   // the episode is over; EndedReason says how
)

// EpisodeLease is one claim of one attempt by a connecting agent. The agent
// keeps it by renewing it (heartbeats and its calls) before ExpiresAt.
type EpisodeLease struct {
	ID        int64
	RunID     int64
	AttemptID int64
	// Try is the attempt's try the claim starts.
	Try int
	// TokenHash is the SHA-256 of the episode token, hex; the token itself
	// is shown once, in the claim's answer.
	TokenHash   string
	Status      string
	WorkerURL   string // where the worker holding the episode serves it ("" until it starts)
	EndedReason string
	ExpiresAt   time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Live reports whether the lease still opens its episode at now.
func (l *EpisodeLease) Live(now time.Time) bool {
	return l.Status != LeaseEnded && now.Before(l.ExpiresAt)
}

// ClaimedEpisode is what a claim hands out: the lease and what the agent is
// told about the task (never its hidden fields).
type ClaimedEpisode struct {
	Lease *EpisodeLease
	Run   Run
	Task  StepTask
}

// EpisodeTokenPrefix starts every episode token.
const EpisodeTokenPrefix = "pep_"
