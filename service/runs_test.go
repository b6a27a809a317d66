package service_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// miniBench is a four-task benchmark with a two-task subset "smoke".
const miniBench = `{"proctor_benchmark": 1, "name": "Mini bench", "evaluator": "rubric", "subsets": {"smoke": {"description": "Two tasks", "task_ids": ["t1", "t3"]}}}
{"id": "t1", "intent": "Add the cheapest USB-C cable to the cart.", "start_urls": ["__SHOPPING__"], "sites": ["shopping"], "rubric": [{"requirement": "Cart holds one cable"}], "reference_actions": [{"type": "stop"}]}
{"id": "t2", "intent": "Which project has the most stars?", "start_urls": ["__GITLAB__/explore"], "rubric": [{"requirement": "Names the project"}]}
{"id": "t3", "intent": "Star the most discussed repository.", "start_urls": ["__GITLAB__"], "rubric": [{"requirement": "Stars it"}]}
{"id": "t4", "intent": "What is the shipping fee?", "start_urls": ["__SHOPPING__/checkout"], "rubric": [{"requirement": "Answers"}]}
`

// fixture is a database with the mini benchmark (references public), team
// "lab" with a member and agents "walker" (replay) and "uploader" (upload
// only), team "other" with its own member and agent, an administrator, and
// the system actor.
type fixture struct {
	db                             *storage.DB
	anon, member, other, admin     context.Context
	system                         context.Context
	memberUser, otherUser, adminID *models.User
}

func newFixture(t *testing.T, db *storage.DB) *fixture {
	t.Helper()
	sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
	require.NoError(t, err)
	db.UseAgentSecrets(sealer)
	f := &fixture{db: db, anon: context.Background(), system: models.WithActor(context.Background(), models.SystemActor())}
	f.memberUser, f.member = f.user(t, "member@runs.test", false)
	f.otherUser, f.other = f.user(t, "other@runs.test", false)
	f.adminID, f.admin = f.user(t, "admin@runs.test", true)
	_, err = servicetest.Teams(db).CreateTeam(f.member, "Lab", "lab", "")
	require.NoError(t, err)
	_, err = servicetest.Teams(db).CreateTeam(f.other, "Other", "other", "")
	require.NoError(t, err)
	require.NoError(t, servicetest.CreateAgent(db, f.member, "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay}, nil))
	require.NoError(t, servicetest.CreateAgent(db, f.member, "lab", &models.Agent{Name: "Uploader", Kind: models.AgentUpload}, nil))
	require.NoError(t, servicetest.CreateAgent(db, f.other, "other", &models.Agent{Name: "Theirs", Kind: models.AgentReplay}, nil))
	ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(miniBench), nil)
	require.NoError(t, err)
	_, err = db.ImportBenchmark(f.system, "mini", ds, "mini.jsonl", 0)
	require.NoError(t, err)
	require.NoError(t, db.SetRevealReferences(f.system, "mini", true))
	return f
}

func (f *fixture) user(t *testing.T, email string, admin bool) (*models.User, context.Context) {
	t.Helper()
	u, err := f.db.CreateUser(context.Background(), email, strings.Split(email, "@")[0], "correct horse battery", admin)
	require.NoError(t, err)
	return u, models.WithActor(context.Background(), models.Actor{UserID: u.ID, Email: u.Email, IsAdmin: u.IsAdmin})
}

// recordingJobs records the dispatch jobs enqueued, each inside a transaction,
// or fails them with err.
type recordingJobs struct {
	t          *testing.T
	dispatched []int64
	err        error
}

func (j *recordingJobs) DispatchRun(_ context.Context, tx *sql.Tx, runID int64) error {
	require.NotNil(j.t, tx, "the job is inserted inside the run's transaction")
	if j.err != nil {
		return j.err
	}
	j.dispatched = append(j.dispatched, runID)
	return nil
}

func (j *recordingJobs) RunEpisodes(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }

func (j *recordingJobs) Rescore(context.Context, *sql.Tx, []int64, string) error { return nil }

func (f *fixture) runs(t *testing.T, quota int) (*service.Runs, *recordingJobs) {
	jobs := &recordingJobs{t: t}
	return service.NewRuns(f.db, jobs, service.RunOptions{DailyRunQuota: quota}), jobs
}

func (f *fixture) countRuns(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.db.Gorm().Model(&models.Run{}).Count(&n).Error)
	return n
}

