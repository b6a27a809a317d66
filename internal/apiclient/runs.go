package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"proctor/api"
)

// RunFilter selects runs: the server filters by team; page counts from 1.
type RunFilter struct {
	Team    string
	Page    int
	PerPage int
}

// ListRuns returns one page of the runs the caller may see. EINVALID for bad
// page bounds.
func (c *Client) ListRuns(ctx context.Context, f RunFilter) (*api.Page[api.RunItem], error) {
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
	var out api.Page[api.RunItem]
	if err := c.Get(ctx, "/runs", q, &out); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return &out, nil
}

// Run returns a run's live state. ENOTFOUND when it does not exist or is not
// visible to the caller.
func (c *Client) Run(ctx context.Context, id int64) (*api.RunState, error) {
	var out api.RunState
	if err := c.Get(ctx, runPath(id), nil, &out); err != nil {
		return nil, fmt.Errorf("run %d: %w", id, err)
	}
	return &out, nil
}

// QueueRun queues an executed run. EINVALID (with the field), ENOTFOUND for an
// unknown team, agent or benchmark, EFORBIDDEN for non-members, ERATELIMIT
// over the team's daily quota.
func (c *Client) QueueRun(ctx context.Context, req api.RunInput) (*api.Run, error) {
	var out api.Run
	if err := c.postJSON(ctx, "/runs", req, &out); err != nil {
		return nil, fmt.Errorf("queue run: %w", err)
	}
	return &out, nil
}

// PublishRun puts a completed run on its benchmark's leaderboards. ECONFLICT
// when the run's state does not allow it.
func (c *Client) PublishRun(ctx context.Context, id int64) (*api.Moderation, error) {
	var out api.Moderation
	if err := c.postJSON(ctx, runPath(id)+"/publish", nil, &out); err != nil {
		return nil, fmt.Errorf("publish run %d: %w", id, err)
	}
	return &out, nil
}

func runPath(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }
