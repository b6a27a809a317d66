package main

import (
	"regexp"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"
)

// TestBrowser_SubmitCandidatesWithoutJavaScript is a team member submitting
// candidate websites through the portal with JavaScript off: from the
// benchmark's page to the form, a refused address shown on its row, then
// the run.
func TestBrowser_SubmitCandidatesWithoutJavaScript(t *testing.T) {
	t.Parallel()
	opts := browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PROCTOR_EPISODES"] = "0" // the hidden-tests jobs are queued, none runs
	env["PLAYWRIGHT_DRIVER_PATH"] = opts.DriverDir
	env["PROCTOR_CHROMIUM_PATH"] = opts.ExecutablePath
	seedUploader(t, env)
	withRebuilds(t, env.open(t).DB)
	base := env.serve(t)
	be := &browserEnv{base: base, browser: launchBrowser(t)}
	page := submissionPage(t, be, 1280, 900, false, nil)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/benchmarks/rebuilds")
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("submit-candidates-link").Click())
	require.NoError(t, page.GetByLabel("Email").Fill("mia@example.org"))
	require.NoError(t, page.GetByLabel("Password").Fill("a long enough password"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	form := page.GetByTestId("candidate-form")
	require.NoError(t, expect.Locator(form).ToBeVisible())
	require.NoError(t, expect.Locator(form.Locator("fieldset.cand-row")).ToHaveCount(2), "one row per task of the full set")

	// Another subset reloads the rows.
	_, err = page.GetByRole("combobox", playwright.PageGetByRoleOptions{Name: "Subset"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"one"}})
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("show-subset").Click())
	require.NoError(t, expect.Locator(form.Locator("fieldset.cand-row")).ToHaveCount(1))
	_, err = page.GetByRole("combobox", playwright.PageGetByRoleOptions{Name: "Subset"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"full"}})
	require.NoError(t, err)
	require.NoError(t, page.GetByTestId("show-subset").Click())
	require.NoError(t, expect.Locator(form.Locator("fieldset.cand-row")).ToHaveCount(2))

	_, err = form.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "Agent"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"lab/offline"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByLabel("Base URL of r1").Fill("http://10.0.0.1/shop"))
	require.NoError(t, form.GetByLabel("Restart hook of r1").Fill("http://93.184.216.34/restart"))
	require.NoError(t, form.GetByLabel("Turns of r1").Fill("12"))
	require.NoError(t, form.GetByLabel("Base URL of r2").Fill("https://93.184.216.34/forum"))
	require.NoError(t, form.GetByLabel("Cost (USD) of r2").Fill("0.75"))
	shot(t, page, "candidates-form")
	require.NoError(t, page.GetByTestId("submit-candidates").Click())

	refused := page.GetByTestId("error-candidates[0].base_url")
	require.NoError(t, expect.Locator(refused).ToContainText("private address"))
	require.NoError(t, expect.Locator(form.GetByLabel("Turns of r1")).ToHaveValue("12"), "what was typed stays")
	require.NoError(t, expect.Locator(form.GetByLabel("Base URL of r1")).ToHaveAttribute("aria-invalid", "true"))
	require.NoError(t, expect.Page(page).ToHaveURL(regexp.MustCompile(`/benchmarks/rebuilds/candidates/new$`)), "refused at the form's own address")
	shot(t, page, "candidates-refused")

	// A reload sends the form again: the same refusal, never "Not found".
	_, err = page.Reload()
	require.NoError(t, err)
	require.NoError(t, expect.Locator(refused).ToContainText("private address"))
	require.NoError(t, expect.Locator(page.GetByTestId("error-page")).ToHaveCount(0), "no error page")
	require.NoError(t, expect.Locator(form.GetByLabel("Turns of r1")).ToHaveValue("12"))

	require.NoError(t, form.GetByLabel("Base URL of r1").Fill("http://93.184.216.34/shop"))
	require.NoError(t, page.GetByTestId("submit-candidates").Click())
	require.NoError(t, page.WaitForURL(regexp.MustCompile(`/runs/\d+\?notice=queued$`)))
	require.NoError(t, expect.Locator(page.Locator("body")).ToContainText("Offline on rebuilds"))
	shot(t, page, "candidates-run")
}

