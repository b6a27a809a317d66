package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service"
	"proctor/storage"
)

// defectiveBenchmark is a small WebArena-Verified benchmark whose task
// "refund" has the upstream defect of the published dataset's task 319.
const defectiveBenchmark = `{"proctor_benchmark": 1, "name": "Verified bench", "evaluator": "webarena-verified"}
{"id": "refund", "intent": "How much refund should I expect?", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "eval": [{"evaluator": "AgentResponseEvaluator", "results_schema": {"type": "array", "items": {"type": "number", "format": "currency"}}, "expected": {"task_type": "retrieve", "status": "NOT_FOUND_ERROR"}}]}
`

// TestBrowser_GradingAndRescoreChanges: an administrator switches the
// sandbox to the lenient reading and is offered a re-scoring; a visitor sees
// on the board that its scores are not official and which run a re-scoring
// moved, follows the mark to the change log, and reads by how much; an
// administrator sees a task's upstream defect on its page. At 1280 and 390
// pixels, without horizontal scrolling.
func TestBrowser_GradingAndRescoreChanges(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	env := newTestEnv(t)
	runID := seedCompletedRun(t, env)
	app := env.open(t)
	ctx := context.Background()
	sys := models.WithActor(ctx, models.SystemActor())
	member := models.WithActor(ctx, models.Actor{UserID: userID(t, app.DB, "mia@example.org"), Email: "mia@example.org"})
	_, err := service.NewModeration(app.DB).PublishRun(member, runID)
	require.NoError(t, err)
	// A re-scoring by the official reading fails two answers the first
	// grading passed: 4 of 6 become 2 of 6.
	var ids []int64
	require.NoError(t, app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", runID).Order("id").Pluck("id", &ids).Error)
	for _, id := range ids[2:4] {
		zero := 0.0
		_, err := app.DB.RecordEvaluations(sys, id, models.EvaluationBatch{RescoreID: "upgrade",
			Primary: &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@2", Verdict: models.OutcomeFailure, Score: &zero}}, nil)
		require.NoError(t, err)
	}
	require.NoError(t, service.NewMetrics(app.DB).RefreshRunMetrics(sys, runID))
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(defectiveBenchmark), nil)
	require.NoError(t, err)
	_, err = app.DB.ImportBenchmark(sys, "verified-bench", ds, "verified-bench.jsonl", 0)
	require.NoError(t, err)
	base := env.serve(t)

	b := launchBrowser(t)
	expect := browserExpect(t)
	for _, width := range []int{1280, 390} {
		suffix := "-" + strconv.Itoa(width)
		page := newBrowserPage(t, b, width, 900)
		fits := func(what string) {
			t.Helper()
			overflow, err := page.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			require.NoError(t, err)
			require.LessOrEqual(t, overflow, 0, "%s scrolls sideways at %d px", what, width)
		}

		// The visitor's board: the re-scored row says what it was; its mark
		// leads to the change log, which says by how much.
		_, err := page.Goto(base + "/benchmarks/sandbox/leaderboard/hard")
		require.NoError(t, err)
		mark := page.GetByTestId("rescored")
		require.NoError(t, expect.Locator(mark).ToHaveText("re-scored: was 66.7%"))
		shot(t, page, "grading-board-rescored"+suffix)
		require.NoError(t, mark.Click())
		line := page.GetByTestId("change-rescore")
		require.NoError(t, expect.Locator(line).ToHaveText("with webarena-verified@2: 66.7% → 33.3% of 6 tasks (−33.3 points), 2 attempts changed outcome"))
		shot(t, page, "grading-change-log"+suffix)
		fits("the change log")

		// The administrator chooses the lenient reading.
		if width == 1280 {
			signIn(t, page, base, "ada@example.org", "an admin passphrase")
			_, err = page.Goto(base + "/admin")
			require.NoError(t, err)
			require.NoError(t, page.GetByTestId("grading-sandbox").Click())
			require.NoError(t, page.GetByLabel("Lenient: also accepts sloppy answers; not the official score").Check())
			require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Save"}).Click())
			require.NoError(t, expect.Locator(page.GetByTestId("grading-saved")).ToContainText("until the runs are re-scored"))
			require.NoError(t, expect.Locator(page.GetByTestId("grading-rescore")).ToBeVisible())
			require.NoError(t, expect.Locator(page.GetByTestId("grading-lenient")).ToBeChecked())
			shot(t, page, "grading-saved"+suffix)
		} else {
			signIn(t, page, base, "ada@example.org", "an admin passphrase")
			_, err = page.Goto(base + "/admin/benchmarks/sandbox/grading")
			require.NoError(t, err)
			shot(t, page, "grading-page"+suffix)
			fits("the grading page")
		}

		// Boards and the benchmark page now say the scores are not official.
		_, err = page.Goto(base + "/benchmarks/sandbox/leaderboard")
		require.NoError(t, err)
		require.NoError(t, expect.Locator(page.GetByTestId("lenient-board")).ToContainText("not official WebArena-Verified scores"))
		shot(t, page, "grading-lenient-board"+suffix)
		fits("the board")

		// The administrator reads a task's upstream defect.
		_, err = page.Goto(base + "/benchmarks/verified-bench/tasks/refund")
		require.NoError(t, err)
		require.NoError(t, expect.Locator(page.GetByTestId("task-defects")).ToContainText("no retrieved_data"))
		shot(t, page, "grading-task-defect"+suffix)
		fits("the task page")
		page.Close()
	}
}

// userID is the id of the user with that email.
func userID(t *testing.T, db *storage.DB, email string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, db.Gorm().Table("users").Where("email = ?", email).Pluck("id", &id).Error)
	require.NotZero(t, id, email)
	return id
}
