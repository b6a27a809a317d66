package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/sandbox"
	"proctor/stats"
	"proctor/storage"
)

// boardSeed is one run of the seeded sandbox board.
type boardSeed struct {
	team, agent, model string
	openSource         bool
	origin             string
	successes          int // of 20 tasks
	judge              *float64
	cost               float64
	steps              float64
	tokens             int64
	day                int // finished on 2026-04-<day>
	published          bool
}

// seedSandboxBoard writes teams, agents, completed runs of the sandbox
// benchmark and their leaderboard entries (full, and "hard" restricted to its
// tasks) straight into the database, as the runner and metrics job would have.
// It returns the run ids by "team/agent#n" (n counting the agent's runs).
func seedSandboxBoard(t *testing.T, db *storage.DB, seeds []boardSeed) map[string]int64 {
	t.Helper()
	g := db.Gorm()
	var b models.Benchmark
	require.NoError(t, g.Where("slug = ?", sandbox.Slug).Take(&b).Error)
	require.NotNil(t, b.CurrentVersionID)
	now := time.Now().UTC()
	teams, agents, ids := map[string]int64{}, map[string]*models.Agent{}, map[string]int64{}
	for _, s := range seeds {
		if teams[s.team] == 0 {
			team := &models.Team{Slug: s.team, Name: strings.ToUpper(s.team[:1]) + s.team[1:] + " Research", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, g.Create(team).Error)
			teams[s.team] = team.ID
		}
		key := s.team + "/" + s.agent
		a := agents[key]
		if a == nil {
			a = &models.Agent{TeamID: teams[s.team], Slug: models.Slugify(s.agent), Name: s.agent, Kind: models.AgentUpload,
				Model: s.model, OpenSource: s.openSource, CreatedAt: now, UpdatedAt: now}
			require.NoError(t, g.Create(a).Error)
			agents[key] = a
		}
		snap, err := json.Marshal(models.SnapshotOf(a))
		require.NoError(t, err)
		finished := time.Date(2026, 4, s.day, 9, 0, 0, 0, time.UTC)
		run := &models.Run{TeamID: a.TeamID, AgentID: a.ID, VersionID: *b.CurrentVersionID, SubsetName: models.SubsetFull,
			Status: models.RunCompleted, Origin: s.origin, AgentSnapshot: string(snap), Published: s.published,
			CreatedAt: finished.Add(-time.Hour), FinishedAt: &finished, TasksTotal: 20, TasksDone: 20, Successes: s.successes}
		require.NoError(t, g.Create(run).Error)
		n := 1
		for ids[key+"#"+strconv.Itoa(n)] != 0 {
			n++
		}
		ids[key+"#"+strconv.Itoa(n)] = run.ID
		for _, e := range []struct {
			subset     string
			restricted bool
			k, n       int
		}{{models.SubsetFull, false, s.successes, 20}, {"hard", true, s.successes * 6 / 20, 6}} {
			ci := stats.Wilson95(e.k, e.n)
			report, err := json.Marshal(stats.Report{Subset: e.subset, Restricted: e.restricted, Breakdowns: map[stats.Dimension][]stats.Group{}, Metrics: stats.Metrics{
				N: e.n, Tasks: e.n, Graded: e.n, Successes: e.k, Failures: e.n - e.k, SuccessRate: float64(e.k) / float64(e.n), SuccessCI: ci,
				ErrorClasses: map[string]int{},
			}})
			require.NoError(t, err)
			entry := &models.LeaderboardEntry{RunID: run.ID, BenchmarkID: b.ID, VersionID: run.VersionID, SubsetName: e.subset,
				Restricted: e.restricted, Tasks: e.n, Successes: e.k, SuccessRate: float64(e.k) / float64(e.n), CILow: ci.Low, CIHigh: ci.High,
				JudgeScore: s.judge, MeanSteps: s.steps, CostPerTask: s.cost, Tokens: s.tokens, Metrics: string(report), ComputedAt: now}
			if s.judge != nil {
				entry.Judged = e.n
			}
			require.NoError(t, g.Create(entry).Error)
		}
	}
	return ids
}