func TestRuns_QueueRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newFixture(t, db)
		runs, jobs := f.runs(t, 0)
		req := models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}

		run, err := runs.QueueRun(f.member, req)
		require.NoError(t, err)
		require.Equal(t, models.RunQueued, run.Status)
		require.Equal(t, models.SubsetFull, run.SubsetName)
		require.Equal(t, models.DefaultMaxSteps, run.MaxSteps)
		require.Equal(t, 4, run.TasksTotal)
		require.Equal(t, f.memberUser.ID, *run.CreatedBy)
		require.Contains(t, run.AgentSnapshot, `"slug":"walker"`)
		require.Equal(t, []int64{run.ID}, jobs.dispatched)

		t.Run("SnapshotSurvivesAgentEdits", func(t *testing.T) {
			model := "edited-model"
			_, err := servicetest.Teams(db).PatchAgent(f.member, "lab", "walker", &models.AgentPatch{Model: &model}, nil, nil)
			require.NoError(t, err)
			var got models.Run
			require.NoError(t, db.Gorm().First(&got, run.ID).Error)
			require.NotContains(t, got.AgentSnapshot, "edited-model")
		})
		for name, tc := range map[string]struct {
			ctx   context.Context
			req   models.RunRequest
			code  string
			field string
		}{
			"Anonymous":        {f.anon, req, models.EUNAUTHORIZED, ""},
			"OtherTeam":        {f.other, req, models.EFORBIDDEN, ""},
			"OtherTeamsAgent":  {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "theirs", BenchmarkSlug: "mini"}, models.EINVALID, "agent"},
			"UploadOnlyAgent":  {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "uploader", BenchmarkSlug: "mini"}, models.EINVALID, "agent"},
			"UnknownTeam":      {f.member, models.RunRequest{TeamSlug: "nope", AgentSlug: "walker", BenchmarkSlug: "mini"}, models.ENOTFOUND, ""},
			"UnknownBenchmark": {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "nope"}, models.EINVALID, "benchmark"},
			"UnknownSubset":    {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Subset: "nope"}, models.EINVALID, "subset"},
			"BadBudget":        {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", MaxSteps: 100000}, models.EINVALID, "max_steps"},
			"BadParallelism":   {f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Parallelism: -1}, models.EINVALID, "parallelism"},
		} {
			t.Run(name, func(t *testing.T) {
				before := len(jobs.dispatched)
				_, err := runs.QueueRun(tc.ctx, tc.req)
				require.Equal(t, tc.code, models.ErrorCode(err), "%v", err)
				require.Equal(t, tc.field, models.ErrorField(err))
				require.Len(t, jobs.dispatched, before, "nothing enqueued")
			})
		}
		t.Run("Quota", func(t *testing.T) {
			limited, _ := f.runs(t, 1)
			_, err := limited.QueueRun(f.member, req)
			require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "daily quota")
			_, err = limited.QueueRun(f.admin, req)
			require.NoError(t, err, "administrators are not held to the quota")
		})
		t.Run("EnqueueFailureWritesNothing", func(t *testing.T) {
			failing, jobs := f.runs(t, 0)
			jobs.err = context.DeadlineExceeded
			before := f.countRuns(t)
			_, err := failing.QueueRun(f.member, req)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, before, f.countRuns(t))
		})
		t.Run("NoQueue", func(t *testing.T) {
			before := f.countRuns(t)
			_, err := service.NewRuns(db, nil, service.RunOptions{}).QueueRun(f.member, req)
			require.Equal(t, models.EUNAVAILABLE, models.ErrorCode(err))
			require.Equal(t, before, f.countRuns(t))
		})
	})
}

