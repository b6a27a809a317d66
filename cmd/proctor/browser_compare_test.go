package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage/storagetest"
)

// compareBenchmark is a small shop-and-forum benchmark for the compare test:
// eight tasks over two sites with every kind of label.
const compareBenchmark = `{"proctor_benchmark": 1, "name": "Shop and forum", "description": "Eight tasks on two sites.", "evaluator": "rubric", "subsets": {"hard": {"description": "The hard ones", "task_ids": ["shop-3", "forum-3", "forum-4"]}}}
{"id": "shop-1", "intent": "Add the cheapest USB-C cable to the cart.", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "task_type": "action", "difficulty": "easy", "domain": "e-commerce", "attributes": ["action-based"], "rubric": [{"requirement": "One cable in the cart"}]}
{"id": "shop-2", "intent": "What is the shipping fee to Lisbon?", "start_urls": ["__SHOPPING__/checkout"], "sites": ["shopping"], "task_type": "qa", "difficulty": "easy", "domain": "e-commerce", "attributes": ["retrieval"], "rubric": [{"requirement": "States the fee"}]}
{"id": "shop-3", "intent": "Return the order placed on 3 March and say why.", "start_urls": ["__SHOPPING__/orders"], "sites": ["shopping"], "task_type": "action", "difficulty": "hard", "domain": "e-commerce", "attributes": ["action-based", "multihop"], "rubric": [{"requirement": "Return requested"}]}
{"id": "shop-4", "intent": "Which laptop under $900 has the most reviews?", "start_urls": ["__SHOPPING__/laptops"], "sites": ["shopping"], "task_type": "qa", "difficulty": "medium", "domain": "e-commerce", "attributes": ["retrieval", "structured"], "rubric": [{"requirement": "Names the laptop"}]}
{"id": "forum-1", "intent": "Upvote the newest post in the cooking forum.", "start_urls": ["__REDDIT__/f/cooking"], "sites": ["reddit"], "task_type": "action", "difficulty": "easy", "domain": "social", "attributes": ["action-based"], "rubric": [{"requirement": "Post upvoted"}]}
{"id": "forum-2", "intent": "Who moderates the gardening forum?", "start_urls": ["__REDDIT__/f/gardening"], "sites": ["reddit"], "task_type": "qa", "difficulty": "medium", "domain": "social", "attributes": ["retrieval"], "rubric": [{"requirement": "Names the moderators"}]}
{"id": "forum-3", "intent": "Reply to the top question in the bikes forum with the store's opening hours.", "start_urls": ["__REDDIT__/f/bikes"], "sites": ["reddit"], "task_type": "action", "difficulty": "hard", "domain": "social", "attributes": ["action-based", "multihop"], "rubric": [{"requirement": "Reply posted"}]}
{"id": "forum-4", "intent": "How many posts in the books forum mention a sequel?", "start_urls": ["__REDDIT__/f/books"], "sites": ["reddit"], "task_type": "qa", "difficulty": "hard", "domain": "social", "attributes": ["retrieval", "multihop"], "rubric": [{"requirement": "Counts them"}]}
`

// comparedRun is a seeded run: its id and its attempts by task id.
type comparedRun struct {
	id       int64
	attempts map[string]int64
}

