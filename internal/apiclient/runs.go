package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"proctor/models"
)

// RunItem is a run in a listing (GET /api/v1/runs).
type RunItem struct {
	ID            int64      `json:"id"`
	Status        string     `json:"status"`
	Origin        string     `json:"origin"`
	Team          string     `json:"team"`
	TeamName      string     `json:"team_name"`
	Agent         string     `json:"agent"`
	AgentName     string     `json:"agent_name"`
	Benchmark     string     `json:"benchmark"`
	BenchmarkName string     `json:"benchmark_name"`
	Subset        string     `json:"subset"`
	TasksDone     int        `json:"tasks_done"`
	TasksTotal    int        `json:"tasks_total"`
	Successes     int        `json:"successes"`
	Errors        int        `json:"errors"`
	Published     bool       `json:"published"`
	CreatedAt     time.Time  `json:"created_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	URL           string     `json:"url"`
	APIURL        string     `json:"api_url"`
}

// RunPage is one page of a run listing.
type RunPage struct {
	Items   []RunItem `json:"items"`
	Page    int       `json:"page"`
	PerPage int       `json:"per_page"`
	Total   int       `json:"total"`
	HasMore bool      `json:"has_more"`
}

// Run is a run's live state (GET /api/v1/runs/{id}).
type Run = models.RunState

// RunRequest is the body of POST /api/v1/runs; zero budgets take the server's defaults.
type RunRequest struct {
	Team                string   `json:"team"`
	Agent               string   `json:"agent"`
	Benchmark           string   `json:"benchmark"`
	Subset              string   `json:"subset,omitempty"`
	MaxSteps            int      `json:"max_steps,omitempty"`
	MaxEpisodeSeconds   int      `json:"max_episode_seconds,omitempty"`
	MaxAgentCallSeconds int      `json:"max_agent_call_seconds,omitempty"`
	MaxCost             *float64 `json:"max_cost,omitempty"`
	Parallelism         int      `json:"parallelism,omitempty"`
	Notes               string   `json:"notes,omitempty"`
}

// QueuedRun is the answer of POST /api/v1/runs.
type QueuedRun struct {
	ID         int64     `json:"id"`
	Team       string    `json:"team"`
	Agent      string    `json:"agent"`
	Benchmark  string    `json:"benchmark"`
	Subset     string    `json:"subset"`
	Status     string    `json:"status"`
	Origin     string    `json:"origin"`
	TasksTotal int       `json:"tasks_total"`
	CreatedAt  time.Time `json:"created_at"`
	URL        string    `json:"url"`
	APIURL     string    `json:"api_url"`
}

// Moderation is a run's publication state (POST /api/v1/runs/{id}/publish).
type Moderation struct {
	ID            int64  `json:"id"`
	Status        string `json:"status"`
	Origin        string `json:"origin"`
	Published     bool   `json:"published"`
	Verified      bool   `json:"verified"`
	OnLeaderboard bool   `json:"on_leaderboard"`
	URL           string `json:"url"`
	APIURL        string `json:"api_url"`
}

// RunFilter selects runs: the server filters by team; page counts from 1.
type RunFilter struct {
	Team    string
	Page    int
	PerPage int
}

// ListRuns returns one page of the runs the caller may see. EINVALID for bad
// page bounds.
func (c *Client) ListRuns(ctx context.Context, f RunFilter) (*RunPage, error) {
	q := url.Values{}
	if f.Team != "" {
		q.Set("team", f.Team)
	}
	if f.Page > 0 {
		q.Set("page", strconv.Itoa(f.Page))
	}
	if f.PerPage > 0 {
		q.Set("per_page", strconv.Itoa(f.PerPage))
	}
	var out RunPage
	if err := c.Get(ctx, "/runs", q, &out); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return &out, nil
}

// Run returns a run's live state. ENOTFOUND when it does not exist or is not
// visible to the caller.
func (c *Client) Run(ctx context.Context, id int64) (*Run, error) {
	var out Run
	if err := c.Get(ctx, runPath(id), nil, &out); err != nil {
		return nil, fmt.Errorf("run %d: %w", id, err)
	}
	return &out, nil
}

// QueueRun queues an executed run. EINVALID (with the field), ENOTFOUND for an
// unknown team, agent or benchmark, EFORBIDDEN for non-members, ERATELIMIT
// over the team's daily quota.
func (c *Client) QueueRun(ctx context.Context, req RunRequest) (*QueuedRun, error) {
	var out QueuedRun
	if err := c.postJSON(ctx, "/runs", req, &out); err != nil {
		return nil, fmt.Errorf("queue run: %w", err)
	}
	return &out, nil
}

// PublishRun puts a completed run on its benchmark's leaderboards. ECONFLICT
// when the run's state does not allow it.
func (c *Client) PublishRun(ctx context.Context, id int64) (*Moderation, error) {
	var out Moderation
	if err := c.postJSON(ctx, runPath(id)+"/publish", nil, &out); err != nil {
		return nil, fmt.Errorf("publish run %d: %w", id, err)
	}
	return &out, nil
}

func runPath(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }
