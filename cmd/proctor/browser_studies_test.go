package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/internal/jpegscale"
	"proctor/models"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
)

// studyRunTasks are the sandbox tasks of the study's run, with how each
// attempt went.
var studyRunTasks = []struct {
	task, answer, verdict string
}{
	{"shop-keyboard-price", `{"type":"answer","text":"$79.00"}`, models.OutcomeSuccess},
	{"shop-out-of-stock", `{"type":"answer","text":"Round Side Table"}`, models.OutcomeFailure},
	{"shop-top-rated-kitchen", `{"type":"answer","text":"Chef's Knife"}`, models.OutcomeSuccess},
}

// judgeRationale is the LLM judge's text on every attempt: an annotator of a
// blind study must never read it.
const judgeRationale = "JUDGED-RATIONALE: the agent searched, opened the product and answered."

// seedStudyRun writes a completed, published sandbox run of three attempts,
// each three steps with screenshots of sandbox pages (taken with page), a
// deterministic check's verdict and an LLM judge's verdict with a rationale.
// It returns the run's id.
func seedStudyRun(t *testing.T, app *App, page playwright.Page, base string) int64 {
	t.Helper()
	g := app.DB.Gorm()
	ctx := context.Background()
	var b models.Benchmark
	require.NoError(t, g.Where("slug = ?", sandbox.Slug).Take(&b).Error)
	now := time.Now().UTC().Truncate(time.Millisecond)
	t0 := now.Add(-time.Hour)
	team := &models.Team{Slug: "acme-labs", Name: "Acme Labs", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(team).Error)
	agent := &models.Agent{TeamID: team.ID, Slug: "surfer", Name: "Surfer", Kind: models.AgentUpload, Model: "gpt-4o", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(agent).Error)
	snap, err := json.Marshal(models.SnapshotOf(agent))
	require.NoError(t, err)
	finished := t0.Add(10 * time.Minute)
	run := &models.Run{TeamID: team.ID, AgentID: agent.ID, VersionID: *b.CurrentVersionID, SubsetName: models.SubsetFull,
		Status: models.RunCompleted, Origin: models.OriginExecuted, AgentSnapshot: string(snap), Published: true,
		CreatedAt: t0, StartedAt: &t0, FinishedAt: &finished, TasksTotal: len(studyRunTasks), TasksDone: len(studyRunTasks), Successes: 2}
	require.NoError(t, g.Create(run).Error)
	shop := strings.Replace(sandbox.SiteURLs(base)["shop"], sandbox.EpisodeToken, "study-demo", 1)
	urls := []string{shop, shop + "?q=keyboard", shop + "/products"}
	actions := []string{`{"type":"fill","target":{"element_id":"e12"},"text":"keyboard"}`, `{"type":"click","target":{"x":300,"y":420}}`}
	for n, st := range studyRunTasks {
		var task models.Task
		require.NoError(t, g.Where("version_id = ? AND external_id = ?", *b.CurrentVersionID, st.task).Take(&task).Error)
		score := 0.0
		if st.verdict == models.OutcomeSuccess {
			score = 1
		}
		attempt := &models.Attempt{RunID: run.ID, TaskID: task.ID, Status: models.AttemptDone, Outcome: st.verdict, Score: &score,
			Steps: len(urls), StartedAt: &t0, FinishedAt: &finished, DurationMS: 9_000, FinalAnswer: st.answer, Tries: 1, CreatedAt: t0, UpdatedAt: finished}
		require.NoError(t, g.Create(attempt).Error)
		for i, u := range urls {
			_, err := page.Goto(u)
			require.NoError(t, err)
			shot, err := page.Screenshot(playwright.PageScreenshotOptions{Type: playwright.ScreenshotTypeJpeg, Quality: playwright.Int(75)})
			require.NoError(t, err)
			thumb, err := jpegscale.Scale(shot, 320, 75)
			require.NoError(t, err)
			key := fmt.Sprintf("runs/%d/attempts/%d/try-1/steps/%03d", run.ID, attempt.ID, i)
			for k, v := range map[string][]byte{key + ".jpg": shot, key + "-thumb.jpg": thumb} {
				require.NoError(t, app.Artifacts.Put(ctx, k, bytes.NewReader(v), int64(len(v)), "image/jpeg"))
			}
			action := st.answer
			if i < len(actions) {
				action = actions[i]
			}
			require.NoError(t, app.DB.Gorm().Create(&models.Step{
				AttemptID: attempt.ID, Index: i, Action: action, Thought: fmt.Sprintf("Attempt %d, step %d.", n+1, i+1), URL: u, Title: "Sandbox shop",
				ScreenshotKey: key + ".jpg", ThumbnailKey: key + "-thumb.jpg", ObserveMS: 300, AgentMS: 1200, ActMS: 400, CreatedAt: t0.Add(time.Duration(3*(i+1)) * time.Second),
			}).Error)
		}
		require.NoError(t, g.Create(&models.Evaluation{AttemptID: attempt.ID, Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@1",
			Kind: models.EvaluationCheck, IsPrimary: true, IsCurrent: true, Verdict: st.verdict, Score: &score, Details: `{"status":"` + st.verdict + `"}`, CreatedAt: finished}).Error)
		judge := 4
		require.NoError(t, g.Create(&models.Evaluation{AttemptID: attempt.ID, Evaluator: "llm-judge:judge-model:trajectory-v2", EvaluatorVersion: "trajectory-v2",
			Kind: models.EvaluationJudge, IsCurrent: true, Verdict: st.verdict, Score: &score, JudgeScore: &judge, CreatedAt: finished,
			Details: `{"rationale":"` + judgeRationale + `"}`}).Error)
	}
	return run.ID
}

