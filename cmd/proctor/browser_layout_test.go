package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/web"
)

// layoutWidths are the windows every page must fit: a laptop and a phone.
var layoutWidths = []int{1280, 390}

// layoutPassword is the seeded users' password.
const layoutPassword = "a long enough password"

// layoutSite is a Proctor with something on every page the layout test
// visits, and who visits it.
type layoutSite struct {
	base string
	// Paths of the pages.
	board, breakdowns, compare, timeline, report string
	// Emails of a member (signed in, no administrator; an annotator of the
	// study) and an administrator.
	member, admin string
}

// seedLayoutSite stores a sandbox board of seven runs (two of them with
// every score, so fourteen columns), graded runs for its breakdowns, three
// compared runs of another benchmark,
// an agreement study over them with two annotators' labels, and an attempt's
// timeline; then it serves the site.
func seedLayoutSite(t *testing.T, env testEnv, b *episode.Browser) layoutSite {
	t.Helper()
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	app := env.open(t)
	ids := seedSandboxBoard(t, app.DB, []boardSeed{
		{team: "meridian", agent: "Meridian Navigator", model: "gpt-4o-2024-08-06", origin: models.OriginExecuted, successes: 17, judge: judgeMean(4.4), cost: 0.0312, steps: 8.5, tokens: 1_250_000, day: 2, published: true},
		{team: "meridian", agent: "Scout", model: "gpt-4o-mini", origin: models.OriginUploaded, successes: 15, judge: judgeMean(4.0), cost: 0.0041, steps: 11.2, tokens: 640_000, day: 4, published: true},
		{team: "forge", agent: "Open Walker", model: "Qwen2.5-VL-72B-Instruct", openSource: true, origin: models.OriginReproduced, successes: 14, cost: 0.0108, steps: 7.4, tokens: 980_000, day: 6, published: true},
		{team: "forge", agent: "Slowpoke", model: "llama-3.1-8b", openSource: true, origin: models.OriginExecuted, successes: 3, cost: 0.0009, steps: 24.6, tokens: 2_900_000, day: 14, published: true},
	})
	// Two runs with every score give the full board fourteen columns, more
	// than a laptop's window shows side by side; the hard board keeps eleven.
	for i, key := range []string{"meridian/Meridian Navigator#1", "forge/Open Walker#1"} {
		require.NoError(t, app.DB.Gorm().Model(&models.LeaderboardEntry{}).Where("run_id = ? AND subset_name = ?", ids[key], models.SubsetFull).
			Updates(map[string]any{"rubric_score": 0.812 - 0.1*float64(i), "perfect_rate": 0.55 - 0.1*float64(i), "efficiency": 0.074 + 0.01*float64(i)}).Error)
	}
	seedBreakdownBoard(t, app, []breakdownAgent{
		{team: "Harbor Labs", name: "Cobalt", skill: 0.6, cost: 0.21, steps: 17, published: true},
		{team: "Harbor Labs", name: "Drift", skill: 0.35, cost: 0.02, steps: 5, published: true},
		{team: "Quill", name: "Ember", skill: 0.75, cost: 0.95, steps: 21, published: true},
		{team: "Quill", name: "Fable", subset: "hard", skill: 0.8, cost: 0.3, steps: 15, published: true},
	})
	navigator, pathfinder, scout := seedComparedRuns(t, env)

	ctx := context.Background()
	member, err := app.DB.CreateUser(ctx, "margaret@example.org", "Margaret Hamilton", layoutPassword, false)
	require.NoError(t, err)
	second, err := app.DB.CreateUser(ctx, "grace@example.org", "Grace Hopper", layoutPassword, false)
	require.NoError(t, err)
	admin, err := app.DB.CreateUser(ctx, "ada@example.org", "Ada Lovelace", layoutPassword, true)
	require.NoError(t, err)
	reportPath := seedLayoutStudy(t, app, admin, member, second, navigator.id, pathfinder.id, scout.id)

	base := env.serve(t)
	seedPage := newBrowserPage(t, b, 1280, 800)
	tl := seedTimeline(t, env, seedPage, base)
	return layoutSite{
		base:       base,
		board:      web.LeaderboardPath(sandbox.Slug, "", ""),
		breakdowns: web.LeaderboardPath(sandbox.Slug, "", "") + "/breakdowns",
		compare:    web.ComparePath([]int64{navigator.id, pathfinder.id, scout.id}),
		timeline:   fmt.Sprintf("/runs/%d/attempts/%d", tl.runID, tl.attemptID),
		report:     reportPath + "?by=agent",
		member:     member.Email,
		admin:      admin.Email,
	}
}

