package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/hiddenbench"
	"proctor/internal/testenv"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/web"
)

// launchBrowser starts Chromium for a test, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when the driver or Chromium is missing.
func launchBrowser(t *testing.T) *episode.Browser {
	t.Helper()
	b, err := episode.LaunchBrowser(browserOptionsOrSkip(t))
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// browserOptionsOrSkip locates the driver and Chromium, or skips (fails under
// PROCTOR_TEST_REQUIRE=browser) when either is missing.
func browserOptionsOrSkip(t testing.TB) episode.BrowserOptions {
	t.Helper()
	opts := episode.BrowserOptionsFromEnv(os.Getenv)
	err := opts.Check()
	testenv.SkipUnlessAvailable(t, "browser", err == nil, "browser suite needs Chromium and the Playwright driver (make deps): "+errString(err))
	return opts
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// screenshotDir is where browser tests save screenshots: PROCTOR_TEST_SCREENSHOTS
// when set (to look at them), else the test's temporary folder.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("PROCTOR_TEST_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func shot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(screenshotDir(t), name+".png")), FullPage: playwright.Bool(true)})
	require.NoError(t, err)
}

// TestBrowser_SignupTeamAgent is what a new team does first: sign up, create a
// team, register an agent and see it listed.
func TestBrowser_SignupTeamAgent(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	base := env.serve(t)
	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1200, 900)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/")
	require.NoError(t, err)
	shot(t, page, "home")
	require.NoError(t, page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Sign up"}).Click())
	require.NoError(t, page.GetByLabel("Name").Fill("Grace"))
	require.NoError(t, page.GetByLabel("Email").Fill("grace@example.org"))
	require.NoError(t, page.GetByLabel("Password (at least 10 characters)").Fill("a long enough password"))
	shot(t, page, "signup")
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Sign up"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("nav-account")).ToHaveText("Grace"))
	shot(t, page, "account")

	// Create a team.
	require.NoError(t, page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Teams", Exact: playwright.Bool(true)}).Click())
	form := page.GetByTestId("create-team-form")
	require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(true)}).Fill("Browser Lab"))
	require.NoError(t, form.GetByLabel("Description (optional)").Fill("Agents that browse."))
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Create team"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("team-name")).ToHaveText("Browser Lab"))
	require.NoError(t, expect.Locator(page.GetByTestId("flash")).ToHaveText("Team created."))
	require.NoError(t, expect.Locator(page.GetByTestId("team-next-steps")).ToContainText("Register an agent"))
	shot(t, page, "team")

	// Register an agent with a secret.
	require.NoError(t, page.GetByTestId("team-agents-link").Click())
	require.NoError(t, page.GetByTestId("new-agent-link").Click())
	form = page.GetByTestId("agent-form")
	require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(true)}).Fill("Scripted Walker"))
	require.NoError(t, form.GetByLabel("Description (optional)").Fill("Replays a fixed script."))
	_, err = form.GetByLabel("Kind").SelectOption(playwright.SelectOptionValues{Values: &[]string{"replay"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByLabel("Model (optional)").Fill("none"))
	require.NoError(t, form.GetByLabel("Secret name 1").Fill("SCRIPT_TOKEN"))
	require.NoError(t, form.GetByLabel("Secret value 1").Fill("super-secret-value-123"))
	shot(t, page, "agent-form")
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Register agent"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("agent-name")).ToHaveText("Scripted Walker"))
	require.NoError(t, expect.Locator(page.GetByTestId("secret-status-SCRIPT_TOKEN")).ToHaveText("set"))
	content, err := page.Content()
	require.NoError(t, err)
	require.NotContains(t, content, "super-secret-value-123", "secrets are never rendered back")
	shot(t, page, "agent")

	// The agent is listed on the team's agent page.
	require.NoError(t, page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Agents", Exact: playwright.Bool(true)}).First().Click())
	require.NoError(t, expect.Locator(page.GetByTestId("agent-row")).ToHaveCount(1))
	require.NoError(t, expect.Locator(page.GetByTestId("agent-row")).ToContainText("Scripted Walker"))
	shot(t, page, "agents")
}

// TestBrowser_AdminImportsAndBrowses is an administrator's first visit: log in,
// import WebArena-Verified with its hard subset through the admin form, then
// filter the task browser and open a task with its hidden evaluation.
func TestBrowser_AdminImportsAndBrowses(t *testing.T) {
	t.Parallel()
	data := testenv.SharedDataDir(t)
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "an admin passphrase\n", "user", "create", "--admin", "--password-stdin", "--name", "Ada", "ada@example.org")
	require.Equal(t, 0, code, stderr)
	base := env.serve(t)
	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/admin")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Email").Fill("ada@example.org"))
	require.NoError(t, page.GetByLabel("Password").Fill("an admin passphrase"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	require.NoError(t, page.GetByTestId("import-link").Click())

	form := page.GetByTestId("import-form")
	_, err = form.GetByLabel("Format").SelectOption(playwright.SelectOptionValues{Values: &[]string{"webarena-verified"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByLabel("Slug", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(false)}).Fill("webarena-verified"))
	require.NoError(t, form.GetByLabel("Dataset file").SetInputFiles(filepath.Join(data, "webarena-verified", "webarena-verified.json")))
	require.NoError(t, form.GetByLabel("Subset name 1").Fill("hard"))
	require.NoError(t, form.GetByLabel("Subset file 1").SetInputFiles(filepath.Join(data, "webarena-verified", "subsets", "webarena-verified-hard.json")))
	shot(t, page, "admin-import")
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Import"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("benchmark-tasks")).ToHaveText("812"))
	require.NoError(t, expect.Locator(page.GetByTestId("subset-hard")).ToContainText("258"))
	shot(t, page, "benchmark")

	require.NoError(t, page.GetByTestId("browse-tasks").Click())
	_, err = page.GetByTestId("filter-site").SelectOption(playwright.SelectOptionValues{Values: &[]string{"gitlab"}})
	require.NoError(t, err)
	_, err = page.GetByTestId("filter-subset").SelectOption(playwright.SelectOptionValues{Values: &[]string{"hard"}})
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("task-filters").GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Filter"}).Click())
	// 57 gitlab-only hard tasks plus 24 multi-site hard tasks that include gitlab.
	require.NoError(t, expect.Locator(page.GetByTestId("task-count")).ToContainText("of 81 tasks"))
	shot(t, page, "tasks-gitlab-hard")

	require.NoError(t, page.GetByTestId("task-table").Locator("tbody tr a").First().Click())
	require.NoError(t, expect.Locator(page.GetByTestId("hidden-evaluation")).ToBeVisible())
	require.NoError(t, expect.Locator(page.GetByTestId("task-eval-spec")).ToContainText("AgentResponseEvaluator"))
	shot(t, page, "task-admin")

	// The benchmark's own LLM judge, then a re-scoring with nothing to grade yet.
	_, err = page.Goto(base + "/admin")
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("judge-webarena-verified").Click())
	judge := page.GetByTestId("judge-form")
	require.NoError(t, judge.GetByLabel("Chat-completions base URL", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(false)}).Fill("not a url"))
	require.NoError(t, judge.GetByLabel("Model").Fill("judge-model"))
	require.NoError(t, page.GetByTestId("save-judge").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("error-judge_base_url")).ToBeVisible())
	judge = page.GetByTestId("judge-form")
	require.NoError(t, judge.GetByLabel("Chat-completions base URL", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(false)}).Fill("https://judge.example.org/v1"))
	require.NoError(t, judge.GetByLabel("API key", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(false)}).Fill("sk-test-key"))
	require.NoError(t, page.GetByTestId("save-judge").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("clear-key")).ToBeVisible())
	shot(t, page, "admin-judge")
	_, err = page.Goto(base + "/admin")
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("rescore-webarena-verified").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("flash")).ToHaveText("No finished attempt to re-score."))
	shot(t, page, "admin-rescored")
}

