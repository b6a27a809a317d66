package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/internal/hiddenfixture"
	"proctor/models"
)

// seedHidden writes a published, graded hidden-tests run of a team's agent
// with its images in the server's artifact store (hiddenfixture); the
// benchmark keeps its tests hidden.
func seedHidden(t *testing.T, env testEnv) *hiddenfixture.Seed {
	t.Helper()
	app := env.open(t)
	g := app.DB.Gorm()
	now := time.Now().UTC()
	team := &models.Team{Slug: "rebuilders", Name: "Rebuilders Lab", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(team).Error)
	agent := &models.Agent{TeamID: team.ID, Slug: "rebuilder", Name: "Rebuilder", Kind: models.AgentUpload, Model: "gpt-4o", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(agent).Error)
	seed, err := hiddenfixture.Write(context.Background(), app.DB, hiddenfixture.Options{
		TeamID: team.ID, AgentID: agent.ID, Published: true, Files: app.Artifacts,
		Cost: 1.25, TokensIn: 310_000, TokensOut: 12_000, Turns: 48,
	})
	require.NoError(t, err)
	return seed
}

// imagesLoaded waits until every image the selector names has loaded with
// a width (a broken or unsigned link has naturalWidth 0).
func imagesLoaded(t *testing.T, page playwright.Page, selector string, want int) {
	t.Helper()
	imgs := page.Locator(selector)
	n, err := imgs.Count()
	require.NoError(t, err)
	require.Equal(t, want, n, selector)
	for i := range n {
		require.NoError(t, imgs.Nth(i).ScrollIntoViewIfNeeded())
	}
	_, err = page.WaitForFunction(`(sel) => { const imgs = [...document.querySelectorAll(sel)]; return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); }`,
		selector, playwright.PageWaitForFunctionOptions{Timeout: playwright.Float(browserExpectTimeout(t))})
	require.NoError(t, err, "every image of %s loads", selector)
	widths, err := imgs.EvaluateAll(`imgs => imgs.map(i => i.naturalWidth)`)
	require.NoError(t, err)
	raw, _ := json.Marshal(widths)
	t.Logf("%s natural widths: %s", selector, raw)
}

