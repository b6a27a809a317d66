package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/sandbox"
	"proctor/service/servicetest"
	"proctor/storage/storagetest"
)

// TestProgram_Rescore queues evaluation jobs for finished attempts of one run,
// one benchmark or everything, and reports command-line mistakes.
func TestProgram_Rescore(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t)
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, exitOK, code, stderr)

	// One run of the sandbox with one attempt finished and graded.
	app := env.open(t)
	ctx := context.Background()
	system := models.WithActor(ctx, models.SystemActor())
	u, err := app.DB.CreateUser(ctx, "rescore@example.org", "Rescore", "correct horse battery", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
	_, err = servicetest.Teams(app.DB).CreateTeam(member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(app.DB, member, "lab", &models.Agent{Name: "Replayer", Kind: models.AgentReplay}, nil))
	run, err := servicetest.QueueRun(member, app.DB, models.RunRequest{TeamSlug: "lab", AgentSlug: "replayer", BenchmarkSlug: sandbox.Slug, Subset: "hard"})
	require.NoError(t, err)
	var ids []int64
	require.NoError(t, app.DB.DispatchRun(system, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	// Every attempt, queued or not: the test plays them itself.
	require.NoError(t, app.DB.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &ids).Error)
	status, spec, err := app.DB.ClaimAttempt(system, ids[0], storagetest.Claimant(time.Hour))
	require.NoError(t, err)
	require.Equal(t, models.ClaimOK, status)
	require.NoError(t, app.DB.FinishEpisode(system, ids[0], spec.Try, models.EpisodeOutcome{Steps: 1}, func(context.Context, *sql.Tx) error { return nil }, nil))
	score := 1.0
	_, err = app.DB.RecordEvaluation(system, ids[0], &models.Evaluation{Evaluator: "webarena-verified", Verdict: models.OutcomeSuccess, Score: &score})
	require.NoError(t, err)

	jobs := func() int64 {
		var n int64
		require.NoError(t, app.DB.Gorm().Table("river_job").Where("kind = ? AND CAST(args AS TEXT) LIKE ?", "evaluate", "%rescore_id%").Count(&n).Error)
		return n
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", fmt.Sprint(run.ID)}, fmt.Sprintf("queued 1 attempt of run %d for re-scoring", run.ID)},
		{[]string{"--benchmark", sandbox.Slug}, "queued 1 attempt of benchmark " + sandbox.Slug},
		{[]string{"--all"}, "queued 1 attempt of every benchmark"},
	} {
		code, stdout, stderr := env.run(t, "", append([]string{"rescore"}, tc.args...)...)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, tc.want)
	}
	require.EqualValues(t, 3, jobs(), "one evaluation job per finished attempt and request")

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "choose exactly one of --run, --benchmark and --all"},
		{[]string{"--run", "1", "--all"}, exitUsage, "choose exactly one"},
		{[]string{"--run", "-3"}, exitUsage, "--run must be a run id"},
		{[]string{"--run", "999999"}, exitNotFound, "Run 999999 not found"},
		{[]string{"--benchmark", "nope"}, exitNotFound, "not found"},
		{[]string{"--all", "extra"}, exitUsage, "rescore takes no arguments"},
	} {
		code, _, stderr := env.run(t, "", append([]string{"rescore"}, tc.args...)...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		require.Contains(t, stderr, tc.want, "%v", tc.args)
		require.False(t, strings.Contains(stderr, "\n\n"), "one line")
	}
	require.EqualValues(t, 3, jobs(), "refused commands queue nothing")
}
