package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/api"
	"proctor/internal/hiddenfixture"
	"proctor/models"
)

// TestWriteHiddenSummary is the pass-rate summary the CLI prints under a
// hidden-tests run: the overall pass rate over the tests that ran with its
// interval and the tests not run here, the threshold, then each task.
func TestWriteHiddenSummary(t *testing.T) {
	t.Parallel()
	rate := 31.0 / 42
	summary := &models.HiddenSummary{
		Overall: models.HiddenTally{Total: 43, Passed: 31, Failed: 11, NotRun: 1},
		Request: models.HiddenTally{Total: 13, Passed: 12, Failed: 1},
		Browser: models.HiddenTally{Total: 22, Passed: 12, Failed: 10},
		System:  models.HiddenTally{Total: 8, Passed: 7, NotRun: 1},
	}
	var out bytes.Buffer
	writeHiddenSummary(&out, &api.HiddenRunResults{
		PassRate:      api.HiddenPassRate{Rate: &rate, CI95: [2]float64{0.5893, 0.8470}, Passed: 31, Ran: 42, NotRun: 1, Total: 43},
		PassThreshold: 1,
		Tasks:         []api.HiddenTask{{TaskID: "shop-rebuild", Outcome: models.OutcomeFailure, Summary: summary}, {TaskID: "forum-rebuild", Status: models.AttemptPending}},
	})
	require.Equal(t, `pass rate 73.8% (31 of 42 tests run; 95% CI 58.9–84.7%); 1 test not run on this platform
a task succeeds when every test that ran passed
TASK           OUTCOME  PASS RATE      REQUEST        BROWSER        SYSTEM        NOT RUN
shop-rebuild   failure  73.8% (31/42)  92.3% (12/13)  54.5% (12/22)  100.0% (7/7)  1
forum-rebuild  pending  —              —              —              —             —
`, out.String())

	out.Reset()
	writeHiddenSummary(&out, &api.HiddenRunResults{PassThreshold: 0.75})
	require.Equal(t, "pass rate: no test results yet\na task succeeds when at least 75% of the tests that ran passed\n", out.String())
}

// TestRemote_HiddenRunSummary: `proctor runs show` and `proctor runs wait`
// print a candidate run's pass rates, and `proctor runs list` names its
// origin.
func TestRemote_HiddenRunSummary(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, nil)
	g := b.app.DB.Gorm()
	var team models.Team
	require.NoError(t, g.Where("slug = ?", "lab").Take(&team).Error)
	var agent models.Agent
	require.NoError(t, g.Where("team_id = ? AND slug = ?", team.ID, "uploader").Take(&agent).Error)
	r, err := hiddenfixture.WriteRebuilds(context.Background(), b.app.DB, hiddenfixture.RebuildsOptions{
		TeamID: team.ID, CopyAgentID: agent.ID, BrokenAgentID: agent.ID,
	})
	require.NoError(t, err)

	code, stdout, stderr := b.cli(t, "runs", "show", fmt.Sprint(r.BrokenRunID))
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, fmt.Sprintf(`^Run %d\s+completed \(candidates\)\n`, r.BrokenRunID), stdout)
	require.Contains(t, stdout, "pass rate 73.8% (31 of 42 tests run; 95% CI 58.9–84.7%); 1 test not run on this platform\n")
	require.Contains(t, stdout, "a task succeeds when every test that ran passed\n")
	require.Regexp(t, `shop-rebuild\s+failure\s+73\.8% \(31/42\)\s+\S+ \(\d+/\d+\)\s+\S+ \(\d+/\d+\)\s+\S+ \(\d+/\d+\)\s+1\n`, stdout)

	code, stdout, stderr = b.cli(t, "runs", "wait", fmt.Sprint(r.CopyRunID))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, fmt.Sprintf("run %d completed: 1 of 1 done, 1 successes, 0 failures, 0 errors\n", r.CopyRunID))
	require.Contains(t, stdout, "pass rate 100.0% (42 of 42 tests run; 95% CI 91.6–100.0%); 1 test not run on this platform\n")
	require.Regexp(t, `shop-rebuild\s+success\s+100\.0% \(42/42\)`, stdout)
	require.Contains(t, stdout, b.server+fmt.Sprintf("/runs/%d\n", r.CopyRunID))

	code, stdout, stderr = b.cli(t, "runs", "list", "--team", "lab")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+completed\s+candidates\s+lab\s+uploader`, r.CopyRunID), stdout)
}