func judgeMean(v float64) *float64 { return &v }

// TestBrowser_Leaderboard is a visitor reading the sandbox's board: open it
// from the benchmark page, sort by cost, filter to uploaded runs, keep each
// agent's best, follow a row to its run, and read it in dark mode and without
// JavaScript.
func TestBrowser_Leaderboard(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	app := env.open(t)
	ids := seedSandboxBoard(t, app.DB, []boardSeed{
		{team: "northwind", agent: "Navigator", model: "gpt-4o", origin: models.OriginExecuted, successes: 17, judge: judgeMean(4.4), cost: 0.0312, steps: 8.5, tokens: 1_250_000, day: 2, published: true},
		{team: "northwind", agent: "Navigator", model: "gpt-4o", origin: models.OriginExecuted, successes: 12, judge: judgeMean(3.8), cost: 0.0298, steps: 9.1, tokens: 1_190_000, day: 9, published: true},
		{team: "northwind", agent: "Scout", model: "gpt-4o-mini", origin: models.OriginUploaded, successes: 15, judge: judgeMean(4.0), cost: 0.0041, steps: 11.2, tokens: 640_000, day: 4, published: true},
		{team: "forge", agent: "Open Walker", model: "Qwen2.5-VL-72B", openSource: true, origin: models.OriginReproduced, successes: 14, cost: 0.0108, steps: 7.4, tokens: 980_000, day: 6, published: true},
		{team: "forge", agent: "Open Walker", model: "Qwen2.5-VL-72B", openSource: true, origin: models.OriginUploaded, successes: 9, cost: 0.0101, steps: 7.9, tokens: 1_020_000, day: 12, published: true},
		{team: "forge", agent: "Slowpoke", model: "llama-3.1-8b", openSource: true, origin: models.OriginExecuted, successes: 3, cost: 0.0009, steps: 24.6, tokens: 2_900_000, day: 14, published: true},
		{team: "quiet", agent: "Unreleased", model: "secret-model", origin: models.OriginExecuted, successes: 20, cost: 0.05, steps: 5, tokens: 100_000, day: 15, published: false},
	})
	base := env.serve(t)

	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1440, 900)
	expect := browserExpect(t)
	rows := page.GetByTestId("leaderboard-row")

	_, err := page.Goto(base + "/benchmarks/" + sandbox.Slug)
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("leaderboard-link").Click())
	require.NoError(t, expect.Locator(rows).ToHaveCount(6), "six published runs; the private one never shows")
	require.NoError(t, expect.Locator(page.Locator("body")).Not().ToContainText("Unreleased"))
	require.NoError(t, expect.Locator(rows.First()).ToContainText("Navigator"))
	require.NoError(t, expect.Locator(rows.First().GetByTestId("success")).ToContainText("85.0% (95% CI 64.0–94.8%)"))
	require.NoError(t, expect.Locator(rows.First().GetByTestId("rank")).ToHaveText("1–5"), "of 20 tasks, only 3 is clearly below 17")
	require.NoError(t, expect.Locator(rows.Last().GetByTestId("rank")).ToHaveText("5–6"))
	shot(t, page, "leaderboard")

	// Sort by cost: the cheapest first, and the URL is a permalink of it.
	require.NoError(t, page.GetByTestId("sort-cost_per_task").GetByRole("link").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`sort=cost_per_task`)))
	require.NoError(t, expect.Locator(rows.First()).ToContainText("Slowpoke"))
	require.NoError(t, expect.Locator(page.GetByTestId("sort-cost_per_task")).ToHaveAttribute("aria-sort", "ascending"))
	shot(t, page, "leaderboard-by-cost")

	// Filter to uploaded runs: the filter keeps the sort.
	_, err = page.GetByTestId("filter-origin").SelectOption(playwright.SelectOptionValues{Values: &[]string{models.OriginUploaded}})
	require.NoError(t, err)
	require.NoError(t, expect.Locator(rows).ToHaveCount(2))
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/leaderboard\?dir=asc&origin=uploaded&sort=cost_per_task$`)), "the permalink, without the empty fields")
	require.NoError(t, expect.Locator(rows.First()).ToContainText("Scout"), "the cheaper uploaded run first")
	require.NoError(t, expect.Locator(page.GetByTestId("leaderboard-count")).ToHaveText("Showing 2 of 6 published runs."))
	shot(t, page, "leaderboard-uploaded")

	// Back to every origin, then each agent's best run only.
	_, err = page.GetByTestId("filter-origin").SelectOption(playwright.SelectOptionValues{Values: &[]string{""}})
	require.NoError(t, err)
	require.NoError(t, expect.Locator(rows).ToHaveCount(6))
	require.NoError(t, page.GetByTestId("filter-best").Check())
	require.NoError(t, expect.Locator(rows).ToHaveCount(4), "Navigator and Open Walker keep their better run")
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`best=1`)))
	require.NoError(t, page.GetByTestId("sort-success_rate").GetByRole("link").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("sort-success_rate")).ToHaveAttribute("aria-sort", "descending"))
	require.NoError(t, expect.Locator(page.GetByTestId("run-link")).ToHaveText([]string{"Navigator", "Scout", "Open Walker", "Slowpoke"}))
	shot(t, page, "leaderboard-best")

	// The hard subset's board marks the full runs as restricted.
	require.NoError(t, page.GetByTestId("subset-tab-hard").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/leaderboard/hard\?best=1`)))
	require.NoError(t, expect.Locator(page.GetByTestId("restricted")).ToHaveCount(4))
	shot(t, page, "leaderboard-hard")

	// Dark mode.
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	_, err = page.Goto(base + "/benchmarks/" + sandbox.Slug + "/leaderboard")
	require.NoError(t, err)
	require.NoError(t, expect.Locator(rows).ToHaveCount(6))
	shot(t, page, "leaderboard-dark")

	// Two rows go to the comparison, first the better one.
	require.NoError(t, rows.Nth(0).GetByTestId("compare-run").Check())
	require.NoError(t, rows.Nth(1).GetByTestId("compare-run").Check())
	require.NoError(t, page.GetByTestId("compare-selected").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/compare\?runs=`+strconv.FormatInt(ids["northwind/Navigator#1"], 10)+`(%2C|,)`+strconv.FormatInt(ids["northwind/Scout#1"], 10)+`$`)))
	require.NoError(t, expect.Page(page).ToHaveTitle(regexp.MustCompile(`^Compare runs \d+, \d+`)))
	shot(t, page, "leaderboard-compare")
	_, err = page.GoBack()
	require.NoError(t, err)

	// A row leads to its run.
	_, err = page.Goto(base + "/benchmarks/" + sandbox.Slug + "/leaderboard")
	require.NoError(t, err)
	require.NoError(t, rows.First().GetByTestId("run-link").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/runs/`+strconv.FormatInt(ids["northwind/Navigator#1"], 10)+`$`)))

	// Without JavaScript the filters are a plain form and sorting plain links.
	plain := newBrowserContext(t, b, playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(false), Viewport: &playwright.Size{Width: 1440, Height: 900}})
	np, err := plain.NewPage()
	require.NoError(t, err)
	_, err = np.Goto(base + "/benchmarks/" + sandbox.Slug + "/leaderboard?sort=tokens")
	require.NoError(t, err)
	_, err = np.GetByTestId("filter-open-source").SelectOption(playwright.SelectOptionValues{Values: &[]string{"yes"}})
	require.NoError(t, err)
	require.NoError(t, np.GetByTestId("leaderboard-filters").GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Filter"}).Click())
	require.NoError(t, expect.Page(np).ToHaveURL(regexp.MustCompile(`open_source=yes`)))
	require.NoError(t, expect.Page(np).ToHaveURL(regexp.MustCompile(`sort=tokens`)), "the sort travels with the form")
	require.NoError(t, expect.Locator(np.GetByTestId("run-link")).ToHaveText([]string{"Open Walker", "Open Walker", "Slowpoke"}))
	shot(t, np, "leaderboard-no-js")
}