// seedLayoutStudy has the administrator create and open an agreement study
// over the runs, asking success, score and looping, and both annotators label
// every item, disagreeing on some. It returns the report's path.
func seedLayoutStudy(t *testing.T, app *App, admin, first, second *models.User, runs ...int64) string {
	t.Helper()
	ctx := context.Background()
	as := func(u *models.User) context.Context {
		return models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email, Name: u.Name, IsAdmin: u.IsAdmin})
	}
	st, err := servicetest.Studies(app.DB, nil).CreateStudy(as(admin), models.StudyRequest{
		Name: "Judges on the shop and forum", RunIDs: runs, Sampling: models.SampleRandom, Seed: 7, SampleSize: 12,
		OverlapFraction: 1, OverlapAnnotators: 2,
		Labels:     []string{models.StudyLabelSuccess, models.StudyLabelScore, models.StudyLabelLooping},
		Annotators: []string{first.Email, second.Email},
	})
	require.NoError(t, err)
	require.NoError(t, servicetest.Studies(app.DB, nil).OpenStudy(as(admin), st.ID))
	data, err := servicetest.Studies(app.DB, nil).StudyData(as(admin), st.ID)
	require.NoError(t, err)
	require.NotEmpty(t, data.Items)
	for i, it := range data.Items {
		success, score := "unsuccessful", 2
		if it.Outcome == models.OutcomeSuccess {
			success, score = "successful", 4
		}
		for n, u := range []*models.User{first, second} {
			labels := map[string]string{models.StudyLabelSuccess: success, models.StudyLabelScore: strconv.Itoa(score + n*(i%2)), models.StudyLabelLooping: "no"}
			if n == 1 && i%4 == 1 {
				labels[models.StudyLabelSuccess] = map[string]string{"successful": "unsuccessful", "unsuccessful": "successful"}[success]
				labels[models.StudyLabelLooping] = "yes"
			}
			_, err := servicetest.Studies(app.DB, nil).SaveStudyLabels(as(u), st.ID, it.ItemID, models.StudyLabelInput{Labels: labels, Action: models.LabelActionSubmit})
			require.NoError(t, err)
		}
	}
	return web.StudyReportPath(st.ID, "")
}

// layoutProbe measures a page in the browser.
type layoutProbe struct {
	t    *testing.T
	page playwright.Page
}

// eval runs a script on the page and returns its result.
func (p layoutProbe) eval(script string, arg ...any) any {
	p.t.Helper()
	v, err := p.page.Evaluate(script, arg...)
	require.NoError(p.t, err)
	return v
}

// goTo opens a path of the site and waits for its load.
func (p layoutProbe) goTo(base, path string) {
	p.t.Helper()
	res, err := p.page.Goto(base + path)
	require.NoError(p.t, err)
	require.Equal(p.t, 200, res.Status(), path)
}

