package apiclient

import (
	"context"
	"fmt"

	"proctor/api"
)

// SubmitCandidates creates a hidden-tests run of candidate websites (POST
// /api/v1/candidate-runs) and returns it, its hidden tests queued. EINVALID
// naming the field (e.g. candidates[2].base_url), ENOTFOUND, EFORBIDDEN for
// non-members, ERATELIMIT over the team's daily run quota.
func (c *Client) SubmitCandidates(ctx context.Context, req api.CandidateRunRequest) (*api.Run, error) {
	var out api.Run
	if err := c.postJSON(ctx, "/candidate-runs", req, &out); err != nil {
		return nil, fmt.Errorf("submit candidates: %w", err)
	}
	return &out, nil
}

// HiddenResults returns a hidden-tests run's pass rates. ENOTFOUND when the
// run is not visible or its benchmark is not a hidden-tests one.
func (c *Client) HiddenResults(ctx context.Context, runID int64) (*api.HiddenRunResults, error) {
	var out api.HiddenRunResults
	if err := c.Get(ctx, runPath(runID)+"/hidden-tests", nil, &out); err != nil {
		return nil, fmt.Errorf("hidden-test results of run %d: %w", runID, err)
	}
	return &out, nil
}