// TestBrowser_QueueSandboxRunAndWatch is the newcomer's first run, the way
// the README tells it: sign up, create a team, register a replay agent, then
// Runs → Queue a run on the bundled sandbox; watch the run page live (its
// badge, progress, notice and attempts change as one) until it completes and
// stops polling, and open an attempt's timeline.
func TestBrowser_QueueSandboxRunAndWatch(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	env["PROCTOR_EPISODES"] = "2"
	env["PLAYWRIGHT_DRIVER_PATH"] = os.Getenv("PLAYWRIGHT_DRIVER_PATH")
	env["PROCTOR_CHROMIUM_PATH"] = os.Getenv("PROCTOR_CHROMIUM_PATH")
	base := env.serve(t)
	env["PROCTOR_BASE_URL"] = base
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)

	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)
	exact := playwright.Bool(true)

	// The home page leads to each published leaderboard.
	_, err := page.Goto(base + "/")
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("leaderboards-"+sandbox.Slug).GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Leaderboard", Exact: exact}).Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/benchmarks/`+sandbox.Slug+`/leaderboard$`)))

	_, err = page.Goto(base + "/signup")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Name").Fill("Newcomer"))
	require.NoError(t, page.GetByLabel("Email").Fill("new@example.org"))
	require.NoError(t, page.GetByLabel("Password (at least 10 characters)").Fill("a long enough password"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Sign up"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("nav-account")).ToHaveText("Newcomer"))

	// Before there is a team, the runs page says where to go first.
	_, err = page.Goto(base + "/runs")
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("queue-run-no-team").GetByRole("link").Click())
	form := page.GetByTestId("create-team-form")
	require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: exact}).Fill("First Steps"))
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Create team"}).Click())
	require.NoError(t, page.GetByTestId("team-agents-link").Click())
	require.NoError(t, page.GetByTestId("new-agent-link").Click())
	form = page.GetByTestId("agent-form")
	require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: exact}).Fill("Replay"))
	_, err = form.GetByLabel("Kind").SelectOption(playwright.SelectOptionValues{Values: &[]string{"replay"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Register agent"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("agent-name")).ToHaveText("Replay"))

	// The agent's page queues a run of it, chosen in the form.
	require.NoError(t, page.GetByTestId("queue-agent-run").Click())
	require.NoError(t, expect.Locator(page.Locator("#f-agent")).ToHaveValue("replay"))

	// Runs → Queue a run, as the README says; hidden-tests benchmarks,
	// which take no agent runs, are not offered.
	require.NoError(t, page.GetByRole("navigation", playwright.PageGetByRoleOptions{Name: "Main"}).GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "Runs", Exact: exact}).Click())
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/runs$`)))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Queue a run", Exact: exact}).Click())
	form = page.GetByTestId("run-form")
	require.NoError(t, expect.Locator(form.Locator("#f-benchmark option[value='"+hiddenbench.Slug+"']")).ToHaveCount(0))
	_, err = form.Locator("#f-agent").SelectOption(playwright.SelectOptionValues{Values: &[]string{"replay"}})
	require.NoError(t, err)
	_, err = form.Locator("#f-benchmark").SelectOption(playwright.SelectOptionValues{Values: &[]string{"sandbox"}})
	require.NoError(t, err)
	require.NoError(t, form.Locator("#f-subset").Fill("hard"))
	require.NoError(t, form.GetByLabel("Parallel episodes").Fill("2"))
	shot(t, page, "run-form")
	require.NoError(t, page.GetByTestId("queue-run").Click())
	require.NoError(t, page.WaitForURL(regexp.MustCompile(`/runs/\d+\?notice=queued$`)))

	// While it runs, the page changes as one: whenever it is looked at, the
	// title's badge says what the progress says, the queued notice shows
	// only while the run waits, and an attempt the progress counts as done
	// is no longer listed as running.
	live := `() => {
		const text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent.trim() : null; };
		return {
			badge: text('[data-testid="run-status-badge"]'),
			status: text('[data-testid="run-status"]'),
			done: text('[data-testid="run-done"]'),
			notice: document.querySelector('[data-testid="run-queued-notice"]') !== null,
			running: Array.from(document.querySelectorAll('[data-testid="attempt-results"] tbody tr')).filter(r => /running/.test(r.textContent)).length,
		};
	}`
	sawRunning := false
	deadline := time.Now().Add(3 * time.Minute)
	for {
		v, err := page.Evaluate(live)
		if err != nil {
			// The page reloads itself once the run finishes.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		state := v.(map[string]any)
		require.Equal(t, state["status"], state["badge"], "badge and progress agree: %v", state)
		if state["status"] != "queued" {
			require.Equal(t, false, state["notice"], "the queued notice goes once the run starts: %v", state)
		}
		if state["status"] == "running" {
			sawRunning = true
			if toInt(t, state["running"]) > 2 {
				t.Fatalf("more attempts listed as running than episodes run at once: %v", state)
			}
		}
		if state["status"] == "completed" {
			require.Equal(t, 0, toInt(t, state["running"]), "a finished run lists no running attempt: %v", state)
			break
		}
		require.True(t, time.Now().Before(deadline), "the run did not finish: %v", state)
		time.Sleep(250 * time.Millisecond)
	}
	require.True(t, sawRunning, "the page showed the run running")

	// The progress reached 100% and the page no longer polls.
	require.NoError(t, expect.Locator(page.GetByTestId("run-done")).ToContainText("(100%)"))
	require.NoError(t, expect.Locator(page.GetByTestId("run-successes")).ToHaveText("6"))
	require.NoError(t, expect.Locator(page.GetByTestId("run-queued-notice")).ToHaveCount(0))
	var polls atomic.Int32
	page.OnRequest(func(r playwright.Request) {
		if strings.Contains(r.URL(), "/progress") {
			polls.Add(1)
		}
	})
	time.Sleep(5 * time.Second)
	require.Zero(t, polls.Load(), "a finished run's page stops polling")
	// The metrics, with the success rate's interval; no judge is configured here.
	require.NoError(t, expect.Locator(page.GetByTestId("metric-success")).ToHaveText("100.0% (95% CI 61.0–100.0%, 6/6)"))
	require.NoError(t, expect.Locator(page.GetByTestId("metric-judge")).ToHaveText("not judged"))
	require.NoError(t, page.GetByTestId("breakdown-site").Locator("summary").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("breakdown-site").Locator("tbody tr")).ToHaveCount(3), "shop, data and multi-site")
	shot(t, page, "run-completed")
	require.NoError(t, page.SetViewportSize(390, 844))
	shot(t, page, "run-completed-phone")
	require.NoError(t, page.SetViewportSize(1280, 900))

	require.NoError(t, page.GetByTestId("timeline-link").First().Click())
	require.NoError(t, expect.Locator(page.Locator("img").First()).ToBeVisible())
	require.NoError(t, expect.Locator(page.GetByTestId("evaluation-verdict")).ToHaveText("success"))
	require.NoError(t, expect.Locator(page.GetByTestId("not-judged")).ToBeVisible())
	shot(t, page, "timeline")
}

// browserExpectTimeout is how long, in ms, a browser assertion or action
// waits: 30 s stretched by PROCTOR_TEST_SLOWDOWN. The test suite runs several
// browsers and servers at once on a small machine, where a page (bcrypt on
// login, a run's evaluation) can take seconds.
func browserExpectTimeout(t *testing.T) float64 {
	return float64(testenv.Scaled(t, 30*time.Second).Milliseconds())
}

// browserExpect returns Playwright's assertions with browserExpectTimeout.
func browserExpect(t *testing.T) playwright.PlaywrightAssertions {
	return playwright.NewPlaywrightAssertions(browserExpectTimeout(t))
}

// newBrowserPage opens a page of the given viewport in a fresh browser
// context (its own cookies), closed when the test ends.
func newBrowserPage(t *testing.T, b *episode.Browser, width, height int) playwright.Page {
	t.Helper()
	bctx := newBrowserContext(t, b, playwright.BrowserNewContextOptions{Viewport: &playwright.Size{Width: width, Height: height}})
	page, err := bctx.NewPage()
	require.NoError(t, err)
	return page
}

// newBrowserContext opens a browser context, closed when the test ends. Every
// page it opens is watched for Content Security Policy violations: one fails
// the test, naming the page and what was refused.
func newBrowserContext(t *testing.T, b *episode.Browser, opts playwright.BrowserNewContextOptions) playwright.BrowserContext {
	t.Helper()
	bctx, err := b.Playwright().NewContext(opts)
	require.NoError(t, err)
	t.Cleanup(func() { bctx.Close() })
	bctx.SetDefaultTimeout(browserExpectTimeout(t))
	watchCSP(t, bctx)
	return bctx
}

// watchCSP fails the test at its end when a page of bctx broke the Content
// Security Policy.
func watchCSP(t *testing.T, bctx playwright.BrowserContext) {
	t.Helper()
	w := newCSPWatcher(bctx)
	t.Cleanup(func() {
		if v := w.violations(); len(v) > 0 {
			t.Errorf("%s of the Content Security Policy:\n%s", web.Count(len(v), "violation"), strings.Join(v, "\n"))
		}
	})
}

// cspWatcher collects the Content Security Policy violations of a browser
// context's pages. Chromium reports each refusal on the console ("Refused to
// apply inline style because it violates the following Content Security
// Policy directive …"), with JavaScript on or off.
type cspWatcher struct {
	mu   sync.Mutex
	seen []string
}

func newCSPWatcher(bctx playwright.BrowserContext) *cspWatcher {
	w := &cspWatcher{}
	bctx.OnConsole(func(msg playwright.ConsoleMessage) {
		if !strings.Contains(msg.Text(), "Content Security Policy") {
			return
		}
		where := ""
		if p := msg.Page(); p != nil {
			where = p.URL()
		}
		w.mu.Lock()
		w.seen = append(w.seen, where+": "+msg.Text())
		w.mu.Unlock()
	})
	return w
}

// violations returns what was refused so far, each with its page's address.
func (w *cspWatcher) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// TestBrowser_CSPWatcher shows the watcher every browser test uses sees a
// page breaking the policy, with JavaScript on and off, and stays quiet on a
// page that keeps it.
func TestBrowser_CSPWatcher(t *testing.T) {
	b := launchBrowser(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/inline" {
			fmt.Fprint(w, `<!doctype html><title>inline</title><p style="color:red">styled inline</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>clean</title><p>plain</p>`)
	}))
	t.Cleanup(srv.Close)
	for _, javaScript := range []bool{true, false} {
		bctx, err := b.Playwright().NewContext(playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(javaScript)})
		require.NoError(t, err)
		w := newCSPWatcher(bctx)
		page, err := bctx.NewPage()
		require.NoError(t, err)
		_, err = page.Goto(srv.URL + "/clean")
		require.NoError(t, err)
		_, err = page.Goto(srv.URL + "/inline")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(w.violations()) > 0 }, 10*time.Second, 50*time.Millisecond, "javaScript=%v", javaScript)
		v := w.violations()
		require.Len(t, v, 1, "only the inline page: %v", v)
		require.Contains(t, v[0], srv.URL+"/inline: ")
		require.Contains(t, v[0], "inline style")
		require.NoError(t, bctx.Close())
	}
}