// requireFits fails when the page scrolls sideways, naming the outermost
// elements that stick out of the window.
func (p layoutProbe) requireFits(what string) {
	p.t.Helper()
	r := p.eval(`() => {
		const w = document.documentElement.clientWidth;
		const out = [];
		const inScroller = el => {
			for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
				if (getComputedStyle(a).overflowX !== "visible") return true;
			}
			return false;
		};
		for (const el of document.querySelectorAll("body *")) {
			const b = el.getBoundingClientRect();
			if (b.width > 0 && b.right > w + 1 && !inScroller(el) && out.length < 6) {
				out.push(el.tagName.toLowerCase() + "." + String(el.className).split(" ").join(".") + " right=" + Math.round(b.right));
			}
		}
		return {over: document.documentElement.scrollWidth - w, out: out.join("; ")};
	}`).(map[string]any)
	require.LessOrEqual(p.t, toInt(p.t, r["over"]), 0, "%s scrolls sideways: %s", what, r["out"])
}

// box is an element's bounding box in the window.
func (p layoutProbe) box(l playwright.Locator) playwright.Rect {
	p.t.Helper()
	b, err := l.BoundingBox()
	require.NoError(p.t, err)
	require.NotNil(p.t, b, "not rendered")
	return *b
}

// requireInWindow fails unless the element is shown whole across the
// window's width.
func (p layoutProbe) requireInWindow(l playwright.Locator, what string) {
	p.t.Helper()
	require.NoError(p.t, browserExpect(p.t).Locator(l).ToBeVisible(), what)
	b := p.box(l)
	w := toInt(p.t, p.eval(`() => document.documentElement.clientWidth`))
	require.GreaterOrEqual(p.t, b.X, -0.5, "%s starts left of the window", what)
	require.LessOrEqual(p.t, b.X+b.Width, float64(w)+0.5, "%s ends right of the window (%d px)", what, w)
}

// headerRow measures the header: its height and how far apart the middles
// of its visible links and buttons are (0 when they share one row).
func (p layoutProbe) headerRow() (height, spread float64) {
	p.t.Helper()
	r := p.eval(`() => {
		const header = document.querySelector("header.site-header");
		const mids = [...header.querySelectorAll("a, button, summary")]
			.map(el => el.getBoundingClientRect())
			.filter(b => b.width > 0 && b.height > 0)
			.map(b => b.top + b.height / 2);
		return {height: header.getBoundingClientRect().height, spread: Math.max(...mids) - Math.min(...mids)};
	}`).(map[string]any)
	return toFloat(p.t, r["height"]), toFloat(p.t, r["spread"])
}

// toFloat reads a number Playwright returned from the page.
func toFloat(t *testing.T, v any) float64 {
	t.Helper()
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}

// pinnedTables opens every details element of the page, then reports each
// shown table of a .table-wrap.pin-first box: how much wider than its box
// it is, its first column's computed position, the background of its pinned
// columns (a transparent one if any), and, after scrolling the box to its
// end, how far the first column moved from the box's left edge and whether
// the first column that is not pinned passed under the pinned ones.
func (p layoutProbe) pinnedTables() []pinnedTable {
	p.t.Helper()
	r := p.eval(`() => {
		document.querySelectorAll("main details").forEach(d => { d.open = true; });
		const out = [];
		for (const wrap of document.querySelectorAll(".table-wrap.pin-first")) {
			if (wrap.getClientRects().length === 0) continue;
			const table = wrap.querySelector("table");
			const row = table.querySelector("tbody tr") || table.querySelector("tr");
			const cells = [...row.children];
			const pinned = cells.filter(c => getComputedStyle(c).position === "sticky");
			const free = cells.find(c => getComputedStyle(c).position !== "sticky");
			const last = pinned[pinned.length - 1] || cells[0];
			const clear = pinned.map(c => getComputedStyle(c).backgroundColor).find(bg => !/^rgb\(/.test(bg)) || getComputedStyle(last).backgroundColor;
			const t = {name: table.dataset.testid || table.querySelector("caption")?.textContent.trim().slice(0, 60) || "table",
				overflow: wrap.scrollWidth - wrap.clientWidth, position: getComputedStyle(cells[0]).position, background: clear, drift: 0, under: false};
			if (t.overflow > 0) {
				wrap.scrollLeft = wrap.scrollWidth;
				t.drift = Math.abs(cells[0].getBoundingClientRect().left - wrap.getBoundingClientRect().left);
				t.under = free ? free.getBoundingClientRect().left < last.getBoundingClientRect().right : true;
				wrap.scrollLeft = 0;
			}
			out.push(t);
		}
		return out;
	}`).([]any)
	var tables []pinnedTable
	for _, v := range r {
		m := v.(map[string]any)
		tables = append(tables, pinnedTable{name: fmt.Sprint(m["name"]), overflow: toInt(p.t, m["overflow"]), position: fmt.Sprint(m["position"]),
			background: fmt.Sprint(m["background"]), drift: toFloat(p.t, m["drift"]), under: m["under"] == true})
	}
	return tables
}

