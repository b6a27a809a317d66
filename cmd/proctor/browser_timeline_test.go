package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/internal/jpegscale"
	"proctor/models"
	"proctor/sandbox"
)

// timelineSeed is a published attempt of the sandbox benchmark with steps
// whose screenshots are real pages of the sandbox sites.
type timelineSeed struct {
	runID, attemptID int64
	steps            int
}

// seedTimeline writes a completed, published run of the sandbox with one
// attempt of twelve steps, as the runner would have recorded it: for each
// step a screenshot of a sandbox page (taken with page at 1280×800), its
// thumbnail and accessibility text, an action, a thought and timings; a HAR
// with requests during the steps; and a rubric judgment citing steps.
func seedTimeline(t *testing.T, env testEnv, page playwright.Page, base string) timelineSeed {
	t.Helper()
	app := env.open(t)
	g := app.DB.Gorm()
	ctx := context.Background()
	var b models.Benchmark
	require.NoError(t, g.Where("slug = ?", sandbox.Slug).Take(&b).Error)
	var task models.Task
	require.NoError(t, g.Where("version_id = ? AND external_id = ?", *b.CurrentVersionID, "shop-keyboard-price").Take(&task).Error)
	var items []models.RubricItem
	require.NoError(t, g.Where("task_id = ?", task.ID).Order("position").Find(&items).Error)
	require.NotEmpty(t, items)

	now := time.Now().UTC().Truncate(time.Millisecond)
	t0 := now.Add(-10 * time.Minute)
	team := &models.Team{Slug: "northwind", Name: "Northwind Research", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(team).Error)
	agent := &models.Agent{TeamID: team.ID, Slug: "navigator", Name: "Navigator", Kind: models.AgentUpload, Model: "gpt-4o", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(agent).Error)
	snap, err := json.Marshal(models.SnapshotOf(agent))
	require.NoError(t, err)
	finished := t0.Add(time.Minute)
	run := &models.Run{TeamID: team.ID, AgentID: agent.ID, VersionID: *b.CurrentVersionID, SubsetName: models.SubsetFull,
		Status: models.RunCompleted, Origin: models.OriginExecuted, AgentSnapshot: string(snap), Published: true,
		CreatedAt: t0, StartedAt: &t0, FinishedAt: &finished, TasksTotal: 1, TasksDone: 1, Successes: 1}
	require.NoError(t, g.Create(run).Error)
	score := 1.0
	final := `{"type":"answer","text":"$79.00"}`
	prefix := fmt.Sprintf("runs/%d/attempts/1/try-1", run.ID)
	attempt := &models.Attempt{RunID: run.ID, TaskID: task.ID, Status: models.AttemptDone, Outcome: models.OutcomeSuccess, Score: &score,
		Steps: 12, TokensIn: 42_000, TokensOut: 1_200, Cost: 0.0123, StartedAt: &t0, FinishedAt: &finished, DurationMS: 36_000,
		FinalAnswer: final, HARKey: prefix + "/network.har", Tries: 1, CreatedAt: t0, UpdatedAt: finished}
	require.NoError(t, g.Create(attempt).Error)

	shop := strings.Replace(sandbox.SiteURLs(base)["shop"], sandbox.EpisodeToken, "timeline-demo", 1)
	forum := strings.Replace(sandbox.SiteURLs(base)["forum"], sandbox.EpisodeToken, "timeline-demo", 1)
	script := []struct {
		url, action, thought string
	}{
		{shop, `{"type":"click","target":{"x":640,"y":120}}`, "The shop's home page lists products; I will search for the keyboard."},
		{shop, `{"type":"fill","target":{"element_id":"e12"},"text":"mechanical keyboard"}`, "Type the product name into the search box."},
		{shop, `{"type":"press","key":"Enter"}`, "Submit the search."},
		{shop + "?q=keyboard", `{"type":"scroll","delta_y":600}`, "The results are below the fold; scroll down."},
		{shop + "?q=keyboard", `{"type":"click","target":{"x":300,"y":420}}`, "Open the Mechanical Keyboard."},
		{shop + "?q=keyboard", `{"type":"scroll","delta_x":-400}`, "Look at the price block on the left."},
		{forum, `{"type":"go_back"}`, "This is the forum, not the product page: go back."},
		{shop, `{"type":"select","target":{"element_id":"e30"},"values":["price_asc"]}`, "Sort by price to double-check."},
		{shop, `{"type":"hover","target":{"x":900,"y":300}}`, "Hover over the price to see the tooltip."},
		{shop, `{"type":"scroll","delta_y":-300}`, "Back to the top."},
		{shop, `{"type":"click","target":{"x":1180,"y":40}}`, "Check the cart is empty before answering."},
		{shop, final, "The Mechanical Keyboard costs $79.00."},
	}
	var har []map[string]any
	for i, s := range script {
		_, err := page.Goto(s.url)
		require.NoError(t, err)
		shot, err := page.Screenshot(playwright.PageScreenshotOptions{Type: playwright.ScreenshotTypeJpeg, Quality: playwright.Int(80)})
		require.NoError(t, err)
		thumb, err := jpegscale.Scale(shot, 320, 80)
		require.NoError(t, err)
		ax, err := page.Locator("body").AriaSnapshot()
		require.NoError(t, err)
		key := fmt.Sprintf("%s/steps/%03d", prefix, i)
		for k, v := range map[string][]byte{key + ".jpg": shot, key + "-thumb.jpg": thumb, key + ".txt": []byte(ax)} {
			ct := "image/jpeg"
			if strings.HasSuffix(k, ".txt") {
				ct = "text/plain; charset=utf-8"
			}
			require.NoError(t, app.Artifacts.Put(ctx, k, bytes.NewReader(v), int64(len(v)), ct))
		}
		saved := t0.Add(time.Duration(3*(i+1)) * time.Second)
		require.NoError(t, app.DB.Gorm().Create(&models.Step{
			AttemptID: attempt.ID, Index: i, Action: s.action, Thought: s.thought, URL: s.url, Title: "Sandbox shop",
			ScreenshotKey: key + ".jpg", ThumbnailKey: key + "-thumb.jpg", AXTreeKey: key + ".txt",
			ObserveMS: 400, AgentMS: 1800, ActMS: 600, PersistMS: 25, TokensIn: 3500, TokensOut: 100, Cost: 0.001, CreatedAt: saved,
		}).Error)
		// The browser's requests during the step: the page and its stylesheet.
		for j, u := range []string{s.url, base + "/sandbox/static/style.css"} {
			har = append(har, map[string]any{
				"startedDateTime": saved.Add(-2*time.Second + time.Duration(j*40)*time.Millisecond).Format(time.RFC3339Nano), "time": 20,
				"request":  map[string]any{"method": "GET", "url": u, "headers": []any{}},
				"response": map[string]any{"status": 200, "content": map[string]any{"mimeType": "text/html"}},
			})
		}
	}
	doc, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "creator": map[string]any{"name": "Playwright"}, "entries": har}})
	require.NoError(t, err)
	require.NoError(t, app.Artifacts.Put(ctx, attempt.HARKey, bytes.NewReader(doc), int64(len(doc)), "application/json"))

	judgments := []models.RubricJudgment{{RubricItemID: items[0].ID, Passed: true, Rationale: "Step 5 opens the keyboard and step 12 answers with its price.", EvidenceSteps: models.JSONInts{5, 12}}}
	for _, it := range items[1:] {
		judgments = append(judgments, models.RubricJudgment{RubricItemID: it.ID, Passed: true, Rationale: "The answer states the price.", EvidenceSteps: models.JSONInts{12}})
	}
	require.NoError(t, g.Create(&models.Evaluation{AttemptID: attempt.ID, Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@1",
		Kind: models.EvaluationCheck, IsPrimary: true, IsCurrent: true, Verdict: models.OutcomeSuccess, Score: &score, Details: `{"status":"success"}`, CreatedAt: finished}).Error)
	judge := 5
	require.NoError(t, g.Create(&models.Evaluation{AttemptID: attempt.ID, Evaluator: "llm-judge:judge-model:rubric-v2", EvaluatorVersion: "rubric-v2",
		Kind: models.EvaluationRubric, IsCurrent: true, Verdict: models.OutcomeSuccess, Score: &score, CreatedAt: finished, RubricJudgments: judgments}).Error)
	require.NoError(t, g.Create(&models.Evaluation{AttemptID: attempt.ID, Evaluator: "llm-judge:judge-model:trajectory-v2", EvaluatorVersion: "trajectory-v2",
		Kind: models.EvaluationJudge, IsCurrent: true, Verdict: models.OutcomeSuccess, Score: &score, JudgeScore: &judge, CreatedAt: finished,
		Details: `{"rationale":"A detour to the forum at step 7, otherwise direct."}`}).Error)
	return timelineSeed{runID: run.ID, attemptID: attempt.ID, steps: len(script)}
}

