package models

import "time"

// RunState is a run's live state as the JSON API answers it
// (GET /api/v1/runs/{id}) and its clients read it.
type RunState struct {
	ID                  int64          `json:"id"`
	Status              string         `json:"status"`
	Finished            bool           `json:"finished"`
	Origin              string         `json:"origin"`
	Team                string         `json:"team"`
	TeamName            string         `json:"team_name"`
	Agent               string         `json:"agent"`
	AgentName           string         `json:"agent_name"`
	Benchmark           string         `json:"benchmark"`
	Subset              string         `json:"subset"`
	MaxSteps            int            `json:"max_steps"`
	MaxEpisodeSeconds   int            `json:"max_episode_seconds"`
	MaxAgentCallSeconds int            `json:"max_agent_call_seconds"`
	MaxCost             *float64       `json:"max_cost"`
	Parallelism         int            `json:"parallelism"`
	Notes               string         `json:"notes"`
	Published           bool           `json:"published"`
	TasksTotal          int            `json:"tasks_total"`
	Pending             int            `json:"pending"`
	Running             int            `json:"running"`
	Done                int            `json:"done"`
	Percent             int            `json:"percent"`
	Successes           int            `json:"successes"`
	Failures            int            `json:"failures"`
	Errors              int            `json:"errors"`
	ErrorsByClass       map[string]int `json:"errors_by_class"`
	// ResultsWithheld: successes, failures and errors read 0 because the
	// caller annotates some of the run's attempts in an open blind study.
	ResultsWithheld bool       `json:"results_withheld,omitempty"`
	ETASeconds      *int64     `json:"eta_seconds"`
	Steps           int        `json:"steps"`
	TokensIn        int64      `json:"tokens_in"`
	TokensOut       int64      `json:"tokens_out"`
	Cost            float64    `json:"cost"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	URL             string     `json:"url"`
	AttemptsURL     string     `json:"attempts_url"`
}

// Successful reports whether a finished run completed (it may still hold
// failed attempts: those are the agent's results, not the run's failure).
func (r *RunState) Successful() bool { return r.Status == RunCompleted }
