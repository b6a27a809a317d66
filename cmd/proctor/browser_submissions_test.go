package main

import (
	"context"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/bundle/bundletest"
	"proctor/internal/testenv"
	"proctor/models"
	"proctor/runner/episode"
	"proctor/sandbox"
	"proctor/service/servicetest"
)

// seedUploader prepares a server for the submission portal: the sandbox
// benchmark, and team "Lab" of Mia with an upload-only agent "Offline".
func seedUploader(t *testing.T, env testEnv) {
	t.Helper()
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	db := env.open(t).DB
	ctx := context.Background()
	mia, err := db.CreateUser(ctx, "mia@example.org", "Mia", "a long enough password", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: mia.ID, Email: mia.Email, Name: mia.Name})
	_, err = servicetest.Teams(db).CreateTeam(member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(db, member, "lab", &models.Agent{Name: "Offline", Kind: models.AgentUpload}, nil))
}

// sandboxHardBundle writes a WebArena-Verified submission for the sandbox's
// hard subset of six tasks: two answered, one marked not attempted, one whose
// answer is not JSON, a task the benchmark does not have, two tasks absent,
// and padding of padding bytes (ignored by validation) that makes the upload
// take several parts.
func sandboxHardBundle(t *testing.T, path string, padding int64) string {
	t.Helper()
	entries := bundletest.WebArenaVerifiedEntries(
		bundletest.WAVTask{ID: "shop-admin-biggest-order", Response: `{"task_type": "RETRIEVE", "status": "SUCCESS", "retrieved_data": ["Order 7"], "error_details": null}`},
		bundletest.WAVTask{ID: "multi-recommended-to-cart", Response: `{"task_type": "MUTATE", "status": "SUCCESS", "retrieved_data": null, "error_details": null}`},
		bundletest.WAVTask{ID: "shop-restock", Missing: true},
		bundletest.WAVTask{ID: "data-download-stations", Response: `{"task_type": "RETRIEVE", "status": "SUCC`},
		bundletest.WAVTask{ID: "not-a-sandbox-task"},
	)
	if padding > 0 {
		entries = append(entries, bundletest.Entry{Name: "shop-admin-biggest-order/padding.bin", Open: bundletest.Random(padding, 3), Store: true})
	}
	return bundletest.Write(t, path, bundletest.KindOf(path), entries)
}

// submissionPage opens a page in a fresh browser context: JavaScript on or
// off, light or dark.
func submissionPage(t *testing.T, env *browserEnv, width, height int, javaScript bool, scheme *playwright.ColorScheme) playwright.Page {
	t.Helper()
	bctx := newBrowserContext(t, env.browser, playwright.BrowserNewContextOptions{
		Viewport:          &playwright.Size{Width: width, Height: height},
		JavaScriptEnabled: playwright.Bool(javaScript),
		ColorScheme:       scheme,
	})
	page, err := bctx.NewPage()
	require.NoError(t, err)
	return page
}

// browserEnv is a served program and a browser.
type browserEnv struct {
	base    string
	browser *episode.Browser
}

var submissionURL = regexp.MustCompile(`/submissions/\d+(\?notice=uploaded)?$`)

