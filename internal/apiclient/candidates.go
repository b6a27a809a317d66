package apiclient

import (
	"context"
	"fmt"

	"proctor/models"
)

// SubmitCandidates creates a hidden-tests run of candidate websites (POST
// /api/v1/candidate-runs) and returns it, its hidden tests queued. EINVALID
// naming the field (e.g. candidates[2].base_url), ENOTFOUND, EFORBIDDEN for
// non-members, ERATELIMIT over the team's daily run quota.
func (c *Client) SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*QueuedRun, error) {
	var out QueuedRun
	if err := c.postJSON(ctx, "/candidate-runs", req, &out); err != nil {
		return nil, fmt.Errorf("submit candidates: %w", err)
	}
	return &out, nil
}
