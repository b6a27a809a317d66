package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/sandbox"
	"proctor/service/servicetest"
)

// remoteBundle is a running server with the sandbox benchmark, a team "lab"
// with an upload-only agent ("uploader") and a scripted one ("scripted"), and
// an API token of the team's member; the remote verbs talk to it over HTTP.
type remoteBundle struct {
	env    testEnv // the server's environment
	app    *App    // the server's database and artifacts, to look at what happened
	server string
	token  string
	member context.Context // the team member, to create runs directly
}

// setupRemote seeds and starts a server; extra adds settings to its
// environment. The server works no jobs unless extra sets PROCTOR_EPISODES:
// queued runs stay unfinished unless a test moves them.
func setupRemote(t *testing.T, extra map[string]string) remoteBundle {
	t.Helper()
	env := newTestEnv(t)
	env["PROCTOR_EPISODES"] = "0"
	for k, v := range extra {
		env[k] = v
	}
	code, _, stderr := env.run(t, "", "seed")
	require.Equal(t, exitOK, code, stderr)
	app := env.open(t)
	ctx := context.Background()
	u, err := app.DB.CreateUser(ctx, "ci@example.org", "CI", "correct horse battery", false)
	require.NoError(t, err)
	member := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
	_, err = servicetest.Teams(app.DB).CreateTeam(member, "Lab", "lab", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(app.DB, member, "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	require.NoError(t, servicetest.CreateAgent(app.DB, member, "lab", &models.Agent{Name: "Scripted", Kind: models.AgentReplay,
		Config: `{"actions":[{"type":"stop","answer":"done"}]}`}, nil))
	_, token, err := servicetest.Teams(app.DB).CreateAPIToken(member, "CI")
	require.NoError(t, err)
	return remoteBundle{env: env, app: app, server: env.serve(t), token: token, member: member}
}

// cli runs a remote verb with PROCTOR_SERVER and PROCTOR_TOKEN set, in an
// environment of its own (the server's is read by its goroutines).
func (b remoteBundle) cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": b.token}.run(t, "", args...)
}

// runWithStatus creates a run of the scripted agent on the sandbox's hard
// subset and moves it to status, as the workers would leave it.
func (b remoteBundle) runWithStatus(t *testing.T, status string) int64 {
	t.Helper()
	run, err := servicetest.QueueRun(b.member, b.app.DB, models.RunRequest{TeamSlug: "lab", AgentSlug: "scripted", BenchmarkSlug: sandbox.Slug, Subset: "hard"})
	require.NoError(t, err)
	updates := map[string]any{"status": status}
	if (models.Run{Status: status}).Finished() {
		updates["finished_at"] = time.Now().UTC()
		updates["tasks_done"] = run.TasksTotal
	}
	require.NoError(t, b.app.DB.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Updates(updates).Error)
	return run.ID
}

func TestRemote_Runs(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, nil)
	completed := b.runWithStatus(t, models.RunCompleted)
	failed := b.runWithStatus(t, models.RunFailed)
	canceled := b.runWithStatus(t, models.RunCanceled)
	queued := b.runWithStatus(t, models.RunQueued)
	id := func(n int64) string { return fmt.Sprint(n) }

	t.Run("List", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "runs", "list", "--team", "lab")
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, "ID")
		require.Equal(t, 5, strings.Count(stdout, "\n"), "a header and four runs:\n%s", stdout)

		code, stdout, stderr = b.cli(t, "runs", "list", "--status", "completed", "--json")
		require.Equal(t, exitOK, code, stderr)
		var items []struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &items))
		require.Len(t, items, 1)
		require.Equal(t, completed, items[0].ID)

		code, stdout, _ = b.cli(t, "runs", "list", "--benchmark", "nope")
		require.Equal(t, exitOK, code)
		require.Equal(t, "no runs\n", stdout)
		code, stdout, _ = b.cli(t, "runs", "list", "--limit", "2", "--json")
		require.Equal(t, exitOK, code)
		require.NoError(t, json.Unmarshal([]byte(stdout), &items))
		require.Len(t, items, 2)
	})
	t.Run("Show", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "runs", "show", id(completed))
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, fmt.Sprintf("Run %d", completed))
		require.Contains(t, stdout, "completed (executed)")
		require.Contains(t, stdout, fmt.Sprintf("%s/runs/%d", b.server, completed))

		code, stdout, stderr = b.cli(t, "runs", "show", id(queued), "--json")
		require.Equal(t, exitOK, code, stderr)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &got))
		require.Equal(t, "queued", got["status"])
		require.Contains(t, got, "errors_by_class", "the server's JSON is printed as is")
	})
	t.Run("Wait", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"Completed", []string{id(completed)}, exitOK, ""},
			{"Failed", []string{id(failed)}, exitRunFailed, fmt.Sprintf("run %d failed", failed)},
			{"Canceled", []string{id(canceled)}, exitRunFailed, fmt.Sprintf("run %d canceled", canceled)},
			{"TimedOut", []string{id(queued), "--timeout", "300ms", "--interval", "100ms"}, exitTimedOut, fmt.Sprintf("run %d is still queued after 300ms", queued)},
			{"NotFound", []string{"999999"}, exitNotFound, "not found"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, stdout, stderr := b.cli(t, append([]string{"runs", "wait"}, tc.args...)...)
				require.Equal(t, tc.code, code, stderr)
				require.Contains(t, stderr, tc.want)
				if tc.code != exitNotFound {
					require.Contains(t, stdout, "/runs/"+tc.args[0], "the run's URL is printed however it ended")
				}
			})
		}
	})
	t.Run("Publish", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "runs", "publish", id(completed))
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, fmt.Sprintf("run %d published", completed))
		code, _, stderr = b.cli(t, "runs", "publish", id(completed))
		require.Equal(t, exitConflict, code, stderr)
		require.Contains(t, stderr, "already published")
		code, _, stderr = b.cli(t, "runs", "publish", id(queued))
		require.Equal(t, exitConflict, code, stderr)
	})
	t.Run("BadToken", func(t *testing.T) {
		code, stdout, stderr := testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": "prt_not-a-token"}.run(t, "", "runs", "publish", id(completed))
		requireOneLineError(t, exitAuth, "proctor runs: ", code, stdout, stderr)
		require.NotContains(t, stderr, "prt_not-a-token", "the token is never printed")
	})
	t.Run("Usage", func(t *testing.T) {
		for _, tc := range []struct {
			env  testEnv
			args []string
			want string
		}{
			{nil, []string{"runs"}, "expected a subcommand"},
			{nil, []string{"runs", "frobnicate"}, `unknown subcommand "frobnicate"`},
			{nil, []string{"runs", "show", "abc"}, `the run ID must be a positive number, got "abc"`},
			{nil, []string{"runs", "show"}, "expected exactly one run ID"},
			{nil, []string{"runs", "list", "--status", "done"}, `--status "done" is not a run status`},
			{nil, []string{"runs", "wait", "1", "--interval", "1ms"}, "--interval must be at least 100ms"},
			{testEnv{}, []string{"runs", "list"}, "no server: pass --server URL or set PROCTOR_SERVER"},
			{testEnv{"PROCTOR_SERVER": b.server}, []string{"runs", "publish", "1"}, "no API token: set PROCTOR_TOKEN"},
			{testEnv{"PROCTOR_SERVER": "localhost:8080", "PROCTOR_TOKEN": "t"}, []string{"runs", "list"}, "must be absolute"},
		} {
			var code int
			var stdout, stderr string
			if tc.env == nil {
				code, stdout, stderr = b.cli(t, tc.args...)
			} else {
				code, stdout, stderr = tc.env.run(t, "", tc.args...)
			}
			requireOneLineError(t, exitUsage, tc.want, code, stdout, stderr)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		code, stdout, stderr := testEnv{"PROCTOR_SERVER": "http://127.0.0.1:1", "PROCTOR_TOKEN": "t"}.run(t, "", "runs", "show", "1")
		requireOneLineError(t, exitError, "connection failed", code, stdout, stderr)
	})
}