// TestBrowser_CandidateFormRefusalReloads is the candidate form with
// JavaScript on, on a phone: htmx posts it in place, the refusal shows at
// the form's own address (which the address bar then holds), and reloading
// or going back to that address shows the form, not "Not found"; the
// address the form once posted to leads to the form too. No page breaks the
// Content Security Policy (newBrowserContext fails the test otherwise).
func TestBrowser_CandidateFormRefusalReloads(t *testing.T) {
	t.Parallel()
	opts := browserOptionsOrSkip(t)
	env := newTestEnv(t)
	env["PROCTOR_EPISODES"] = "0"
	env["PLAYWRIGHT_DRIVER_PATH"] = opts.DriverDir
	env["PROCTOR_CHROMIUM_PATH"] = opts.ExecutablePath
	seedUploader(t, env)
	withRebuilds(t, env.open(t).DB)
	base := env.serve(t)
	be := &browserEnv{base: base, browser: launchBrowser(t)}
	page := submissionPage(t, be, 390, 844, true, nil)
	expect := browserExpect(t)
	notFound := page.GetByTestId("error-page") // "Not found", or any other

	_, err := page.Goto(base + "/benchmarks/rebuilds/candidates/new?subset=one")
	require.NoError(t, err)
	require.NoError(t, page.GetByLabel("Email").Fill("mia@example.org"))
	require.NoError(t, page.GetByLabel("Password").Fill("a long enough password"))
	require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
	form := page.GetByTestId("candidate-form")
	require.NoError(t, expect.Locator(form.Locator("fieldset.cand-row")).ToHaveCount(1))
	_, err = form.GetByRole("combobox", playwright.LocatorGetByRoleOptions{Name: "Agent"}).SelectOption(playwright.SelectOptionValues{Values: &[]string{"lab/offline"}})
	require.NoError(t, err)
	require.NoError(t, form.GetByLabel("Base URL of r1").Fill("http://10.0.0.1/shop"))
	require.NoError(t, page.GetByTestId("submit-candidates").Click())
	require.NoError(t, expect.Locator(page.GetByTestId("error-candidates[0].base_url")).ToContainText("private address"))
	formAddress := regexp.MustCompile(`/benchmarks/rebuilds/candidates/new\?subset=one$`)
	require.NoError(t, expect.Page(page).ToHaveURL(formAddress), "the address bar holds the form's own address")
	shot(t, page, "candidates-refused-js-390")

	_, err = page.Reload()
	require.NoError(t, err)
	require.NoError(t, expect.Locator(form).ToBeVisible(), "a reload shows the form")
	require.NoError(t, expect.Locator(notFound).ToHaveCount(0))
	require.NoError(t, expect.Locator(form.Locator("fieldset.cand-row")).ToHaveCount(1), "of the same subset")
	shot(t, page, "candidates-reloaded-js-390")

	// Away and back again.
	_, err = page.Goto(base + "/runs")
	require.NoError(t, err)
	_, err = page.GoBack()
	require.NoError(t, err)
	require.NoError(t, expect.Locator(form).ToBeVisible())
	require.NoError(t, expect.Locator(notFound).ToHaveCount(0))

	// The address the form used to post to leads to the form.
	_, err = page.Goto(base + "/benchmarks/rebuilds/candidates?subset=one")
	require.NoError(t, err)
	require.NoError(t, expect.Page(page).ToHaveURL(formAddress))
	require.NoError(t, expect.Locator(form).ToBeVisible())
	require.NoError(t, expect.Locator(notFound).ToHaveCount(0))
}