// submitBundle is a team member's upload through the form: sign in, choose
// the agent, the sandbox and its hard subset and the file, upload, and wait
// for the validation report. Without JavaScript the page does not poll, so
// the member reloads it until the report is there. When interrupted is set,
// the first upload is expected to stop with that message, and the member
// sends the form again.
func submitBundle(t *testing.T, env *browserEnv, page playwright.Page, bundle string, javaScript bool, interrupted, shots string) {
	t.Helper()
	expect := browserExpect(t)
	_, err := page.Goto(env.base + "/submissions")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Email").Fill("mia@example.org"))
	require.NoError(t, page.GetByLabel("Password").Fill("a long enough password"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	require.NoError(t, expect.Locator(page.GetByTestId("no-submissions")).ToBeVisible())
	require.NoError(t, page.GetByTestId("new-submission-link").Click())

	form := page.GetByTestId("submission-form")
	require.NoError(t, expect.Locator(form).ToBeVisible())
	_, err = form.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "Agent"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"lab/offline"}})
	require.NoError(t, err)
	_, err = form.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "Benchmark"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{sandbox.Slug}})
	require.NoError(t, err)
	_, err = form.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "Subset"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"hard"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByLabel("Bundle").SetInputFiles(bundle))
	shot(t, page, shots+"-form")
	require.NoError(t, page.GetByTestId("submit-bundle").Click())
	if interrupted != "" {
		// The upload stopped: the form says so, and sending it again resumes.
		alert := form.Locator("[data-upload-error]")
		require.NoError(t, expect.Locator(alert).ToContainText(interrupted))
		shot(t, page, shots+"-interrupted")
		require.NoError(t, page.GetByTestId("submit-bundle").Click())
	}

	require.NoError(t, page.WaitForURL(submissionURL))
	if javaScript {
		// The status section polls and reloads the page once validated.
		require.NoError(t, expect.Locator(page.GetByTestId("validation-report")).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(60_000)}))
	} else {
		require.Eventually(t, func() bool {
			_, err := page.Reload()
			require.NoError(t, err)
			n, err := page.GetByTestId("validation-report").Count()
			require.NoError(t, err)
			return n == 1
		}, testenv.Scaled(t, time.Minute), 250*time.Millisecond, "the report appears once validated")
	}
	require.NoError(t, expect.Locator(page.GetByTestId("submission-status-badge")).ToHaveText("validated"))
	require.NoError(t, expect.Locator(page.GetByTestId("submission-format")).ToHaveText("WebArena-Verified submission"))
	report := page.GetByTestId("validation-report")
	require.NoError(t, expect.Locator(report.GetByTestId("count-found").Locator("td")).ToHaveText("3"))
	require.NoError(t, expect.Locator(report.GetByTestId("count-not-attempted").Locator("td")).ToHaveText("1"))
	require.NoError(t, expect.Locator(report.GetByTestId("count-missing").Locator("td")).ToHaveText("2"))
	require.NoError(t, expect.Locator(report.GetByTestId("count-unknown").Locator("td")).ToHaveText("1"))
	require.NoError(t, expect.Locator(report.GetByTestId("tasks-missing")).ToContainText("multi-complaint-price"))
	require.NoError(t, expect.Locator(report.GetByTestId("tasks-missing")).ToContainText("multi-busiest-district-post"))
	require.NoError(t, expect.Locator(report.GetByTestId("tasks-unknown")).ToContainText("not-a-sandbox-task"))
	require.NoError(t, expect.Locator(report.GetByTestId("tasks-not-attempted")).ToContainText("shop-restock"))
	invalid := report.GetByTestId("report-invalid-files")
	require.NoError(t, expect.Locator(invalid.Locator("tbody tr")).ToHaveCount(1))
	require.NoError(t, expect.Locator(invalid).ToContainText("data-download-stations/agent_response.json"))
	require.NoError(t, expect.Locator(invalid).ToContainText("invalid JSON"))
	require.NoError(t, expect.Locator(report.GetByTestId("coverage-covered")).ToHaveText("4"))
	require.NoError(t, expect.Locator(report.GetByTestId("coverage-fraction")).ToContainText("66.7%"))
	shot(t, page, shots+"-report")
}

// ingestAndOpenRun ingests the validated submission on its page, waits for
// the run to exist and opens it.
func ingestAndOpenRun(t *testing.T, page playwright.Page, javaScript bool, shots string) {
	t.Helper()
	expect := browserExpect(t)
	require.NoError(t, page.GetByTestId("ingest").Click())
	if javaScript {
		require.NoError(t, expect.Locator(page.GetByTestId("submission-run")).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(60_000)}))
	} else {
		require.Eventually(t, func() bool {
			_, err := page.Reload()
			require.NoError(t, err)
			n, err := page.GetByTestId("submission-run").Count()
			require.NoError(t, err)
			return n == 1
		}, testenv.Scaled(t, time.Minute), 250*time.Millisecond, "the run link appears once ingested")
	}
	require.NoError(t, expect.Locator(page.GetByTestId("submission-status-badge")).ToHaveText("ingested"))
	require.NoError(t, expect.Locator(page.GetByTestId("submission-actions")).ToHaveCount(0), "nothing left to ingest or discard")
	shot(t, page, shots+"-ingested")
	require.NoError(t, page.GetByTestId("submission-run").Click())
	require.NoError(t, page.WaitForURL(regexp.MustCompile(`/runs/\d+$`)))
	require.NoError(t, expect.Locator(page.GetByTestId("badge-origin")).ToHaveText("uploaded"))
	shot(t, page, shots+"-run")
}