// TestRuns_ReferenceReplayGate: a replay agent without its own script would
// reveal hidden reference actions, so teams may run it only on benchmarks whose
// references are public; admins always may. Re-runs obey the same gate.
func TestRuns_ReferenceReplayGate(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newFixture(t, db)
		runs, _ := f.runs(t, 0)
		req := models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"}
		earlier, err := runs.QueueRun(f.member, req)
		require.NoError(t, err, "references are public")

		require.NoError(t, db.SetRevealReferences(f.system, "mini", false))
		_, err = runs.QueueRun(f.member, req)
		require.Equal(t, models.EINVALID, models.ErrorCode(err))
		require.Equal(t, "agent", models.ErrorField(err))
		require.Contains(t, models.ErrorMessage(err), "hidden reference actions")
		_, err = runs.RerunRun(f.member, earlier.ID)
		require.Equal(t, "agent", models.ErrorField(err), "a re-run cannot reveal them either")

		script := `{"actions":[{"type":"stop","reason":"done"}]}`
		require.NoError(t, servicetest.CreateAgent(db, f.member, "lab", &models.Agent{Name: "Scripted", Kind: models.AgentReplay, Config: script}, nil))
		_, err = runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "scripted", BenchmarkSlug: "mini"})
		require.NoError(t, err, "a replay agent with its own script reveals nothing")

		_, err = runs.QueueRun(f.system, req)
		require.NoError(t, err, "administrators may replay references")
	})
}

func TestRuns_RerunRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newFixture(t, db)
		runs, jobs := f.runs(t, 0)
		cost := 2.5
		src, err := runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini", Subset: "smoke",
			MaxSteps: 12, MaxEpisodeSeconds: 120, MaxAgentCallSeconds: 30, MaxCost: &cost, Parallelism: 3, Notes: "first try"})
		require.NoError(t, err)
		model := "edited-model"
		_, err = servicetest.Teams(db).PatchAgent(f.member, "lab", "walker", &models.AgentPatch{Model: &model}, nil, nil)
		require.NoError(t, err)
		jobs.dispatched = nil

		for name, tc := range map[string]struct {
			ctx  context.Context
			id   int64
			code string
		}{
			"Anonymous": {f.anon, src.ID, models.ENOTFOUND},
			"OtherTeam": {f.other, src.ID, models.ENOTFOUND},
			"Missing":   {f.member, 999999, models.ENOTFOUND},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := runs.RerunRun(tc.ctx, tc.id)
				require.Equal(t, tc.code, models.ErrorCode(err), "%v", err)
				require.Empty(t, jobs.dispatched)
			})
		}

		again, err := runs.RerunRun(f.member, src.ID)
		require.NoError(t, err)
		require.NotEqual(t, src.ID, again.ID)
		require.Equal(t, []int64{again.ID}, jobs.dispatched)
		var got models.Run
		require.NoError(t, db.Gorm().First(&got, again.ID).Error)
		require.Equal(t, models.RunQueued, got.Status)
		require.Equal(t, src.AgentSnapshot, got.AgentSnapshot, "the same agent snapshot, not the edited agent")
		require.NotContains(t, got.AgentSnapshot, "edited-model")
		require.Equal(t, "smoke", got.SubsetName)
		require.Equal(t, src.VersionID, got.VersionID)
		require.Equal(t, 12, got.MaxSteps)
		require.Equal(t, 120, got.MaxEpisodeSeconds)
		require.Equal(t, 30, got.MaxAgentCallSeconds)
		require.InDelta(t, 2.5, *got.MaxCost, 1e-9)
		require.Equal(t, 3, got.Parallelism)
		require.Equal(t, 2, got.TasksTotal)
		require.Equal(t, "Re-run of run "+itoa(src.ID)+". first try", got.Notes)

		t.Run("Quota", func(t *testing.T) {
			limited, _ := f.runs(t, 2)
			_, err := limited.RerunRun(f.member, src.ID)
			require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "daily quota")
			_, err = limited.RerunRun(f.admin, src.ID)
			require.NoError(t, err, "administrators are not held to the quota")
		})
		t.Run("PublishedToOutsider", func(t *testing.T) {
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", src.ID).Update("published", true).Error)
			_, err := runs.RerunRun(f.other, src.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			_, err = runs.RerunRun(f.anon, src.ID)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
		})
		t.Run("UploadedRun", func(t *testing.T) {
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", src.ID).Update("origin", models.OriginUploaded).Error)
			_, err := runs.RerunRun(f.member, src.ID)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "nothing to re-run")
		})
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