// verdictTexts are what an annotator's pages of a blind study must not hold.
var verdictTexts = []string{"webarena-verified", "llm-judge", "JUDGED-RATIONALE", `data-testid="evaluations"`, "attempt-outcome", `href="/runs/`}

// requireNoVerdicts checks the page the annotator sees.
func requireNoVerdicts(t *testing.T, page playwright.Page) {
	t.Helper()
	html, err := page.Content()
	require.NoError(t, err)
	for _, text := range verdictTexts {
		require.NotContains(t, html, text, "an annotator of a blind study sees no verdict (%s)", page.URL())
	}
}

// signIn logs a user in through the form.
func signIn(t *testing.T, page playwright.Page, base, email, password string) {
	t.Helper()
	_, err := page.Goto(base + "/login")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Email").Fill(email))
	require.NoError(t, page.GetByLabel("Password").Fill(password))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	require.NoError(t, browserExpect(t).Locator(page.GetByTestId("nav-account")).ToBeVisible())
}

// stillShot saves a full-page screenshot with transitions finished, so that
// a colour scheme just switched is shown settled.
func stillShot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	_, err := page.Screenshot(playwright.PageScreenshotOptions{
		Path: playwright.String(filepath.Join(screenshotDir(t), name+".png")), FullPage: playwright.Bool(true),
		Animations: playwright.ScreenshotAnimationsDisabled,
	})
	require.NoError(t, err)
}

// press types keys one after another into the page.
func press(t *testing.T, page playwright.Page, keys ...string) {
	t.Helper()
	for _, k := range keys {
		require.NoError(t, page.Keyboard().Press(k))
	}
}

