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

// HiddenRates are pass rates from 0 to 1; nil where nothing was measured.
type HiddenRates struct {
	Overall *float64 `json:"overall"`
	Request *float64 `json:"request"`
	Browser *float64 `json:"browser"`
	System  *float64 `json:"system"`
}

// HiddenPassRate is a hidden-tests run's overall pass rate: the tests
// passed of the tests that ran, every task's together, with its 95%
// interval; tests not run on the platform are left out.
type HiddenPassRate struct {
	Rate   *float64   `json:"rate"`
	CI95   [2]float64 `json:"ci95"`
	Passed int        `json:"passed"`
	Ran    int        `json:"ran"`
	NotRun int        `json:"not_run"`
	Total  int        `json:"total"`
}

// HiddenTask is one task of a hidden-tests run with the tally of its tests
// (nil until they have run).
type HiddenTask struct {
	AttemptID int64                 `json:"attempt_id"`
	TaskID    string                `json:"task_id"`
	Site      string                `json:"site"`
	Status    string                `json:"status"`
	Outcome   string                `json:"outcome"`
	Summary   *models.HiddenSummary `json:"summary"`
	Rates     HiddenRates           `json:"rates"`
}

// HiddenResults is a hidden-tests run's results (GET
// /api/v1/runs/{id}/hidden-tests).
type HiddenResults struct {
	RunID         int64          `json:"run_id"`
	PassRate      HiddenPassRate `json:"pass_rate"`
	PassThreshold float64        `json:"pass_threshold"`
	Mean          HiddenRates    `json:"mean"`
	Tasks         []HiddenTask   `json:"tasks"`
}

// HiddenResults returns a hidden-tests run's pass rates. ENOTFOUND when the
// run is not visible or its benchmark is not a hidden-tests one.
func (c *Client) HiddenResults(ctx context.Context, runID int64) (*HiddenResults, error) {
	var out HiddenResults
	if err := c.Get(ctx, runPath(runID)+"/hidden-tests", nil, &out); err != nil {
		return nil, fmt.Errorf("hidden-test results of run %d: %w", runID, err)
	}
	return &out, nil
}