// TestBrowser_TimelineKeyboard is a visitor reading an attempt's timeline:
// stepping with the keyboard (the address and the current step follow),
// jumping from the filmstrip and from a judge's citation, opening a step's
// accessibility text and network requests; then the same page without
// JavaScript, where ?step=N and #step-N still choose the step.
func TestBrowser_TimelineKeyboard(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	base := env.serve(t)

	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 800)
	seed := seedTimeline(t, env, page, base)
	require.NoError(t, page.SetViewportSize(1280, 900))
	expect := browserExpect(t)
	path := fmt.Sprintf("/runs/%d/attempts/%d", seed.runID, seed.attemptID)
	status := page.GetByTestId("step-status")
	current := page.Locator(".tl-step.tl-current")
	visible := func(n int) {
		t.Helper()
		require.NoError(t, expect.Locator(status).ToHaveText(fmt.Sprintf("Step %d of %d", n, seed.steps)))
		require.NoError(t, expect.Locator(current).ToHaveAttribute("data-step", fmt.Sprint(n)))
		require.NoError(t, expect.Locator(page.Locator(fmt.Sprintf("#step-%d", n))).ToBeVisible())
		require.NoError(t, expect.Locator(page.Locator(".tl-step:visible")).ToHaveCount(1))
		require.NoError(t, expect.Locator(page.Locator(fmt.Sprintf(`.tl-frame[data-step="%d"]`, n))).ToHaveAttribute("aria-current", "step"))
	}
	atStep := func(n int) {
		t.Helper()
		require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(path)+`\?step=`+fmt.Sprint(n)+`$`)))
		visible(n)
	}

	_, err := page.Goto(base + path)
	require.NoError(t, err)
	visible(1)
	require.NoError(t, expect.Locator(page.GetByTestId("film-frame")).ToHaveCount(seed.steps))
	require.NoError(t, expect.Locator(page.Locator("[data-keys-hint]")).ToBeVisible(), "the keys are explained once they work")
	require.NoError(t, expect.Locator(current.GetByTestId("click-marker")).ToHaveCount(1))
	// The step's time by phase, persistence (beside the agent) last.
	timings := "observe 400 ms · agent 1800 ms · act 600 ms · persist 25 ms"
	require.NoError(t, expect.Locator(current.GetByTestId("step-timings")).ToHaveText(timings))
	require.NoError(t, expect.Locator(current.GetByTestId("step-timings")).ToBeVisible())
	shot(t, page, "timeline-step-1")
	// On a phone the line wraps and stays readable.
	require.NoError(t, page.SetViewportSize(390, 844))
	require.NoError(t, current.GetByTestId("step-timings").ScrollIntoViewIfNeeded())
	require.NoError(t, expect.Locator(current.GetByTestId("step-timings")).ToBeInViewport())
	shot(t, page, "timeline-timings-390")
	require.NoError(t, page.SetViewportSize(1280, 900))

	keys := []struct {
		key  string
		want int
	}{
		{"ArrowRight", 2}, {"j", 3}, {"ArrowRight", 4}, {"k", 3}, {"ArrowLeft", 2}, {"End", seed.steps}, {"ArrowRight", seed.steps}, {"Home", 1}, {"ArrowLeft", 1},
	}
	for _, k := range keys {
		require.NoError(t, page.Keyboard().Press(k.key))
		atStep(k.want)
		switch k.want {
		case 2:
			require.NoError(t, expect.Locator(current.GetByTestId("action-label")).ToContainText(`typed "mechanical keyboard"`))
			// A step loaded when shown has its timings too.
			require.NoError(t, expect.Locator(current.GetByTestId("step-timings")).ToHaveText(timings))
			shot(t, page, "timeline-step-2-typed")
		case 4:
			require.NoError(t, expect.Locator(current.GetByTestId("scroll-arrow")).ToHaveAttribute("data-direction", "down"))
			shot(t, page, "timeline-step-4-scroll")
		}
	}
	// The filmstrip and the previous/next links switch in place.
	require.NoError(t, page.Locator(`.tl-frame[data-step="6"]`).Click())
	atStep(6)
	require.NoError(t, expect.Locator(current.GetByTestId("scroll-arrow")).ToHaveAttribute("data-direction", "left"))
	require.NoError(t, current.GetByTestId("next-step").Click())
	atStep(7)

	// A step's accessibility text and network requests load when opened.
	require.NoError(t, current.GetByTestId("step-axtree").Locator("summary").Click())
	require.NoError(t, expect.Locator(current.GetByTestId("axtree-text")).ToBeVisible())
	require.NoError(t, current.GetByTestId("step-network").Locator("summary").Click())
	require.NoError(t, expect.Locator(current.GetByTestId("network-request")).ToHaveCount(2))
	require.NoError(t, expect.Locator(current.GetByTestId("network-requests")).ToContainText("/forum"))
	shot(t, page, "timeline-step-7-parts")

	// A judge's citation makes its step the current one.
	require.NoError(t, page.GetByTestId("rubric-evidence").First().GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "step 5"}).Click())
	atStep(5)
	require.NoError(t, page.GetByTestId("judge-rationale").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "step 7"}).Click())
	atStep(7)
	shot(t, page, "timeline-cited")

	// An old #step-N link lands on its step, and the address says ?step=N.
	_, err = page.Goto(base + path + "#step-9")
	require.NoError(t, err)
	atStep(9)
	// ?step=N opens on that step; a bad one is a 400 naming the parameter.
	_, err = page.Goto(base + path + "?step=11")
	require.NoError(t, err)
	visible(11)
	res, err := page.Goto(base + path + "?step=99")
	require.NoError(t, err)
	require.Equal(t, 400, res.Status())
	require.NoError(t, expect.Locator(page.Locator("main")).ToContainText("step must be from 1 to 12"))

	t.Run("WithoutJavaScript", func(t *testing.T) {
		nctx := newBrowserContext(t, b, playwright.BrowserNewContextOptions{
			Viewport: &playwright.Size{Width: 1280, Height: 900}, JavaScriptEnabled: playwright.Bool(false),
		})
		page, err := nctx.NewPage()
		require.NoError(t, err)
		_, err = page.Goto(base + path + "?step=3")
		require.NoError(t, err)
		require.NoError(t, expect.Locator(page.Locator("#step-3")).ToBeVisible())
		require.NoError(t, expect.Locator(page.Locator(".tl-step:visible")).ToHaveCount(1))
		require.NoError(t, expect.Locator(page.Locator("[data-keys-hint]")).ToBeHidden())
		// Links reload the page on their step.
		require.NoError(t, page.Locator("#step-3").GetByTestId("next-step").Click())
		require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`\?step=4#viewer$`)))
		require.NoError(t, expect.Locator(page.Locator("#step-4")).ToBeVisible())
		// A citation shows its step through the anchor alone.
		require.NoError(t, page.GetByTestId("rubric-evidence").First().GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "step 12"}).Click())
		require.NoError(t, expect.Locator(page.Locator("#step-12")).ToBeVisible())
		require.NoError(t, expect.Locator(page.Locator(".tl-step:visible")).ToHaveCount(1))
		require.NoError(t, expect.Locator(page.GetByTestId("step-status")).ToBeHidden(), "it would name ?step=4")
		shot(t, page, "timeline-no-js")
	})
}
