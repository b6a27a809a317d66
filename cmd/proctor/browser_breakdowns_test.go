package main

import (
	"context"
	"database/sql"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/sandbox"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage/storagetest"
)

// breakdownAgent is one seeded entry of the breakdowns board: its skill sets how
// many tasks it solves (fewer as tasks get harder), cost and steps what each
// attempt took.
type breakdownAgent struct {
	team, name string
	subset     string
	skill      float64
	cost       float64
	steps      int
	published  bool
}

// seedBreakdownBoard registers teams and agents and records graded runs of the
// sandbox benchmark with their leaderboard entries, as the runner and the
// metrics job would, without driving a browser.
func seedBreakdownBoard(t *testing.T, app *App, agents []breakdownAgent) {
	t.Helper()
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	members := map[string]context.Context{}
	for ai, a := range agents {
		member, ok := members[a.team]
		if !ok {
			slug := strings.ToLower(strings.ReplaceAll(a.team, " ", "-"))
			u, err := app.DB.CreateUser(ctx, slug+"@example.org", a.team, "correct horse battery", false)
			require.NoError(t, err)
			member = models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
			_, err = servicetest.Teams(app.DB).CreateTeam(member, a.team, slug, "")
			require.NoError(t, err)
			members[a.team] = member
		}
		teamSlug := strings.ToLower(strings.ReplaceAll(a.team, " ", "-"))
		agent := &models.Agent{Name: a.name, Kind: models.AgentReplay, Model: "model-" + strings.ToLower(a.name)}
		if err := servicetest.CreateAgent(app.DB, member, teamSlug, agent, nil); err != nil {
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "an agent with a second run exists already")
		}
		run, err := servicetest.QueueRun(member, app.DB, models.RunRequest{TeamSlug: teamSlug, AgentSlug: strings.ToLower(a.name), BenchmarkSlug: sandbox.Slug, Subset: a.subset})
		require.NoError(t, err)
		var ids []int64
		require.NoError(t, app.DB.DispatchRun(system, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
		// Every attempt, queued or not: the test plays them itself.
		require.NoError(t, app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
		var tasks []models.Task
		require.NoError(t, app.DB.Gorm().Table("tasks").Joins("JOIN attempts a ON a.task_id = tasks.id").Where("a.run_id = ?", run.ID).Order("a.id").Find(&tasks).Error)
		require.Len(t, tasks, len(ids))
		for i, id := range ids {
			status, spec, err := app.DB.ClaimAttempt(system, id, storagetest.Claimant(time.Hour))
			require.NoError(t, err)
			require.Equal(t, models.ClaimOK, status)
			steps := a.steps + i%5
			require.NoError(t, app.DB.FinishEpisode(system, id, spec.Try, models.EpisodeOutcome{Steps: steps, Cost: a.cost * (0.8 + 0.1*float64(i%5))}, func(context.Context, *sql.Tx) error { return nil }, nil))
			score := 0.0
			_, err = app.DB.RecordEvaluation(system, id, &models.Evaluation{Evaluator: "webarena-verified", Verdict: breakdownVerdict(a.skill, tasks[i].Difficulty, i, ai), Score: &score})
			require.NoError(t, err)
		}
		require.NoError(t, service.NewMetrics(app.DB).RefreshRunMetrics(system, run.ID))
		if a.published {
			require.NoError(t, app.DB.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error)
		}
	}
}

// breakdownVerdict spreads successes evenly but not identically across agents:
// a skilled agent solves most easy tasks and fewer hard ones, and a few
// attempts end in an error.
func breakdownVerdict(skill float64, difficulty string, task, agent int) string {
	chance := skill - map[string]float64{"easy": 0, "medium": 0.15, "hard": 0.35}[difficulty]
	draw := math.Mod(float64(task)*0.618034+float64(agent)*0.414214, 1)
	switch {
	case draw < chance:
		return models.OutcomeSuccess
	case draw < chance+0.06:
		return models.OutcomeError
	}
	return models.OutcomeFailure
}

// TestBrowser_Breakdowns opens the breakdowns of a seeded sandbox board,
// switches the dimension, pages through nothing (one page of tasks), follows
// an outcome to its timeline, and looks at the page in light and dark mode.
func TestBrowser_Breakdowns(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	app := env.open(t)
	seedBreakdownBoard(t, app, []breakdownAgent{
		{team: "Northwind", name: "Atlas", skill: 0.9, cost: 0.42, steps: 12, published: true},
		{team: "Northwind", name: "Beacon", skill: 0.7, cost: 0.08, steps: 8, published: true},
		{team: "Harbor Labs", name: "Cobalt", skill: 0.6, cost: 0.21, steps: 17, published: true},
		{team: "Harbor Labs", name: "Drift", skill: 0.35, cost: 0.02, steps: 5, published: true},
		{team: "Quill", name: "Ember", skill: 0.75, cost: 0.95, steps: 21, published: true},
		{team: "Quill", name: "Fable", subset: "hard", skill: 0.8, cost: 0.3, steps: 15, published: true},
		{team: "Quill", name: "Ghost", skill: 1, cost: 0.01, steps: 3, published: false},
	})
	base := env.serve(t)

	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/benchmarks/" + sandbox.Slug + "/leaderboard/breakdowns")
	require.NoError(t, err)
	require.NoError(t, expect.Locator(page.GetByTestId("breakdowns-title")).ToContainText("Proctor sandbox"))
	rows := page.GetByTestId("breakdown-table").GetByTestId("breakdown-row")
	require.NoError(t, expect.Locator(rows).ToHaveCount(5), "five published full runs; the private one and the hard-subset run are not on the full board")
	require.NoError(t, expect.Locator(rows.First()).ToContainText("Atlas"))
	require.NoError(t, expect.Locator(page.GetByTestId("breakdown-table").Locator("thead")).ToContainText("forum"))
	content, err := page.Content()
	require.NoError(t, err)
	require.NotContains(t, content, "Ghost", "unpublished runs never appear")
	require.NoError(t, expect.Locator(page.GetByTestId("chart-cost-svg")).ToBeVisible())
	require.NoError(t, expect.Locator(page.GetByTestId("matrix-row")).ToHaveCount(27))
	shot(t, page, "breakdowns-site-light")

	// Switch the dimension: the table is swapped in place and the URL follows.
	require.NoError(t, page.GetByTestId("dim-difficulty").Click())
	require.NoError(t, expect.Locator(page.Locator("#by-group-heading")).ToHaveText("Success rate by difficulty"))
	require.NoError(t, expect.Page(page).ToHaveURL(base+"/benchmarks/"+sandbox.Slug+"/leaderboard/breakdowns?dim=difficulty"))
	require.NoError(t, expect.Locator(page.GetByTestId("breakdown-table").Locator("thead th")).ToHaveText([]string{"Entry", "All tasks", "easy", "medium", "hard"}))
	require.NoError(t, expect.Locator(page.GetByTestId("dim-difficulty")).ToHaveAttribute("aria-current", "page"))
	cell := rows.First().Locator("td").Nth(1)
	require.NoError(t, expect.Locator(cell).ToHaveAttribute("title", regexp.MustCompile(`^\d+% \(n=\d+, 95% CI \d+–\d+%\)$`)))
	shot(t, page, "breakdowns-difficulty-light")

	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	shot(t, page, "breakdowns-difficulty-dark")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}))

	// The hard board: full runs restricted to its tasks, and the hard run.
	require.NoError(t, page.GetByTestId("subset-nav").GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "hard"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("breakdowns-subset")).ToHaveText("hard"))
	require.NoError(t, expect.Locator(rows).ToHaveCount(6))
	require.NoError(t, expect.Locator(page.GetByTestId("matrix-row")).ToHaveCount(6))

	// An outcome in the matrix opens the attempt's timeline.
	require.NoError(t, page.GetByTestId("matrix-table").Locator("td.mx-s a").First().Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/runs/\d+/attempts/\d+$`)))
}
