package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mxschmitt/playwright-go"
	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage/storagetest"
)

// seedCompletedRun stores what a finished sandbox run leaves behind, without
// running a browser episode: team "Lab" of Mia with a replay agent, and its run
// on the sandbox's hard subset with every attempt graded (the first two fail,
// the rest succeed). It returns the run's id.
func seedCompletedRun(t *testing.T, env testEnv) int64 {
	t.Helper()
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, 0, code, stderr)
	app := env.open(t)
	db := app.DB
	ctx := context.Background()
	sys := models.WithActor(ctx, models.SystemActor())
	mia, err := db.CreateUser(ctx, "mia@example.org", "Mia", "a long enough password", false)
	require.NoError(t, err)
	_, err = db.CreateUser(ctx, "ada@example.org", "Ada", "an admin passphrase", true)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: mia.ID, Email: mia.Email, Name: mia.Name})
	_, err = servicetest.Teams(db).CreateTeam(member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(db, member, "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay}, nil))
	run, err := servicetest.QueueRun(member, db, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "sandbox", Subset: "hard"})
	require.NoError(t, err)
	var ids []int64
	require.NoError(t, db.DispatchRun(sys, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	require.Len(t, ids, 6)
	for i, id := range ids {
		status, spec, err := db.ClaimAttempt(sys, id, storagetest.Claimant(time.Hour))
		require.NoError(t, err)
		require.Equal(t, models.ClaimOK, status)
		require.NoError(t, db.FinishEpisode(sys, id, spec.Try, models.EpisodeOutcome{Steps: 3 + i, Duration: time.Duration(2+i) * time.Second},
			func(context.Context, *sql.Tx) error { return nil }, nil))
		verdict, s := models.OutcomeSuccess, 1.0
		if i < 2 {
			verdict, s = models.OutcomeFailure, 0
		}
		_, err = db.RecordEvaluation(sys, id, &models.Evaluation{Evaluator: "webarena-verified", EvaluatorVersion: "webarena-verified@1",
			Verdict: verdict, Score: &s, Details: fmt.Sprintf(`{"status":%q,"score":%v,"evaluators_results":[]}`, verdict, s)})
		require.NoError(t, err)
	}
	return run.ID
}

// TestBrowser_PublishAndModerate: a team member publishes a completed run and
// filters its attempts, an administrator hides it with a reason, and an
// anonymous visitor sees the reason on the run's page and on the leaderboard's
// change log.
func TestBrowser_PublishAndModerate(t *testing.T) {
	t.Parallel()
	browserOptionsOrSkip(t)
	env := newTestEnv(t)
	runID := seedCompletedRun(t, env)
	base := env.serve(t)
	runURL := base + "/runs/" + strconv.FormatInt(runID, 10)
	const reason = "The agent's answers match a leaked copy of the references."

	b := launchBrowser(t)
	expect := browserExpect(t)
	newPage := func() playwright.Page { return newBrowserPage(t, b, 1280, 900) }
	login := func(page playwright.Page, email, password string) {
		_, err := page.Goto(base + "/login")
		require.NoError(t, err)
		require.NoError(t, page.GetByLabel("Email").Fill(email))
		require.NoError(t, page.GetByLabel("Password").Fill(password))
		require.NoError(t, page.GetByRole("button", playwright.PageGetByRoleOptions{Name: "Log in"}).Click())
		require.NoError(t, expect.Locator(page.GetByTestId("nav-account")).ToBeVisible())
	}

	// The team member publishes the completed run.
	member := newPage()
	login(member, "mia@example.org", "a long enough password")
	_, err := member.Goto(runURL)
	require.NoError(t, err)
	require.NoError(t, expect.Locator(member.GetByTestId("badge-private")).ToBeVisible())
	require.NoError(t, expect.Locator(member.GetByTestId("admin-moderation")).ToHaveCount(0))
	shot(t, member, "moderation-run-private")
	require.NoError(t, member.GetByTestId("publish-run").Click())
	require.NoError(t, expect.Locator(member.GetByTestId("flash")).ToContainText("Run published"))
	require.NoError(t, expect.Locator(member.GetByTestId("badge-published")).ToBeVisible())
	require.NoError(t, expect.Locator(member.GetByTestId("withdraw-run")).ToBeVisible())

	// Filtering the attempts swaps the table and keeps the address.
	require.NoError(t, expect.Locator(member.GetByTestId("attempt-count")).ToHaveText("Showing 1–6 of 6 attempts"))
	_, err = member.GetByTestId("filter-outcome").SelectOption(playwright.SelectOptionValues{Values: &[]string{"failure"}})
	require.NoError(t, err)
	require.NoError(t, member.GetByTestId("apply-attempt-filters").Click())
	require.NoError(t, expect.Locator(member.GetByTestId("attempt-count")).ToHaveText("Showing 1–2 of 2 attempts"))
	require.NoError(t, expect.Locator(member.GetByTestId("attempts-table").Locator("tbody tr")).ToHaveCount(2))
	require.NoError(t, expect.Page(member).ToHaveURL(runURL+"?outcome=failure"))
	require.NoError(t, expect.Locator(member.GetByTestId("flash")).ToHaveCount(1), "only the results were replaced")
	shot(t, member, "moderation-run-published-filtered")

	// An administrator hides it with a public reason.
	admin := newPage()
	login(admin, "ada@example.org", "an admin passphrase")
	_, err = admin.Goto(runURL)
	require.NoError(t, err)
	require.NoError(t, admin.GetByTestId("verify-run").Click())
	require.NoError(t, expect.Locator(admin.GetByTestId("badge-verified")).ToBeVisible())
	require.NoError(t, admin.GetByLabel("Public reason for hiding").Fill(reason))
	shot(t, admin, "moderation-admin-hide")
	require.NoError(t, admin.GetByTestId("hide-run").Click())
	require.NoError(t, expect.Locator(admin.GetByTestId("flash")).ToContainText("Run hidden"))
	require.NoError(t, expect.Locator(admin.GetByTestId("hidden-reason")).ToHaveText(reason))
	require.NoError(t, expect.Locator(admin.GetByTestId("unhide-run")).ToBeVisible())
	require.NoError(t, expect.Locator(admin.GetByTestId("attempts-table")).ToBeVisible(), "administrators still see everything")

	// An anonymous visitor reads the reason; the attempts stay with the team.
	visitor := newPage()
	_, err = visitor.Goto(runURL)
	require.NoError(t, err)
	require.NoError(t, expect.Locator(visitor.GetByTestId("hidden-reason")).ToHaveText(reason))
	require.NoError(t, expect.Locator(visitor.GetByTestId("badge-hidden")).ToBeVisible())
	require.NoError(t, expect.Locator(visitor.GetByTestId("attempts-withheld")).ToBeVisible())
	require.NoError(t, expect.Locator(visitor.GetByTestId("attempts-table")).ToHaveCount(0))
	require.NoError(t, expect.Locator(visitor.GetByTestId("run-moderation")).ToHaveCount(0))
	shot(t, visitor, "moderation-run-hidden-public")

	_, err = visitor.Goto(base + "/benchmarks/sandbox/leaderboard/changes")
	require.NoError(t, err)
	rows := visitor.GetByTestId("changes-table").Locator("tbody tr")
	require.NoError(t, expect.Locator(rows).ToHaveCount(3))
	require.NoError(t, expect.Locator(rows.First()).ToContainText("hidden"))
	require.NoError(t, expect.Locator(rows.First().GetByTestId("change-reason")).ToHaveText(reason))
	require.NoError(t, expect.Locator(rows.Nth(1)).ToContainText("verified"))
	require.NoError(t, expect.Locator(rows.Nth(2)).ToContainText("added"))
	shot(t, visitor, "moderation-changes")

	// The team still sees its whole run.
	_, err = member.Goto(runURL)
	require.NoError(t, err)
	require.NoError(t, expect.Locator(member.GetByTestId("hidden-reason")).ToHaveText(reason))
	require.NoError(t, expect.Locator(member.GetByTestId("attempts-table").Locator("tbody tr")).ToHaveCount(6))
}