// pinnedTable is what pinnedTables measured of one table.
type pinnedTable struct {
	name, position, background string
	overflow                   int
	drift                      float64
	under                      bool
}

// opaque reports whether a computed CSS colour has no transparency.
func opaque(color string) bool {
	return strings.HasPrefix(color, "rgb(") || (strings.HasPrefix(color, "rgba(") && strings.HasSuffix(color, ", 1)"))
}

// stillView saves what the viewport shows with transitions finished: links
// fade to their new colour after a switch of colour scheme, and the menu's
// chevron turns as it opens.
func stillView(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	_, err := page.Screenshot(playwright.PageScreenshotOptions{
		Path: playwright.String(filepath.Join(screenshotDir(t), name+".png")), Animations: playwright.ScreenshotAnimationsDisabled,
	})
	require.NoError(t, err)
}

// TestBrowser_Layout: every page fits a 1280 px laptop window and a 390 px
// phone, for anonymous visitors, members and administrators. The header is
// one row, and on a phone its links fold into a menu that opens with the
// keyboard and without JavaScript; the leaderboard fits at 1280 and keeps
// rank, agent, success rate and interval at 390; the breakdowns, the
// comparison and the agreement report never scroll sideways on a phone, their
// wide tables scrolling in their own box with the first column pinned on an
// opaque background (dark mode too); the filmstrip's first frame is whole.
func TestBrowser_Layout(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	b := launchBrowser(t)
	site := seedLayoutSite(t, env, b)
	expect := browserExpect(t)
	emails := map[string]string{"anonymous": "", "member": site.member, "admin": site.admin}
	dark := playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}
	light := playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}

	t.Run("Header", func(t *testing.T) {
		for _, role := range []string{"anonymous", "member", "admin"} {
			// 1024 px, a tablet on its side, is below the width where the
			// links fold into the menu.
			for _, width := range append(layoutWidths, 1024) {
				page := newBrowserPage(t, b, width, 900)
				p := layoutProbe{t, page}
				if emails[role] != "" {
					signIn(t, page, site.base, emails[role], layoutPassword)
				}
				toggle := page.GetByTestId("menu-toggle")
				menu := page.GetByTestId("site-menu")
				benchmarks := menu.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Benchmarks"})
				for _, path := range []string{"/", site.board, site.compare} {
					p.goTo(site.base, path)
					height, spread := p.headerRow()
					require.LessOrEqual(t, height, 80.0, "%s at %d px as %s: the header is one row", path, width, role)
					require.LessOrEqual(t, spread, 8.0, "%s at %d px as %s: the header's links share a row", path, width, role)
					p.requireFits(fmt.Sprintf("%s at %d px as %s", path, width, role))
					if emails[role] != "" {
						p.requireInWindow(page.GetByTestId("nav-account"), "the account link")
						p.requireInWindow(page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log out"}), "Log out")
					} else {
						p.requireInWindow(page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Sign up"}), "Sign up")
					}
					if width == 1280 {
						require.NoError(t, expect.Locator(toggle).ToBeHidden())
						p.requireInWindow(benchmarks, "the Benchmarks link")
					} else {
						p.requireInWindow(toggle, "the menu toggle")
						require.NoError(t, expect.Locator(menu).ToBeHidden())
					}
				}
				viewShot(t, page, fmt.Sprintf("layout-header-%s-%d", role, width))
				if width != 390 {
					continue
				}
				// The menu opens from the keyboard, its links come next in
				// the tab order, and Escape closes it back onto its toggle.
				require.NoError(t, toggle.Locator("summary").Focus())
				require.NoError(t, page.Keyboard().Press("Enter"))
				require.NoError(t, expect.Locator(toggle).ToHaveAttribute("open", ""))
				p.requireInWindow(benchmarks, "the Benchmarks link in the open menu")
				if role == "admin" {
					p.requireInWindow(menu.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Admin"}), "the Admin link in the open menu")
				}
				p.requireFits("the open menu")
				stillView(t, page, fmt.Sprintf("layout-menu-%s-%d", role, width))
				require.NoError(t, page.Keyboard().Press("Tab"))
				require.NoError(t, expect.Locator(benchmarks).ToBeFocused())
				require.NoError(t, page.Keyboard().Press("Escape"))
				require.NoError(t, expect.Locator(menu).ToBeHidden())
				require.NoError(t, expect.Locator(toggle.Locator("summary")).ToBeFocused())
				if role == "member" {
					require.NoError(t, page.EmulateMedia(dark))
					require.NoError(t, toggle.Locator("summary").Click())
					stillView(t, page, "layout-menu-member-390-dark")
				}
			}
		}
	})

	t.Run("MenuWithoutJavaScript", func(t *testing.T) {
		plain := newBrowserContext(t, b, playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(false), Viewport: &playwright.Size{Width: 390, Height: 844}})
		page, err := plain.NewPage()
		require.NoError(t, err)
		p := layoutProbe{t, page}
		p.goTo(site.base, "/")
		menu := page.GetByTestId("site-menu")
		require.NoError(t, expect.Locator(menu).ToBeHidden())
		require.NoError(t, page.GetByTestId("menu-toggle").Locator("summary").Click())
		require.NoError(t, expect.Locator(menu).ToBeVisible())
		stillView(t, page, "layout-menu-no-js")
		require.NoError(t, menu.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Benchmarks"}).Click())
		require.NoError(t, expect.Page(page).ToHaveURL(site.base+"/benchmarks"))
		require.NoError(t, expect.Locator(menu).ToBeHidden(), "a new page starts with the menu closed")
	})

	t.Run("Leaderboard", func(t *testing.T) {
		hard := web.LeaderboardPath(sandbox.Slug, "hard", "")
		for _, width := range layoutWidths {
			page := newBrowserPage(t, b, width, 900)
			p := layoutProbe{t, page}
			rows := page.GetByTestId("leaderboard-row")
			fits := func(board string) {
				t.Helper()
				p.requireFits(fmt.Sprintf("%s at %d px", board, width))
				for _, col := range []string{"th.rank", "td.agent"} {
					pos := p.eval(`sel => getComputedStyle(document.querySelector(".leaderboard-table " + sel)).position`, col)
					require.Equal(t, "sticky", pos, "%s: %s is pinned when the board scrolls", board, col)
				}
				if width != 1280 {
					return
				}
				sizes := p.eval(`() => {
					const wrap = document.querySelector("#leaderboard-board .table-wrap");
					return {table: document.querySelector(".leaderboard-table").getBoundingClientRect().width, box: wrap.clientWidth, scroll: wrap.scrollWidth};
				}`).(map[string]any)
				require.LessOrEqual(t, toFloat(t, sizes["table"]), toFloat(t, sizes["box"]), "%s: the table fits its box: %v", board, sizes)
				require.LessOrEqual(t, toInt(t, sizes["scroll"]), toInt(t, sizes["box"]), "%s: nothing to scroll: %v", board, sizes)
				for _, key := range []string{"rank", "agent", "success_rate", "date"} {
					p.requireInWindow(page.GetByTestId("sort-"+key), board+": the "+key+" column")
				}
				p.requireInWindow(page.Locator(".leaderboard-table thead th.compare"), board+": the Compare column")
				p.requireInWindow(rows.Last().GetByTestId("compare-run"), board+": the last row's compare box")
			}

			// The full board: fourteen columns, where a laptop's window
			// folds the team and model into the agent's cell.
			p.goTo(site.base, site.board)
			require.NoError(t, expect.Locator(rows).ToHaveCount(7))
			fits("the full board")
			require.NoError(t, expect.Locator(page.GetByTestId("sort-rubric_score")).ToHaveCount(1))
			require.NoError(t, expect.Locator(page.GetByTestId("sort-team")).ToBeHidden(), "the team folds into the agent's cell")
			require.NoError(t, expect.Locator(page.GetByTestId("sort-model")).ToBeHidden())
			require.NoError(t, expect.Locator(rows.First().GetByTestId("row-details")).ToHaveText("Meridian Research · gpt-4o-2024-08-06"))
			if width == 1280 {
				for _, key := range []string{"judge_score", "rubric_score", "perfect_rate", "efficiency", "mean_steps", "cost_per_task", "tokens"} {
					p.requireInWindow(page.GetByTestId("sort-"+key), "the full board's "+key+" column")
				}
			} else {
				require.NoError(t, expect.Locator(page.GetByTestId("sort-tokens")).ToBeHidden(), "a phone leaves the lower columns out")
				require.NoError(t, expect.Locator(page.GetByTestId("sort-date")).ToBeHidden())
				n, err := rows.Count()
				require.NoError(t, err)
				for i := range n {
					row := rows.Nth(i)
					for what, l := range map[string]playwright.Locator{
						"rank": row.GetByTestId("rank"), "agent": row.GetByTestId("run-link"), "team and model": row.GetByTestId("row-details"),
						"success rate": row.Locator(".rate"), "interval bar": row.Locator(".ci-bar"), "interval": row.Locator(".ci-text"),
						"compare box": row.GetByTestId("compare-run"),
					} {
						p.requireInWindow(l, fmt.Sprintf("row %d's %s", i+1, what))
					}
				}
			}
			shot(t, page, fmt.Sprintf("layout-leaderboard-%d", width))
			_, err := page.Evaluate(`() => document.querySelector("#leaderboard-board").scrollIntoView()`)
			require.NoError(t, err)
			viewShot(t, page, fmt.Sprintf("layout-leaderboard-%d-table", width))
			require.NoError(t, page.EmulateMedia(dark))
			stillView(t, page, fmt.Sprintf("layout-leaderboard-%d-table-dark", width))
			require.NoError(t, page.EmulateMedia(light))

			// The hard board: eleven columns, the team and model in theirs
			// on a laptop.
			p.goTo(site.base, hard)
			require.NoError(t, expect.Locator(page.GetByTestId("restricted").First()).ToBeVisible())
			fits("the hard board")
			if width == 1280 {
				for _, key := range []string{"team", "model", "origin", "judge_score"} {
					p.requireInWindow(page.GetByTestId("sort-"+key), "the hard board's "+key+" column")
				}
				require.NoError(t, expect.Locator(rows.First().GetByTestId("row-details")).ToBeHidden(), "the team and model have their columns")
			} else {
				p.requireInWindow(rows.First().Locator(".ci-text"), "the hard board's first interval")
			}
			viewShot(t, page, fmt.Sprintf("layout-leaderboard-hard-%d", width))
		}
	})

	t.Run("WideTables", func(t *testing.T) {
		for _, view := range []struct{ name, path, role string }{
			{"breakdowns", site.breakdowns, "anonymous"},
			{"compare", site.compare, "anonymous"},
			{"report", site.report, "admin"},
		} {
			page := newBrowserPage(t, b, 390, 844)
			p := layoutProbe{t, page}
			if emails[view.role] != "" {
				signIn(t, page, site.base, emails[view.role], layoutPassword)
			}
			p.goTo(site.base, view.path)
			p.requireFits(view.name + " at 390 px")
			for _, scheme := range []playwright.PageEmulateMediaOptions{light, dark} {
				require.NoError(t, page.EmulateMedia(scheme))
				tables := p.pinnedTables()
				require.NotEmpty(t, tables, view.name)
				scrolled := 0
				for _, tb := range tables {
					require.Equal(t, "sticky", tb.position, "%s: %s pins its first column", view.name, tb.name)
					require.True(t, opaque(tb.background), "%s: %s's first column is opaque (%s), in %s mode", view.name, tb.name, tb.background, *scheme.ColorScheme)
					if tb.overflow > 0 {
						scrolled++
						require.LessOrEqual(t, tb.drift, 1.0, "%s: %s's first column stays at the box's edge", view.name, tb.name)
						require.True(t, tb.under, "%s: %s's columns pass under the first", view.name, tb.name)
					}
				}
				require.Positive(t, scrolled, "%s: a table is wider than the phone, so pinning is shown", view.name)
				p.requireFits(view.name + " at 390 px with every table shown")
			}
			// A look at the widest table scrolled halfway, in both modes.
			wide := page.Locator(".table-wrap.pin-first").Filter(playwright.LocatorFilterOptions{Visible: playwright.Bool(true)})
			widest := p.eval(`() => {
				const wraps = [...document.querySelectorAll(".table-wrap.pin-first")].filter(w => w.getClientRects().length > 0);
				let best = 0;
				wraps.forEach((w, i) => { if (w.scrollWidth - w.clientWidth > wraps[best].scrollWidth - wraps[best].clientWidth) best = i; });
				return best;
			}`)
			target := wide.Nth(toInt(t, widest))
			require.NoError(t, target.ScrollIntoViewIfNeeded())
			_, err := target.Evaluate(`w => { w.scrollLeft = (w.scrollWidth - w.clientWidth) / 2; }`, nil)
			require.NoError(t, err)
			for _, scheme := range []playwright.PageEmulateMediaOptions{light, dark} {
				require.NoError(t, page.EmulateMedia(scheme))
				stillView(t, page, fmt.Sprintf("layout-%s-390-%s", view.name, *scheme.ColorScheme))
			}
			require.NoError(t, page.EmulateMedia(light))
			_, err = page.Evaluate(`() => window.scrollTo(0, 0)`)
			require.NoError(t, err)
			shot(t, page, fmt.Sprintf("layout-%s-390-page", view.name))
		}
	})

	t.Run("Filmstrip", func(t *testing.T) {
		for _, width := range layoutWidths {
			page := newBrowserPage(t, b, width, 900)
			p := layoutProbe{t, page}
			p.goTo(site.base, site.timeline)
			strip := page.GetByTestId("filmstrip")
			first := page.GetByTestId("film-frame").First()
			require.NoError(t, expect.Locator(first).ToHaveAttribute("aria-current", "step"))
			s, f := p.box(strip), p.box(first)
			require.GreaterOrEqual(t, f.X, s.X, "the first frame starts inside the filmstrip at %d px", width)
			require.GreaterOrEqual(t, f.Y, s.Y, "the first frame's top is inside the filmstrip at %d px", width)
			require.LessOrEqual(t, f.X+f.Width, s.X+s.Width, "the first frame ends inside the filmstrip at %d px", width)
			require.LessOrEqual(t, f.Y+f.Height, s.Y+s.Height, "the first frame's bottom is inside the filmstrip at %d px", width)
			scroll := toInt(t, p.eval(`() => document.querySelector(".tl-filmstrip").scrollLeft`))
			require.Zero(t, scroll, "the strip starts at its first frame")
			p.requireFits(fmt.Sprintf("the timeline at %d px", width))
			require.NoError(t, strip.ScrollIntoViewIfNeeded())
			viewShot(t, page, fmt.Sprintf("layout-filmstrip-%d", width))
			require.NoError(t, page.EmulateMedia(dark))
			stillView(t, page, fmt.Sprintf("layout-filmstrip-%d-dark", width))
		}
	})
}