// TestBrowser_HiddenResults is a visitor and then an administrator reading a
// hidden-tests run: the leaderboard's Overall / R / B / S columns, the run's
// hidden-tests section with its per-website breakdown, the test browser
// filtered to the failed tests (with htmx, then without JavaScript), and a
// failed test's page with the reference and candidate regions side by side
// beside the SSIM map, every image loaded through its signed link.
func TestBrowser_HiddenResults(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	code, _, stderr := env.run(t, "an admin passphrase\n", "user", "create", "--admin", "--password-stdin", "--name", "Ada", "ada@example.org")
	require.Equal(t, 0, code, stderr)
	base := env.serve(t)
	seed := seedHidden(t, env)
	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)

	// The public board of the hidden-tests benchmark.
	_, err := page.Goto(base + "/benchmarks/" + seed.BenchmarkSlug + "/leaderboard")
	require.NoError(t, err)
	for _, id := range []string{"sort-hidden_overall", "sort-hidden_request", "sort-hidden_browser", "sort-hidden_system", "sort-tokens_per_task", "sort-mean_steps"} {
		require.NoError(t, expect.Locator(page.GetByTestId(id)).ToBeVisible(), id)
	}
	require.NoError(t, expect.Locator(page.GetByTestId("sort-judge_score")).ToHaveCount(0))
	row := page.GetByTestId("leaderboard-row")
	require.NoError(t, expect.Locator(row.GetByTestId("hidden-overall")).ToHaveText("67.4%"))
	require.NoError(t, expect.Locator(row.GetByTestId("hidden-request")).ToHaveText("73.1%"))
	require.NoError(t, expect.Locator(row.GetByTestId("hidden-browser")).ToHaveText("71.6%"))
	require.NoError(t, expect.Locator(row.GetByTestId("hidden-system")).ToHaveText("46.9%"))
	require.NoError(t, expect.Locator(row.GetByTestId("tokens-per-task")).ToHaveText("322k"))
	require.NoError(t, expect.Locator(row.GetByTestId("turns-per-task")).ToHaveText("48.0"))
	shot(t, page, "hidden-leaderboard")
	require.NoError(t, page.SetViewportSize(390, 844))
	shot(t, page, "hidden-leaderboard-narrow")
	require.NoError(t, page.SetViewportSize(1280, 900))

	// The run's page: pass rates per task and per website; the tests stay hidden.
	require.NoError(t, row.GetByTestId("run-link").Click())
	section := page.GetByTestId("hidden-results")
	require.NoError(t, expect.Locator(section).ToBeVisible())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-mean-overall")).ToHaveText("67.4%"))
	shopA := section.Locator(`[data-task="shop-a"]`)
	require.NoError(t, expect.Locator(shopA.GetByTestId("hidden-task-overall")).ToHaveText("93.0% (40/43)"))
	require.NoError(t, expect.Locator(shopA.GetByTestId("hidden-task-system")).ToHaveText("87.5% (7/8)"))
	require.NoError(t, expect.Locator(section.Locator(`[data-task="forum-b"]`)).ToContainText("not tested"))
	require.NoError(t, expect.Locator(section.Locator(`[data-site="forum"]`).GetByTestId("hidden-site-overall")).ToHaveText("40.7%"))
	require.NoError(t, expect.Locator(section.GetByTestId("hidden-tests-link")).ToHaveCount(0), "a visitor sees no link to hidden tests")
	require.NoError(t, section.ScrollIntoViewIfNeeded())
	shot(t, page, "hidden-run-anonymous")
	testsPath := fmt.Sprintf("/runs/%d/attempts/%d/tests", seed.RunID, seed.Attempts[hiddenfixture.ShopA])
	res, err := page.Goto(base + testsPath)
	require.NoError(t, err)
	require.Equal(t, 401, res.Status(), "the test browser is for administrators on this benchmark")

	// An administrator opens the tests.
	_, err = page.Goto(base + "/admin")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Email").Fill("ada@example.org"))
	require.NoError(t, page.GetByLabel("Password").Fill("an admin passphrase"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("import-link")).ToBeVisible())
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d", base, seed.RunID))
	require.NoError(t, err)
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-tests-link")).ToHaveCount(3))
	require.NoError(t, section.ScrollIntoViewIfNeeded())
	shot(t, page, "hidden-run-admin")
	// Each count of what did not pass links to the tests it counts: the
	// errored restart test has its own link beside the two failed tests.
	shopARow := page.Locator(`[data-task="shop-a"]`)
	require.NoError(t, expect.Locator(shopARow.GetByTestId("hidden-failed-link")).ToHaveText("failed (2)"))
	require.NoError(t, expect.Locator(shopARow.GetByTestId("hidden-errored-link")).ToHaveText("errored (1)"))
	require.NoError(t, shopARow.GetByTestId("hidden-errored-link").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(testsPath)+`\?result=errored$`)))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test")).ToHaveCount(1))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test")).ToHaveAttribute("data-test", "sys-restart"))
	require.NoError(t, expect.Locator(page.GetByTestId("quick-errored")).ToHaveText("1 errored"))
	shot(t, page, "hidden-tests-errored")
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d", base, seed.RunID))
	require.NoError(t, err)
	// The attempt's own page stands its tally and a link to the tests where
	// an agent's steps would be.
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d/attempts/%d", base, seed.RunID, seed.Attempts[hiddenfixture.ShopA]))
	require.NoError(t, err)
	attempt := page.GetByTestId("timeline-hidden-tests")
	require.NoError(t, expect.Locator(attempt.GetByTestId("hidden-summary-overall")).ToHaveText("93.0% (40/43)"))
	require.NoError(t, expect.Locator(page.GetByTestId("filmstrip")).ToHaveCount(0))
	shot(t, page, "hidden-attempt-admin")
	// An attempt whose candidate was never tested says so, with no link.
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d/attempts/%d", base, seed.RunID, seed.Attempts[hiddenfixture.ForumB]))
	require.NoError(t, err)
	untested := page.GetByTestId("timeline-hidden-tests")
	require.NoError(t, expect.Locator(untested.GetByTestId("timeline-hidden-tests-none")).ToHaveText("No test results."))
	require.NoError(t, expect.Locator(untested.GetByTestId("timeline-hidden-tests-link")).ToHaveCount(0))
	shot(t, page, "hidden-attempt-untested")
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d/attempts/%d", base, seed.RunID, seed.Attempts[hiddenfixture.ShopA]))
	require.NoError(t, err)
	require.NoError(t, attempt.GetByTestId("timeline-hidden-tests-link").Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(testsPath)+`$`)))
	_, err = page.Goto(fmt.Sprintf("%s/runs/%d", base, seed.RunID))
	require.NoError(t, err)
	require.NoError(t, page.Locator(`[data-task="shop-a"]`).GetByTestId("hidden-tests-link").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test")).ToHaveCount(43))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-summary-overall")).ToHaveText("93.0% (40/43)"))

	// The result filter swaps the list in place and the address follows; htmx
	// wires the form up once the page has loaded.
	require.NoError(t, page.WaitForLoadState(playwright.PageWaitForLoadStateOptions{State: playwright.LoadStateLoad}))
	_, err = page.GetByTestId("filter-result").SelectOption(playwright.SelectOptionValues{Values: &[]string{models.HiddenFailed}})
	require.NoError(t, err)
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(testsPath)+`\?result=failed$`)))
	tests := page.GetByTestId("hidden-test")
	require.NoError(t, expect.Locator(tests).ToHaveCount(2))
	require.NoError(t, expect.Locator(tests.First()).ToHaveAttribute("data-test", hiddenfixture.ImageTest))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-count")).ToHaveText("2 of 43 tests match the filter."))
	shot(t, page, "hidden-tests-failed")
	require.NoError(t, page.SetViewportSize(390, 844))
	shot(t, page, "hidden-tests-failed-narrow")
	require.NoError(t, page.SetViewportSize(1280, 900))

	// The failed test: both runs, the regions side by side and the SSIM map.
	require.NoError(t, tests.First().GetByTestId("hidden-test-link").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-test-title")).ToHaveText("The home page shows the header and twenty product cards"))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-run")).ToHaveCount(2))
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-checkpoint").First()).ToContainText("threshold 0.750"))
	imagesLoaded(t, page, `[data-testid="reference-image"], [data-testid="candidate-image"], [data-testid="ssim-map"]`, 6)
	imagesLoaded(t, page, `[data-testid="step-screenshot"]`, 4)
	// Side by side: the reference and the candidate share a row, left to right.
	cp := page.GetByTestId("hidden-checkpoint").First()
	ref, err := cp.GetByTestId("reference-image").BoundingBox()
	require.NoError(t, err)
	cand, err := cp.GetByTestId("candidate-image").BoundingBox()
	require.NoError(t, err)
	ssim, err := cp.GetByTestId("ssim-map").BoundingBox()
	require.NoError(t, err)
	require.InDelta(t, ref.Y, cand.Y, 1, "reference and candidate side by side")
	require.Less(t, ref.X+ref.Width, cand.X+1)
	require.Less(t, cand.X+cand.Width, ssim.X+1, "the SSIM map beside them on a wide screen")
	require.NoError(t, cp.ScrollIntoViewIfNeeded())
	shot(t, page, "hidden-test-images")
	require.NoError(t, page.SetViewportSize(390, 844))
	ref, err = cp.GetByTestId("reference-image").BoundingBox()
	require.NoError(t, err)
	cand, err = cp.GetByTestId("candidate-image").BoundingBox()
	require.NoError(t, err)
	require.InDelta(t, ref.Y, cand.Y, 1, "still side by side on a phone")
	require.LessOrEqual(t, cand.X+cand.Width, 390.0, "within the screen")
	shot(t, page, "hidden-test-images-narrow")
	require.NoError(t, page.SetViewportSize(1280, 900))

	// Without JavaScript the filter form is a plain GET.
	noJS := newBrowserContext(t, b, playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(false)})
	cookies, err := page.Context().Cookies()
	require.NoError(t, err)
	opt := make([]playwright.OptionalCookie, len(cookies))
	for i, c := range cookies {
		opt[i] = c.ToOptionalCookie()
	}
	require.NoError(t, noJS.AddCookies(opt))
	plain, err := noJS.NewPage()
	require.NoError(t, err)
	_, err = plain.Goto(base + testsPath)
	require.NoError(t, err)
	_, err = plain.GetByTestId("filter-group").SelectOption(playwright.SelectOptionValues{Values: &[]string{models.HiddenGroupSystem}})
	require.NoError(t, err)
	_, err = plain.GetByTestId("filter-result").SelectOption(playwright.SelectOptionValues{Values: &[]string{models.HiddenErrored}})
	require.NoError(t, err)
	require.NoError(t, plain.GetByTestId("hidden-filters").GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Filter"}).Click())
	require.NoError(t, expect.Page(plain).ToHaveURL(regexp.MustCompile(`result=errored`)))
	require.NoError(t, expect.Locator(plain.GetByTestId("hidden-test")).ToHaveCount(1))
	require.NoError(t, expect.Locator(plain.GetByTestId("hidden-test")).ToHaveAttribute("data-test", "sys-restart"))
}