// seedComparedRuns stores the benchmark and three published runs of different
// teams' agents whose outcomes differ on some tasks, each attempt with two
// steps (a screenshot and an answer), a check verdict and a judge score, and
// their precomputed metrics.
func seedComparedRuns(t *testing.T, env testEnv) (navigator, pathfinder, scout comparedRun) {
	t.Helper()
	code, _, stderr := env.run(t, "", "migrate")
	require.Equal(t, 0, code, stderr)
	app := env.open(t)
	db := app.DB
	ctx := context.Background()
	sys := models.WithActor(ctx, models.SystemActor())
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(compareBenchmark), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(sys, "shop-forum", ds, "shop-forum.jsonl", 0)
	require.NoError(t, err)

	seedRun := func(team, agent, model string, shade color.RGBA, solved map[string]bool, judge map[string]int) comparedRun {
		user, err := db.CreateUser(ctx, strings.ToLower(agent)+"@example.org", agent+" maintainer", "a long enough password", false)
		require.NoError(t, err)
		as := models.WithActor(ctx, models.Actor{UserID: user.ID, Email: user.Email})
		tm, err := servicetest.Teams(db).CreateTeam(as, team, "", "")
		require.NoError(t, err)
		require.NoError(t, servicetest.CreateAgent(db, as, tm.Slug, &models.Agent{Name: agent, Kind: models.AgentReplay, Model: model,
			Config: `{"actions":[{"type":"stop","reason":"seeded"}]}`}, nil))
		run, err := servicetest.QueueRun(as, db, models.RunRequest{TeamSlug: tm.Slug, AgentSlug: strings.ToLower(agent), BenchmarkSlug: "shop-forum"})
		require.NoError(t, err)
		var ids []int64
		require.NoError(t, db.DispatchRun(sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
		// Every attempt, queued or not: the test plays them itself.
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
		out := comparedRun{id: run.ID, attempts: map[string]int64{}}
		for i, task := range ds.Tasks {
			id := ids[i]
			out.attempts[task.ExternalID] = id
			status, spec, err := db.ClaimAttempt(sys, id, storagetest.Claimant(time.Hour))
			require.NoError(t, err)
			require.Equal(t, models.ClaimOK, status)
			key := fmt.Sprintf("runs/%d/attempts/%d/try-%d/steps/000.jpg", run.ID, id, spec.Try)
			shot := pageJPEG(t, shade, i)
			require.NoError(t, app.Artifacts.Put(ctx, key, bytes.NewReader(shot), int64(len(shot)), "image/jpeg"))
			require.NoError(t, db.RecordStep(sys, &models.Step{AttemptID: id, Index: 0, Action: `{"type":"click","target":{"x":420,"y":260}}`,
				Thought: "The answer should be on this page.", URL: "http://shop.test/", Title: task.Intent, ScreenshotKey: key, ThumbnailKey: key,
				TokensIn: 900, TokensOut: 40, Cost: 0.002}, 1))
			answer := `{"type":"answer","text":"done"}`
			require.NoError(t, db.RecordStep(sys, &models.Step{AttemptID: id, Index: 1, Action: answer, Title: task.Intent, TokensIn: 950, TokensOut: 30, Cost: 0.002}, 1))
			require.NoError(t, db.FinishEpisode(sys, id, spec.Try, models.EpisodeOutcome{Steps: 2, TokensIn: 1850, TokensOut: 70, Cost: 0.004,
				FinalAnswer: answer, Duration: 4 * time.Second}, func(context.Context, *sql.Tx) error { return nil }, nil))
			verdict, s := models.OutcomeFailure, 0.0
			if solved[task.ExternalID] {
				verdict, s = models.OutcomeSuccess, 1
			}
			score := judge[task.ExternalID]
			_, err = db.RecordEvaluations(sys, id, models.EvaluationBatch{
				Primary: &models.Evaluation{Evaluator: "rubric-check", EvaluatorVersion: "1", Verdict: verdict, Score: &s},
				Others:  []*models.Evaluation{{Evaluator: "llm-judge:m:trajectory-v2", EvaluatorVersion: "trajectory-v2", Kind: models.EvaluationJudge, Verdict: verdict, Score: &s, JudgeScore: &score}},
			}, func(context.Context, *sql.Tx, int64) error { return nil })
			require.NoError(t, err)
		}
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
		require.NoError(t, service.NewMetrics(db).RefreshRunMetrics(sys, run.ID))
		return out
	}
	// Navigator solves the shop well; Pathfinder the forum.
	navigator = seedRun("Web Lab", "Navigator", "navigator-1", color.RGBA{59, 91, 219, 255},
		map[string]bool{"shop-1": true, "shop-2": true, "shop-3": true, "shop-4": true, "forum-1": true},
		map[string]int{"shop-1": 5, "shop-2": 4, "shop-3": 4, "shop-4": 5, "forum-1": 4, "forum-2": 2, "forum-3": 1, "forum-4": 2})
	pathfinder = seedRun("Open Agents", "Pathfinder", "pathfinder-2", color.RGBA{43, 138, 62, 255},
		map[string]bool{"shop-1": true, "forum-1": true, "forum-2": true, "forum-3": true},
		map[string]int{"shop-1": 5, "shop-2": 2, "shop-3": 1, "shop-4": 2, "forum-1": 5, "forum-2": 4, "forum-3": 4, "forum-4": 3})
	scout = seedRun("Scouts", "Scout", "scout-0.5", color.RGBA{230, 119, 0, 255},
		map[string]bool{"shop-1": true, "shop-2": true},
		map[string]int{"shop-1": 4, "shop-2": 4, "shop-3": 2, "shop-4": 1, "forum-1": 2, "forum-2": 1, "forum-3": 1, "forum-4": 1})
	return navigator, pathfinder, scout
}

// pageJPEG draws a plausible page: a coloured header and content blocks.
func pageJPEG(t *testing.T, shade color.RGBA, variant int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{248, 249, 250, 255}}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(0, 0, 1280, 72), &image.Uniform{shade}, image.Point{}, draw.Src)
	for i := range 3 + variant%3 {
		y := 120 + i*150
		draw.Draw(img, image.Rect(80, y, 1200, y+110), &image.Uniform{color.RGBA{222, 226, 230, 255}}, image.Point{}, draw.Src)
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 60}))
	return buf.Bytes()
}