func TestRemote_Queue(t *testing.T) {
	t.Parallel()
	b := setupRemote(t, nil)

	code, stdout, stderr := b.cli(t, "queue", "--agent", "lab/scripted", "--benchmark", sandbox.Slug, "--subset", "hard",
		"--max-steps", "5", "--max-cost", "0.5", "--notes", "from CI", "--json")
	require.Equal(t, exitOK, code, stderr)
	var queued struct {
		ID         int64  `json:"id"`
		Status     string `json:"status"`
		TasksTotal int    `json:"tasks_total"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &queued))
	require.Equal(t, 6, queued.TasksTotal)
	var run models.Run
	require.NoError(t, b.app.DB.Gorm().First(&run, queued.ID).Error)
	require.Equal(t, 5, run.MaxSteps)
	require.NotNil(t, run.MaxCost)
	require.InDelta(t, 0.5, *run.MaxCost, 1e-9)
	require.Equal(t, "from CI", run.Notes)

	code, stdout, stderr = b.cli(t, "queue", "--team", "lab", "--agent", "scripted", "--benchmark", sandbox.Slug)
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `^queued run \d+ \(27 tasks\)\n`+b.server+`/runs/\d+\n$`, stdout)

	t.Run("WaitTimesOut", func(t *testing.T) {
		code, stdout, stderr := b.cli(t, "queue", "--agent", "lab/scripted", "--benchmark", sandbox.Slug, "--wait", "--timeout", "300ms", "--interval", "100ms")
		require.Equal(t, exitTimedOut, code, stderr)
		require.Contains(t, stderr, "queued run ")
		require.Contains(t, stdout, b.server+"/runs/")
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"UploadOnlyAgent", []string{"--agent", "lab/uploader", "--benchmark", sandbox.Slug}, exitUsage, "agent: Uploader is an upload-only agent"},
		{"UnknownBenchmark", []string{"--agent", "lab/scripted", "--benchmark", "nope"}, exitUsage, `benchmark: there is no benchmark "nope"`},
		{"UnknownTeam", []string{"--agent", "nobody/scripted", "--benchmark", sandbox.Slug}, exitNotFound, "not found"},
		{"NoTeam", []string{"--agent", "scripted", "--benchmark", sandbox.Slug}, exitUsage, "--team is required"},
		{"TwoTeams", []string{"--team", "lab", "--agent", "other/scripted", "--benchmark", sandbox.Slug}, exitUsage, `names team "other"`},
		{"BadCost", []string{"--agent", "lab/scripted", "--benchmark", sandbox.Slug, "--max-cost", "-1"}, exitUsage, "expected a positive number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := b.cli(t, append([]string{"queue"}, tc.args...)...)
			requireOneLineError(t, tc.code, tc.want, code, stdout, stderr)
		})
	}
	t.Run("BadToken", func(t *testing.T) {
		code, stdout, stderr := testEnv{"PROCTOR_SERVER": b.server, "PROCTOR_TOKEN": "prt_not-a-token"}.run(t, "", "queue", "--agent", "lab/scripted", "--benchmark", sandbox.Slug)
		requireOneLineError(t, exitAuth, "proctor queue: ", code, stdout, stderr)
	})
}