// TestBrowser_HiddenPassRateBoard is the board of the sample's two
// candidates, graded as the hidden-tests job grades them: it ranks the
// near-perfect copy above the broken rebuild by pass rate (tests passed of
// tests run; the offline build is not run here), each with its 95%
// interval and a place of its own, at 1280 and 390 px. The broken run's
// page names where it came from, gives its pass rate with the interval,
// and lists the test not run behind the link that counts it.
func TestBrowser_HiddenPassRateBoard(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	base := env.serve(t)
	app := env.open(t)
	g := app.DB.Gorm()
	now := time.Now().UTC()
	team := &models.Team{Slug: "rebuilders", Name: "Rebuilders Lab", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, g.Create(team).Error)
	agent := func(slug, name string) int64 {
		a := &models.Agent{TeamID: team.ID, Slug: slug, Name: name, Kind: models.AgentUpload, Model: "gpt-4o", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, g.Create(a).Error)
		return a.ID
	}
	r, err := hiddenfixture.WriteRebuilds(context.Background(), app.DB, hiddenfixture.RebuildsOptions{
		TeamID: team.ID, CopyAgentID: agent("copier", "Copier"), BrokenAgentID: agent("rebuilder", "Rebuilder"), Published: true,
	})
	require.NoError(t, err)
	require.NoError(t, app.DB.SetRevealReferences(models.WithActor(context.Background(), models.SystemActor()), r.BenchmarkSlug, true))
	b := launchBrowser(t)
	expect := browserExpect(t)

	for _, width := range []int{1280, 390} {
		page := newBrowserPage(t, b, width, 900)
		_, err := page.Goto(base + "/benchmarks/" + r.BenchmarkSlug + "/leaderboard")
		require.NoError(t, err)
		rows := page.GetByTestId("leaderboard-row")
		require.NoError(t, expect.Locator(rows).ToHaveCount(2))
		for i, want := range []struct {
			run                 int64
			rank, rate, ci, all string
		}{
			{r.CopyRunID, "1", "100.0%", "(95% CI 91.6–100.0%)", "100.0%"},
			{r.BrokenRunID, "2", "73.8%", "(95% CI 58.9–84.7%)", "73.8%"},
		} {
			row := rows.Nth(i)
			require.NoError(t, expect.Locator(row).ToHaveAttribute("data-run", fmt.Sprint(want.run)))
			require.NoError(t, expect.Locator(row.GetByTestId("rank")).ToHaveText(want.rank), "a place of its own: the intervals do not overlap")
			require.NoError(t, expect.Locator(row.GetByTestId("success").Locator(".rate")).ToHaveText(want.rate))
			require.NoError(t, expect.Locator(row.GetByTestId("success").Locator(".ci-text")).ToHaveText(want.ci))
			require.NoError(t, expect.Locator(row.GetByTestId("hidden-overall")).ToHaveText(want.all))
			require.NoError(t, expect.Locator(row.GetByTestId("origin")).ToContainText(models.OriginCandidates))
		}
		if width == 390 {
			// The rate and its interval stay on screen on a phone.
			box, err := rows.Nth(1).GetByTestId("success").Locator(".rate").BoundingBox()
			require.NoError(t, err)
			require.LessOrEqual(t, box.X+box.Width, 390.0)
		}
		shot(t, page, fmt.Sprintf("hidden-pass-rate-board-%d", width))

		// The broken rebuild's run: where it came from, its pass rate and
		// the test not run, listed behind the link that counts it.
		require.NoError(t, rows.Nth(1).GetByTestId("run-link").Click())
		require.NoError(t, expect.Locator(page.GetByTestId("badge-origin")).ToHaveText("candidates submitted, tested by Proctor"))
		require.NoError(t, expect.Locator(page.GetByTestId("hidden-pass-rate")).ToContainText("73.8% (31 of 42 tests run)"))
		require.NoError(t, expect.Locator(page.GetByTestId("hidden-pass-ci")).ToHaveText("95% CI 58.9–84.7%"))
		task := page.Locator(`[data-task="` + hiddenfixture.RebuildTask + `"]`)
		require.NoError(t, expect.Locator(task.GetByTestId("hidden-task-overall")).ToContainText("73.8% (31/42)"))
		require.NoError(t, expect.Locator(task.GetByTestId("hidden-task-overall")).ToContainText("1 not run"))
		require.NoError(t, expect.Locator(task.GetByTestId("hidden-errored-link")).ToHaveCount(0), "nothing errored")
		require.NoError(t, expect.Locator(task.GetByTestId("hidden-failed-link")).ToHaveText("failed (11)"))
		require.NoError(t, page.GetByTestId("hidden-results").ScrollIntoViewIfNeeded())
		shot(t, page, fmt.Sprintf("hidden-pass-rate-run-%d", width))
		require.NoError(t, task.GetByTestId("hidden-not_run-link").Click())
		tests := page.GetByTestId("hidden-test")
		require.NoError(t, expect.Locator(tests).ToHaveCount(1))
		require.NoError(t, expect.Locator(tests).ToHaveAttribute("data-test", hiddenfixture.OfflineBuildTest))
		require.NoError(t, expect.Locator(tests.GetByTestId("hidden-test-result")).ToHaveText("not run"))
		require.NoError(t, expect.Locator(page.GetByTestId("quick-not_run")).ToHaveText("1 not run"))
		shot(t, page, fmt.Sprintf("hidden-not-run-%d", width))
	}
}