// TestBrowser_SubmitBundle is a team's upload of results run elsewhere with
// JavaScript on: the form sends the bundle in parts through the API with a
// progress bar, the page follows validation, shows the report (tasks found,
// missing, unknown, not attempted; the invalid file and why) and, after
// Ingest, links to the uploaded run. The report is also looked at on a
// narrow screen in dark mode.
func TestBrowser_SubmitBundle(t *testing.T) {
	t.Parallel()
	opts := browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PROCTOR_EPISODES"] = "1" // workers take the submission jobs; no episode runs
	env["PROCTOR_SUBMISSION_PART_BYTES"] = "5242880"
	env["PLAYWRIGHT_DRIVER_PATH"] = opts.DriverDir
	env["PROCTOR_CHROMIUM_PATH"] = opts.ExecutablePath
	seedUploader(t, env)
	base := env.serve(t)
	bundle := sandboxHardBundle(t, filepath.Join(t.TempDir(), "sandbox-hard.zip"), 11<<20)
	be := &browserEnv{base: base, browser: launchBrowser(t)}
	page := submissionPage(t, be, 1280, 900, true, nil)

	// Each part is one API request (three of 5 MiB at most). The connection
	// drops during the first try of part 2; sending the form again resumes
	// the upload without sending part 1 again.
	var mu sync.Mutex
	var parts []string
	partURL := regexp.MustCompile(`/api/v1/submissions/\d+/parts/(\d+)$`)
	page.OnRequest(func(r playwright.Request) {
		if m := partURL.FindStringSubmatch(r.URL()); m != nil && r.Method() == "PUT" {
			mu.Lock()
			defer mu.Unlock()
			parts = append(parts, m[1])
		}
	})
	require.NoError(t, page.Route("**/api/v1/submissions/*/parts/2", func(r playwright.Route) {
		require.NoError(t, r.Abort("connectionreset"))
	}, 1))
	submitBundle(t, be, page, bundle, true, "The connection was lost while part 2 was uploading", "submission-js")
	mu.Lock()
	require.Equal(t, []string{"1", "2", "2", "3"}, parts, "the bundle went up in parts and resumed after part 1")
	mu.Unlock()
	url := page.URL()

	// The same report on a phone in dark mode.
	dark := submissionPage(t, be, 390, 844, true, playwright.ColorSchemeDark)
	_, err := dark.Goto(base + "/login")
	require.NoError(t, err)
	require.NoError(t, dark.GetByLabel("Email").Fill("mia@example.org"))
	require.NoError(t, dark.GetByLabel("Password").Fill("a long enough password"))
	require.NoError(t, dark.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	require.NoError(t, browserExpect(t).Locator(dark.GetByTestId("nav-account")).ToBeVisible())
	_, err = dark.Goto(url)
	require.NoError(t, err)
	require.NoError(t, browserExpect(t).Locator(dark.GetByTestId("validation-report")).ToBeVisible())
	shot(t, dark, "submission-js-report-narrow-dark")
	_, err = dark.Goto(base + "/submissions/new")
	require.NoError(t, err)
	shot(t, dark, "submission-js-form-narrow-dark")

	ingestAndOpenRun(t, page, true, "submission-js")
	_, err = page.Goto(base + "/submissions")
	require.NoError(t, err)
	require.NoError(t, browserExpect(t).Locator(page.GetByTestId("submissions-table").Locator("tbody tr")).ToHaveCount(1))
	require.NoError(t, browserExpect(t).Locator(page.GetByTestId("submission-status")).ToHaveText("ingested"))
	shot(t, page, "submission-js-list")
}

// TestBrowser_SubmitBundleWithoutJavaScript is the same upload with
// JavaScript off: the form posts the whole bundle in one request, and the
// member reloads the page to follow validation and ingest.
func TestBrowser_SubmitBundleWithoutJavaScript(t *testing.T) {
	t.Parallel()
	opts := browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PROCTOR_EPISODES"] = "1"
	env["PLAYWRIGHT_DRIVER_PATH"] = opts.DriverDir
	env["PROCTOR_CHROMIUM_PATH"] = opts.ExecutablePath
	seedUploader(t, env)
	base := env.serve(t)
	bundle := sandboxHardBundle(t, filepath.Join(t.TempDir(), "sandbox-hard.tar.gz"), 3<<20)
	be := &browserEnv{base: base, browser: launchBrowser(t)}
	page := submissionPage(t, be, 1280, 900, false, nil)
	submitBundle(t, be, page, bundle, false, "", "submission-nojs")
	ingestAndOpenRun(t, page, false, "submission-nojs")
}