// TestBrowser_CompareRuns: a visitor compares two published runs through the
// form, reads the metrics, the paired test and the task groups, then follows
// a task only one run solved to both runs' timelines.
func TestBrowser_CompareRuns(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	navigator, pathfinder, scout := seedComparedRuns(t, env)
	base := env.serve(t)

	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/compare")
	require.NoError(t, err)
	form := page.GetByTestId("compare-form")
	require.NoError(t, form.GetByLabel("Run ids", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(false)}).Fill(fmt.Sprintf("%d, %d", navigator.id, pathfinder.id)))
	shot(t, page, "compare-form")
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Compare"}).Click())

	// The address is the permalink.
	permalink := fmt.Sprintf("/compare?runs=%d,%d", navigator.id, pathfinder.id)
	require.NoError(t, expect.Page(page).ToHaveURL(base+permalink))
	require.NoError(t, expect.Locator(page.GetByTestId("compare-permalink")).ToHaveText(permalink))
	require.NoError(t, expect.Locator(page.GetByTestId("compare-runs").Locator("tbody tr")).ToHaveCount(2))
	// Navigator 5/8, Pathfinder 4/8: 12.5 points down, and 3 against 2
	// discordant tasks cannot tell them apart.
	success := page.GetByTestId("metric-row-success_rate")
	require.NoError(t, expect.Locator(success).ToContainText("62.5%"))
	require.NoError(t, expect.Locator(page.GetByTestId("delta-success_rate-1")).ToContainText("−12.5 pp"))
	require.NoError(t, expect.Locator(page.GetByTestId("delta-success_rate-1")).ToHaveAttribute("data-change", "worse"))
	require.NoError(t, expect.Locator(page.GetByTestId("metric-row-judge_score")).ToBeVisible())
	paired := page.GetByTestId(fmt.Sprintf("paired-%d", pathfinder.id))
	require.NoError(t, expect.Locator(paired.GetByTestId("paired-discordant")).ToHaveText("5"))
	require.NoError(t, expect.Locator(paired.GetByTestId("paired-p")).ToHaveText("1"))
	require.NoError(t, expect.Locator(page.GetByTestId("group-first_only").GetByTestId("group-count")).ToHaveText("3 tasks"))
	require.NoError(t, expect.Locator(page.GetByTestId("group-second_only").GetByTestId("group-count")).ToHaveText("2 tasks"))
	require.NoError(t, expect.Locator(page.GetByTestId("group-both").GetByTestId("group-count")).ToHaveText("2 tasks"))
	require.NoError(t, expect.Locator(page.GetByTestId("group-neither").GetByTestId("group-count")).ToHaveText("1 task"))
	// Tasks both solved are a compact list behind their summary.
	require.NoError(t, page.GetByTestId("group-both").Locator("summary").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("group-both").Locator("li")).ToHaveCount(2))
	require.NoError(t, expect.Locator(page.GetByTestId("group-both").GetByTestId("timeline-B-forum-1")).ToBeVisible())
	shot(t, page, "compare")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	shot(t, page, "compare-dark")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}))

	// forum-2: solved by Pathfinder only. Its row links to both timelines.
	row := page.GetByTestId("group-second_only").GetByTestId("diff-task-forum-2")
	require.NoError(t, row.GetByTestId("timeline-A-forum-2").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(fmt.Sprintf("%s/runs/%d/attempts/%d", base, navigator.id, navigator.attempts["forum-2"])))
	require.NoError(t, expect.Page(page).ToHaveTitle(regexp.MustCompile(`forum-2`)))
	shot(t, page, "compare-timeline-a")

	_, err = page.GoBack()
	require.NoError(t, err)
	row = page.GetByTestId("group-second_only").GetByTestId("diff-task-forum-2")
	require.NoError(t, row.GetByTestId("timeline-B-forum-2").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(fmt.Sprintf("%s/runs/%d/attempts/%d", base, pathfinder.id, pathfinder.attempts["forum-2"])))
	require.NoError(t, expect.Page(page).ToHaveTitle(regexp.MustCompile(`forum-2`)))
	shot(t, page, "compare-timeline-b")

	// Three runs: a matrix of the tasks whose outcomes differ.
	_, err = page.Goto(base + fmt.Sprintf("/compare?runs=%d,%d,%d", navigator.id, pathfinder.id, scout.id))
	require.NoError(t, err)
	diff := page.GetByTestId("compare-diff")
	require.NoError(t, expect.Locator(diff).ToContainText("8 tasks attempted by every run; 6 tasks with different outcomes are listed"))
	require.NoError(t, expect.Locator(diff.Locator("tbody tr")).ToHaveCount(6))
	require.NoError(t, expect.Locator(page.GetByTestId(fmt.Sprintf("paired-%d", scout.id)).GetByTestId("paired-discordant")).ToHaveText("3"))
	shot(t, page, "compare-matrix")

	// A bad list keeps the form with the reason; a run that is not there is
	// not found.
	res, err := page.Goto(base + fmt.Sprintf("/compare?runs=%d,%d", navigator.id, navigator.id))
	require.NoError(t, err)
	require.Equal(t, 400, res.Status())
	require.NoError(t, expect.Locator(page.GetByTestId("compare-error")).ToContainText("named twice"))
	shot(t, page, "compare-bad")
	res, err = page.Goto(base + fmt.Sprintf("/compare?runs=%d,999999", navigator.id))
	require.NoError(t, err)
	require.Equal(t, 404, res.Status())
}
