package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/hiddenbench"
	"proctor/internal/hiddenfixture"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage"
)

// offlineBuildTest is the sample's one test Proctor cannot carry out: it
// does not host candidates, so it cannot build one without network.
const offlineBuildTest = hiddenfixture.OfflineBuildTest

// TestHiddenSample_EndToEnd is the sample hidden-tests benchmark as a
// newcomer meets it: `proctor seed` records and imports it, the server
// serves the two sample candidates beside the sandbox, a team submits both
// with `proctor candidates submit --wait`, the workers test them in
// Chromium, and the results read back through storage, the leaderboard
// entries and the test browser. The copy passes every test that runs here
// (the offline build is not run) and so succeeds; the broken rebuild fails
// exactly the tests its four defects touch.
func TestHiddenSample_EndToEnd(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	b := setupRemote(t, map[string]string{
		"PROCTOR_EPISODES":          "2",
		"PROCTOR_AGENT_ALLOW_HOSTS": "127.0.0.1", // the sample candidates are served by this very server
		"PLAYWRIGHT_DRIVER_PATH":    os.Getenv("PLAYWRIGHT_DRIVER_PATH"),
		"PROCTOR_CHROMIUM_PATH":     os.Getenv("PROCTOR_CHROMIUM_PATH"),
	})
	system := models.WithActor(context.Background(), models.SystemActor())
	bench, err := b.app.DB.Benchmark(system, hiddenbench.Slug, models.BenchmarkScopeFor(models.SystemActor()))
	require.NoError(t, err, "seed imports the sample hidden-tests benchmark")
	require.Equal(t, models.EvaluatorHiddenTests, bench.Evaluator)

	submit := func(name string) int64 {
		u := sandbox.RebuildCandidate(b.server, name)
		req := models.CandidateRunRequest{TeamSlug: "lab", AgentSlug: "uploader", BenchmarkSlug: hiddenbench.Slug,
			Notes: "the sample's " + name, Candidates: []models.CandidateSpec{{
				TaskID: hiddenbench.TaskID, BaseURL: u.BaseURL, RestartURL: u.RestartURL, HealthURL: u.HealthURL,
				CostUSD: 1.25, TokensIn: 40000, TokensOut: 6000, Turns: 30,
			}}}
		body, err := json.Marshal(req)
		require.NoError(t, err)
		code, stdout, stderr := b.cli(t, "candidates", "submit", "--file", writeFile(t, name+".json", string(body)),
			"--wait", "--timeout", "15m", "--interval", "1s", "--json")
		require.Equal(t, exitOK, code, "submitting the %s: %s", name, stderr)
		var run struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &run), stdout)
		require.Equal(t, models.RunCompleted, run.Status)
		return run.ID
	}
	// Both candidates are tested at once, as two teams' would be.
	names := []string{sandbox.RebuildCopy, sandbox.RebuildBroken}
	ids := make([]int64, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { ids[i] = submit(name) })
	}
	wg.Wait()
	runs := map[string]int64{}
	for i, name := range names {
		require.NotZero(t, ids[i], "the %s's submission finished", name)
		runs[name] = ids[i]
	}

	results := func(runID int64) *models.AttemptHiddenTests {
		res, err := servicetest.Runs(b.app.DB, 0).RunHiddenResults(b.member, runID)
		require.NoError(t, err)
		require.Len(t, res.Tasks, 1)
		require.True(t, res.CanBrowse, "the sample reveals its tests to the team")
		tests, err := servicetest.Runs(b.app.DB, 0).AttemptHiddenTests(b.member, res.Tasks[0].AttemptID, models.HiddenTestFilter{})
		require.NoError(t, err)
		require.Len(t, tests.Tests, 43)
		return tests
	}
	byResult := func(tests *models.AttemptHiddenTests) map[string][]string {
		out := map[string][]string{}
		for _, v := range tests.Tests {
			if v.Result != models.HiddenPassed {
				t.Logf("%s %s: %s", v.TestID, v.Result, v.Reason)
			}
			out[v.Result] = append(out[v.Result], v.TestID)
			require.Equal(t, v.Result == models.HiddenPassed, v.Reason == "", "%s: a reason exactly when it did not pass", v.TestID)
		}
		return out
	}

	copyTests := results(runs[sandbox.RebuildCopy])
	got := byResult(copyTests)
	require.Empty(t, got[models.HiddenFailed], "the copy fails nothing")
	require.Empty(t, got[models.HiddenErrored], "the copy errs nowhere")
	require.Equal(t, []string{offlineBuildTest}, got[models.HiddenNotRun], "the offline build is not run here")
	require.Len(t, got[models.HiddenPassed], 42)
	require.Equal(t, models.HiddenTally{Total: 43, Passed: 42, NotRun: 1, Flaky: copyTests.Summary.Overall.Flaky}, copyTests.Summary.Overall)
	require.Equal(t, models.OutcomeSuccess, copyTests.Outcome, "every test that ran passed: the copy succeeds")

	brokenTests := results(runs[sandbox.RebuildBroken])
	got = byResult(brokenTests)
	want := hiddenfixture.BrokenRebuildFailed()
	slices.Sort(got[models.HiddenFailed])
	require.Equal(t, want, got[models.HiddenFailed], "the broken rebuild fails exactly the tests its defects touch")
	require.Equal(t, []string{offlineBuildTest}, got[models.HiddenNotRun])
	require.Empty(t, got[models.HiddenErrored])
	require.Len(t, got[models.HiddenPassed], 31)
	require.Equal(t, models.OutcomeFailure, brokenTests.Outcome)
	for _, id := range want {
		one, err := servicetest.Runs(b.app.DB, 0).AttemptHiddenTest(b.member, brokenTests.AttemptID, id)
		require.NoError(t, err)
		require.Len(t, one.Test.Runs, 2, "%s: a failed test ran once more and both runs are kept", id)
		require.NotEqual(t, models.HiddenPassed, one.Test.Runs[0].Result, id)
	}

	// The board's columns for the two runs: the overall pass rate is the
	// one task's over the 42 tests that ran, and R / B / S its groups'; the
	// board ranks by it, in the entry's success rate.
	for name, wantOverall := range map[string]float64{sandbox.RebuildCopy: 42.0 / 42, sandbox.RebuildBroken: 31.0 / 42} {
		entry := mustEntry(t, b.app.DB, runs[name])
		require.NotNil(t, entry.HiddenOverall, name)
		require.InDelta(t, wantOverall, *entry.HiddenOverall, 1e-9, name)
		require.InDelta(t, wantOverall, entry.SuccessRate, 1e-9, name)
		require.Equal(t, 42, *entry.HiddenRan, name)
		require.NotNil(t, entry.HiddenRequest, name)
		require.NotNil(t, entry.HiddenBrowser, name)
		require.NotNil(t, entry.HiddenSystem, name)
		require.InDelta(t, 1.25, entry.CostPerTask, 1e-9, name)
		require.InDelta(t, 30, entry.MeanSteps, 1e-9, name)
	}
	require.InDelta(t, 1.0, *mustEntry(t, b.app.DB, runs[sandbox.RebuildCopy]).HiddenRequest, 1e-9)

	// The team opens the broken rebuild's failed image checkpoint: the
	// reference and candidate regions side by side beside the SSIM map.
	br := launchBrowser(t)
	page := newBrowserPage(t, br, 1280, 900)
	signIn(t, page, b.server, "ci@example.org", "correct horse battery")
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d", b.server, runs[sandbox.RebuildBroken]))
	require.NoError(t, err)
	expect := browserExpect(t)
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-task-overall")).ToContainText("73.8%"))
	shot(t, page, "hidden-sample-run")
	require.NoError(t, page.GetByTestId("hidden-failed-link").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test")).ToHaveCount(len(want)))
	require.NoError(t, page.Locator(`[data-test="b1-product-page"]`).GetByTestId("hidden-test-link").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test-title")).ToBeVisible())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test-result")).ToHaveText(models.HiddenFailed))
	failed := page.Locator(`[data-testid="hidden-checkpoint"][data-passed="false"]`).First()
	require.NoError(t, expect.Locator(failed).ToBeVisible())
	imgs := failed.Locator("img")
	n, err := imgs.Count()
	require.NoError(t, err)
	require.Equal(t, 3, n, "reference, candidate and SSIM map")
	for i := range n {
		require.NoError(t, imgs.Nth(i).ScrollIntoViewIfNeeded())
		loaded, err := imgs.Nth(i).Evaluate("img => img.complete && img.naturalWidth > 0", nil)
		require.NoError(t, err)
		require.Equal(t, true, loaded, "image %d of the checkpoint loads", i)
	}
	shot(t, page, "hidden-sample-checkpoint")
	_, err = page.Screenshot(playwright.PageScreenshotOptions{FullPage: playwright.Bool(true)})
	require.NoError(t, err)
}

// mustEntry is a run's leaderboard entry on the full set, once the metrics
// job the run's end queued has computed it.
func mustEntry(t *testing.T, db *storage.DB, runID int64) *models.LeaderboardEntry {
	t.Helper()
	var e models.LeaderboardEntry
	require.Eventually(t, func() bool {
		return db.Gorm().Where("run_id = ? AND subset_name = ? AND hidden_overall IS NOT NULL", runID, models.SubsetFull).Take(&e).Error == nil
	}, testenv.Scaled(t, time.Minute), 200*time.Millisecond, "the leaderboard entry of run %d", runID)
	return &e
}
