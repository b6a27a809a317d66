package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestBrowser_OneTimePassword: at 1280 and 390 px, a user given a one-time
// password signs in, is taken to the password form, is told why a wrong
// current password is refused, chooses their own and is sent on to where
// they were going; the form and a new team's next steps fit the window.
func TestBrowser_OneTimePassword(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	base := env.serve(t)
	app := env.open(t)
	b := launchBrowser(t)
	expect := browserExpect(t)
	for _, width := range []int{1280, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			email := fmt.Sprintf("once%d@example.org", width)
			u, err := app.DB.CreateUser(context.Background(), email, "Once", "a one-time password", false)
			require.NoError(t, err)
			require.NoError(t, app.DB.ExpirePassword(context.Background(), u.ID))
			page := newBrowserPage(t, b, width, 900)
			fits := func(name string) {
				t.Helper()
				overflow, err := page.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
				require.NoError(t, err)
				require.LessOrEqual(t, overflow, 0, "%s scrolls sideways at %d px", name, width)
				shot(t, page, fmt.Sprintf("%s-%d", name, width))
			}

			_, err = page.Goto(base + "/login?next=%2Fteams")
			require.NoError(t, err)
			require.NoError(t, page.GetByLabel("Email").Fill(email))
			require.NoError(t, page.GetByLabel("Password").Fill("a one-time password"))
			require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
			require.NoError(t, expect.Locator(page.GetByTestId("one-time-password")).ToBeVisible())
			fits("one-time-password")

			require.NoError(t, page.GetByLabel("Current password").Fill("not the password"))
			require.NoError(t, page.GetByLabel("New password (at least 10 characters)").Fill("my very own password"))
			require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Change password"}).Click())
			require.NoError(t, expect.Locator(page.GetByTestId("error-current_password")).ToHaveText("This is not your current password."))
			fits("password-refused")

			require.NoError(t, page.GetByLabel("Current password").Fill("a one-time password"))
			require.NoError(t, page.GetByLabel("New password (at least 10 characters)").Fill("my very own password"))
			require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Change password"}).Click())
			require.NoError(t, expect.Page(page).ToHaveURL(base+"/teams"))

			form := page.GetByTestId("create-team-form")
			require.NoError(t, form.GetByLabel("Name", playwright.LocatorGetByLabelOptions{Exact: playwright.Bool(true)}).Fill(fmt.Sprintf("Team %d", width)))
			require.NoError(t, form.GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Create team"}).Click())
			require.NoError(t, expect.Locator(page.GetByTestId("team-next-steps")).ToBeVisible())
			fits("team-created")

			got, err := app.accountService().Authenticate(context.Background(), email, "my very own password")
			require.NoError(t, err)
			require.False(t, got.MustChangePassword)
			_, err = app.accountService().Authenticate(context.Background(), email, "a one-time password")
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
	}
}
