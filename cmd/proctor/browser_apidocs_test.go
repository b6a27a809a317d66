package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"
)

// TestBrowser_APIDocs follows the footer's API link from the home page to the
// API documentation, reads a route there (who may call it, its parameters and
// curl example) through the page's own index, opens the OpenAPI document it
// links to, and looks at the page in dark mode, at a phone's width (nothing
// wider than the screen) and without JavaScript.
func TestBrowser_APIDocs(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	browserOptionsOrSkip(t)
	base := env.serve(t)
	b := launchBrowser(t)
	page := newBrowserPage(t, b, 1280, 900)
	expect := browserExpect(t)

	_, err := page.Goto(base + "/")
	require.NoError(t, err)
	require.NoError(t, page.GetByRole("navigation", playwright.PageGetByRoleOptions{Name: "Footer"}).GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "API"}).Click())
	require.NoError(t, expect.Page(page).ToHaveURL(base+"/api"))
	require.NoError(t, expect.Locator(page.GetByRole("heading", playwright.PageGetByRoleOptions{Level: playwright.Int(1)})).ToHaveText("Proctor API v1"))
	for _, group := range []string{"Runs", "Submissions", "Leaderboards", "Schemas"} {
		require.NoError(t, expect.Locator(page.GetByRole("heading", playwright.PageGetByRoleOptions{Name: group, Level: playwright.Int(2), Exact: playwright.Bool(true)})).ToBeVisible())
	}
	ops, err := page.GetByTestId("api-op").Count()
	require.NoError(t, err)
	require.Greater(t, ops, 40)
	viewShot(t, page, "apidocs")

	// The Submissions index links to the part upload's entry.
	group := page.Locator("section.apidocs-group", playwright.PageLocatorOptions{Has: page.GetByRole("heading", playwright.PageGetByRoleOptions{Name: "Submissions", Level: playwright.Int(2)})})
	require.NoError(t, group.GetByRole("link", playwright.LocatorGetByRoleOptions{Name: "/api/v1/submissions/{id}/parts/{n}", Exact: playwright.Bool(true)}).Click())
	require.NoError(t, expect.Page(page).ToHaveURL(base+"/api#op-putSubmissionPart"))
	op := page.Locator("#op-putSubmissionPart")
	require.NoError(t, expect.Locator(op.GetByRole("heading", playwright.LocatorGetByRoleOptions{Level: playwright.Int(3)})).ToHaveText("PUT /api/v1/submissions/{id}/parts/{n}"))
	require.NoError(t, expect.Locator(op.GetByTestId("api-op-who")).ToHaveText("team member, admin"))
	require.NoError(t, expect.Locator(op.GetByRole("table", playwright.LocatorGetByRoleOptions{Name: "Parameters of PUT /api/v1/submissions/{id}/parts/{n}"}).GetByRole("rowheader")).ToHaveText([]string{"id", "n", "Content-Length", "Content-MD5"}))
	require.NoError(t, expect.Locator(op.GetByTestId("api-op-curl")).ToContainText("--data-binary @part-0001"))
	require.NoError(t, expect.Locator(op.GetByRole("table", playwright.LocatorGetByRoleOptions{Name: "Responses of PUT /api/v1/submissions/{id}/parts/{n}"})).ToContainText("SubmissionPart"))
	viewShot(t, page, "apidocs-operation")

	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	viewShot(t, page, "apidocs-dark")
	require.NoError(t, page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeLight}))

	// The machine-readable document it links to.
	res, err := page.Goto(base + "/api/v1/openapi.json")
	require.NoError(t, err)
	require.Equal(t, 200, res.Status())
	body, err := res.Body()
	require.NoError(t, err)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Paths, "/api/v1/submissions/{id}/parts/{n}")

	// A phone: tables and examples scroll inside their boxes, the page does not.
	phone := newBrowserPage(t, b, 390, 844)
	_, err = phone.Goto(base + "/api#op-getLeaderboard")
	require.NoError(t, err)
	require.NoError(t, expect.Locator(phone.Locator("#op-getLeaderboard")).ToBeInViewport())
	overflow, err := phone.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
	require.NoError(t, err)
	require.LessOrEqual(t, toInt(t, overflow), 0, "the page is wider than the phone's screen")
	viewShot(t, phone, "apidocs-phone")
	require.NoError(t, phone.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: playwright.ColorSchemeDark}))
	viewShot(t, phone, "apidocs-phone-dark")

	// Without JavaScript the page is the same.
	plain := newBrowserContext(t, b, playwright.BrowserNewContextOptions{JavaScriptEnabled: playwright.Bool(false), Viewport: &playwright.Size{Width: 1280, Height: 900}})
	noJS, err := plain.NewPage()
	require.NoError(t, err)
	_, err = noJS.Goto(base + "/api")
	require.NoError(t, err)
	require.NoError(t, expect.Locator(noJS.GetByTestId("api-op")).ToHaveCount(ops))
}

// viewShot saves what the viewport shows: the documentation is too long a
// page for full-page screenshots.
func viewShot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(screenshotDir(t), name+".png"))})
	require.NoError(t, err)
}

// toInt reads a number Playwright returned from the page.
func toInt(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}