// TestBrowser_AnnotateBlindStudy is an annotator's work in a blind study: the
// owner creates it over a sandbox run on the study pages, invites the
// annotator and opens it;
// the annotator signs in, opens their queue, labels items with the keyboard
// alone (autosave says so, a reload keeps the answer, the timeline's own keys
// still step), skips one with a reason and finishes the queue, without ever
// seeing a verdict; the study's verdicts API refuses them. The owner then
// reviews an item with the annotator's labels and the verdicts.
func TestBrowser_AnnotateBlindStudy(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	const password = "a long enough password"
	for _, u := range [][2]string{{"Olga", "olga@example.org"}, {"Ann", "ann@example.org"}} {
		code, _, stderr = env.run(t, password+"\n", "user", "create", "--password-stdin", "--name", u[0], u[1])
		require.Equal(t, 0, code, stderr)
	}
	base := env.serve(t)
	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1440, 900)
	expect := browserExpect(t)

	// The owner creates a blind study over the run with every label, invites
	// Ann and opens it, through the study pages.
	app := env.open(t)
	runID := seedStudyRun(t, app, page, base)
	var owner, ann models.User
	require.NoError(t, app.DB.Gorm().Where("email = ?", "olga@example.org").Take(&owner).Error)
	require.NoError(t, app.DB.Gorm().Where("email = ?", "ann@example.org").Take(&ann).Error)
	// Olga and Ann share a team: owners who are not administrators invite
	// only their teammates.
	now := time.Now().UTC()
	panel := &models.Team{Slug: "annotation-panel", Name: "Annotation panel", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, app.DB.Gorm().Create(panel).Error)
	for role, id := range map[string]int64{models.RoleOwner: owner.ID, models.RoleMember: ann.ID} {
		require.NoError(t, app.DB.Gorm().Create(&models.Membership{TeamID: panel.ID, UserID: id, Role: role, CreatedAt: now}).Error)
	}
	ownerPage := newBrowserPage(t, b, 1440, 900)
	signIn(t, ownerPage, base, owner.Email, password)
	_, err := ownerPage.Goto(base + "/studies/new")
	require.NoError(t, err)
	create := ownerPage.GetByTestId("study-form")
	require.NoError(t, create.Locator("#f-name").Fill("Sandbox shop study"))
	require.NoError(t, create.GetByLabel(fmt.Sprintf("Sample run %d", runID)).Check())
	require.NoError(t, create.GetByLabel("Sample size").Fill(fmt.Sprint(len(studyRunTasks))))
	require.NoError(t, create.GetByLabel("Seed").Fill("11"))
	require.NoError(t, create.Locator("#f-overlap_fraction").Fill("0")) // one annotator per item
	labelBoxes, err := create.Locator(`input[name="labels"]`).All()
	require.NoError(t, err)
	require.Len(t, labelBoxes, len(models.StudyLabelNames()))
	for _, box := range labelBoxes {
		require.NoError(t, box.Check())
	}
	require.NoError(t, create.GetByLabel("Blind study").Check())
	require.NoError(t, ownerPage.GetByTestId("create-study").Click())
	require.NoError(t, expect.Locator(ownerPage.GetByTestId("study-name")).ToContainText("Sandbox shop study"))
	invite := ownerPage.GetByTestId("invite-form")
	require.NoError(t, invite.GetByLabel("Invite an annotator by email").Fill(ann.Email))
	require.NoError(t, invite.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Invite"}).Click())
	require.NoError(t, expect.Locator(ownerPage.GetByTestId("annotator-row")).ToContainText("Ann"))
	require.NoError(t, ownerPage.GetByTestId("open-study").Click())
	require.NoError(t, expect.Locator(ownerPage.GetByTestId("study-status").First()).ToHaveText(models.StudyOpen))
	studyPath := strings.TrimPrefix(ownerPage.URL(), base)
	studyPath = regexp.MustCompile(`^/studies/\d+`).FindString(studyPath)
	require.NotEmpty(t, studyPath, "the study's page: %s", ownerPage.URL())
	var studyID int64
	_, err = fmt.Sscanf(studyPath, "/studies/%d", &studyID)
	require.NoError(t, err)

	// Ann opens her queue.
	signIn(t, page, base, ann.Email, password)
	_, err = page.Goto(base + studyPath + "/queue")
	require.NoError(t, err)
	require.NoError(t, expect.Locator(page.GetByTestId("queue-progress-text")).ToHaveText("0 of 3 finished"))
	require.NoError(t, expect.Locator(page.GetByTestId("queue-entry")).ToHaveCount(3))
	requireNoVerdicts(t, page)
	shot(t, page, "annotate-queue")

	// The run's page, the run list and the board's breakdowns keep the run's
	// results from Ann, saying why, and fit at 1280 and 390 px.
	system := models.WithActor(context.Background(), models.SystemActor())
	require.NoError(t, service.NewMetrics(app.DB).RefreshRunMetrics(system, runID))
	for _, width := range []int{1280, 390} {
		annPage := newBrowserPage(t, b, width, 900)
		signIn(t, annPage, base, ann.Email, password)
		for _, view := range []struct{ name, path, testID string }{
			{"run", fmt.Sprintf("/runs/%d", runID), "run-results-blind"},
			{"runs", "/runs", "blind-cell"},
			{"breakdowns", "/benchmarks/" + sandbox.Slug + "/leaderboard/breakdowns", "blind-cell"},
		} {
			_, err := annPage.Goto(base + view.path)
			require.NoError(t, err)
			require.NoError(t, expect.Locator(annPage.GetByTestId(view.testID).First()).ToBeVisible(), view.path)
			require.NoError(t, expect.Locator(annPage.GetByTestId("run-successes")).ToHaveCount(0), view.path)
			shot(t, annPage, fmt.Sprintf("blind-%s-%d", view.name, width))
			overflow, err := annPage.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			require.NoError(t, err)
			require.LessOrEqual(t, overflow, 0, "%s scrolls sideways at %d px", view.path, width)
		}
	}
	require.NoError(t, page.GetByTestId("queue-next").Click())

	form := page.GetByTestId("label-form")
	status := page.GetByTestId("save-status")
	checked := func(question, value string) {
		t.Helper()
		require.NoError(t, expect.Locator(page.GetByTestId("answer-"+question+"-"+value)).ToBeChecked())
	}
	enhanced := func() {
		t.Helper()
		require.NoError(t, expect.Locator(page.Locator("form[data-annotate][data-enhanced]")).ToHaveCount(1))
		require.NoError(t, expect.Locator(page.GetByTestId("shortcut-legend")).ToBeVisible(), "the keys are documented once they work")
	}
	active := func(question string) {
		t.Helper()
		require.NoError(t, expect.Locator(page.Locator("fieldset[data-active]")).ToHaveAttribute("data-question", question))
	}

	// Item 1: the first answer is saved at once, and a reload keeps it.
	require.NoError(t, expect.Locator(page.GetByTestId("item-position")).ToHaveText("Item 1 of 3"))
	enhanced()
	requireNoVerdicts(t, page)
	// The run's own page of the attempt is refused while the item is pending.
	annCtx := models.WithActor(context.Background(), models.Actor{UserID: ann.ID, Email: ann.Email, Name: ann.Name})
	queue, err := servicetest.Studies(app.DB, nil).StudyQueue(annCtx, studyID)
	require.NoError(t, err)
	first, err := servicetest.Studies(app.DB, nil).StudyItem(annCtx, studyID, queue.Entries[0].ItemID)
	require.NoError(t, err)
	res, err := page.Request().Get(base + fmt.Sprintf("/runs/%d/attempts/%d", runID, first.Item.AttemptID))
	require.NoError(t, err)
	require.Equal(t, 403, res.Status())
	body, err := res.Text()
	require.NoError(t, err)
	require.Contains(t, body, "This attempt is in a blind study you annotate; its verdicts are hidden until the study closes.")
	require.NotContains(t, body, "JUDGED-RATIONALE")
	active("success")
	press(t, page, "1")
	checked("success", "successful")
	require.NoError(t, expect.Locator(status).ToHaveText(regexp.MustCompile(`^Saved at `)))
	active("score")
	shot(t, page, "annotate-item-autosaved")
	_, err = page.Reload()
	require.NoError(t, err)
	enhanced()
	checked("success", "successful")
	active("score")
	// The timeline's keys still step through the trajectory.
	press(t, page, "ArrowRight", "j")
	require.NoError(t, expect.Locator(page.GetByTestId("step-status")).ToHaveText("Step 3 of 3"))
	press(t, page, "k")
	require.NoError(t, expect.Locator(page.GetByTestId("step-status")).ToHaveText("Step 2 of 3"))
	// Score 4, side effect no, looping no, optimality 3, every rubric item fails.
	rubric := page.Locator("fieldset.an-rubric")
	rubricItems, err := rubric.Count()
	require.NoError(t, err)
	require.Positive(t, rubricItems, "the sandbox's tasks have rubrics")
	press(t, page, "4", "2", "2", "3")
	for range rubricItems {
		press(t, page, "2")
	}
	checked("score", "4")
	checked("side_effect", "no")
	checked("looping", "no")
	checked("optimality", "3")
	require.NoError(t, expect.Locator(rubric.Locator(`input[value="fail"]:checked`)).ToHaveCount(rubricItems))
	// A question's key chooses it again: the first rubric item passes after all.
	press(t, page, "r", "1")
	require.NoError(t, expect.Locator(rubric.First().Locator(`input[value="pass"]`)).ToBeChecked())
	require.NoError(t, expect.Locator(rubric.Locator(`input[value="fail"]:checked`)).ToHaveCount(rubricItems-1))
	// Success: unsure, then cleared and answered again.
	press(t, page, "s", "3")
	checked("success", "unsure")
	press(t, page, "s", "Backspace")
	require.NoError(t, expect.Locator(page.Locator(`fieldset[data-question="success"] input:checked`)).ToHaveCount(0))
	press(t, page, "1")
	checked("success", "successful")
	require.NoError(t, expect.Locator(status).ToHaveText(regexp.MustCompile(`^Saved at `)))
	requireNoVerdicts(t, page)
	stillShot(t, page, "annotate-item-wide-light")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	stillShot(t, page, "annotate-item-wide-dark")
	require.NoError(t, page.SetViewportSize(390, 844))
	stillShot(t, page, "annotate-item-narrow-dark")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}))
	stillShot(t, page, "annotate-item-narrow-light")
	require.NoError(t, page.SetViewportSize(1440, 900))
	// Enter submits and goes to the next item.
	press(t, page, "Enter")
	require.NoError(t, expect.Locator(page.GetByTestId("item-position")).ToHaveText("Item 2 of 3"))
	require.NoError(t, expect.Locator(page.GetByTestId("annotate-notice")).ToHaveText("Labels submitted. Here is the next item of your queue."))

	// Item 2: keys typed in the reason box are text, not answers; then skip.
	enhanced()
	requireNoVerdicts(t, page)
	require.NoError(t, page.GetByTestId("skip-flag").Locator("summary").Click())
	reason := form.GetByLabel("Reason")
	require.NoError(t, reason.Click())
	require.NoError(t, page.Keyboard().Type("Step 2 shows a blank page, so I cannot judge it."))
	require.NoError(t, expect.Locator(form.Locator("input[type=radio]:checked")).ToHaveCount(0))
	require.NoError(t, expect.Locator(page.GetByTestId("step-status")).ToHaveText("Step 1 of 3"), "j and k in the reason box do not step")
	shot(t, page, "annotate-item-skip")
	require.NoError(t, page.GetByTestId("skip-item").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("item-position")).ToHaveText("Item 3 of 3"))
	require.NoError(t, expect.Locator(page.GetByTestId("annotate-notice")).ToContainText("Item skipped."))

	// Item 3: submitting with questions left names them and chooses the first.
	enhanced()
	requireNoVerdicts(t, page)
	press(t, page, "2", "2")
	press(t, page, "Control+Enter")
	require.NoError(t, expect.Locator(page.GetByTestId("label-problem")).ToContainText("Answer every question before submitting; missing: Side effect"))
	active("side_effect")
	shot(t, page, "annotate-item-missing")
	press(t, page, "1", "1", "2")
	rubricItems, err = rubric.Count()
	require.NoError(t, err)
	for range rubricItems {
		press(t, page, "1")
	}
	press(t, page, "Control+Enter")
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(studyPath+"/queue?last=submit")+`$`)))
	require.NoError(t, expect.Locator(page.GetByTestId("annotate-notice")).ToHaveText("Labels submitted. No pending item is left in your queue."))
	require.NoError(t, expect.Locator(page.GetByTestId("queue-progress-text")).ToHaveText("3 of 3 finished: 2 submitted, 1 skipped"))
	require.NoError(t, expect.Locator(page.GetByTestId("queue-reason")).ToHaveText("Step 2 shows a blank page, so I cannot judge it."))
	requireNoVerdicts(t, page)
	shot(t, page, "annotate-queue-finished")

	// The study's verdicts stay hidden from its annotator, on the API too.
	res, err = page.Request().Get(base + "/api/v1" + studyPath + "/verdicts")
	require.NoError(t, err)
	body, err = res.Text()
	require.NoError(t, err)
	require.Equal(t, 403, res.Status(), body)
	require.Contains(t, body, "This study is blind")

	// The owner's review of the first item: Ann's labels and the verdicts.
	owner2 := ownerPage
	_, err = owner2.Goto(base + fmt.Sprintf("%s/items/%d", studyPath, first.Item.ID))
	require.NoError(t, err)
	review := owner2.GetByTestId("item-review")
	require.NoError(t, expect.Locator(review.GetByTestId("review-labels-row")).ToContainText("Ann"))
	require.NoError(t, expect.Locator(review.GetByTestId("review-labels-row")).ToContainText("Successful"))
	require.NoError(t, expect.Locator(review.GetByTestId("judge-rationale")).ToContainText("JUDGED-RATIONALE"))
	shot(t, owner2, "annotate-review")

	// No LLM judge is configured on this server: the administrator who
	// adds a judge configuration sees "Run the judges" disabled, with the
	// reason and where to read how to configure one, not a dead end.
	code, _, stderr = env.run(t, password+"\n", "user", "create", "--password-stdin", "--admin", "--name", "Ada", "ada@example.org")
	require.Equal(t, 0, code, stderr)
	admin := newBrowserPage(t, b, 1280, 900)
	signIn(t, admin, base, "ada@example.org", password)
	_, err = admin.Goto(base + studyPath + "#judges")
	require.NoError(t, err)
	judges := admin.GetByTestId("judges-form")
	if visible, _ := judges.IsVisible(); !visible {
		require.NoError(t, admin.Locator("#judges details summary").Click())
	}
	require.NoError(t, judges.Locator(`input[name="judge_name_1"]`).Fill("claude"))
	require.NoError(t, judges.Locator(`input[name="judge_model_1"]`).Fill("claude-test"))
	require.NoError(t, judges.Locator(`button[type="submit"]`).Click())
	require.NoError(t, expect.Locator(admin.GetByTestId("flash")).ToHaveText("Judge configurations saved."))
	runJudges := admin.GetByTestId("run-judges")
	require.NoError(t, expect.Locator(runJudges).ToBeDisabled())
	reasonText := admin.GetByTestId("judging-unavailable")
	require.NoError(t, expect.Locator(reasonText).ToContainText("No LLM judge is configured on this server"))
	require.NoError(t, expect.Locator(runJudges).ToHaveAccessibleDescription(regexp.MustCompile(`PROCTOR_JUDGE_BASE_URL`)))
	require.NoError(t, admin.Locator("#judges").ScrollIntoViewIfNeeded())
	viewShot(t, admin, "study-no-judge")
	require.NoError(t, reasonText.GetByRole("link").Click())
	require.NoError(t, expect.Page(admin).ToHaveURL(regexp.MustCompile(`/docs/judge\.md$`)))
}
