package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// candidateBench is a three-task benchmark with a two-task subset. The
// importer does not know the hidden-tests evaluator yet, so the fixture
// imports it as "none" and marks it hidden-tests afterwards.
const candidateBench = `{"proctor_benchmark": 1, "name": "Rebuilds", "evaluator": "none", "subsets": {"pair": {"task_ids": ["s1", "s2"]}}}
{"id": "s1", "intent": "Rebuild the shop.", "start_urls": ["__SHOP__/"], "sites": ["shop"]}
{"id": "s2", "intent": "Rebuild the forum.", "start_urls": ["__FORUM__/"], "sites": ["forum"]}
{"id": "s3", "intent": "Rebuild the wiki.", "start_urls": ["__WIKI__/"], "sites": ["wiki"]}
`

// candidateFixture is the agent fixture with the hidden-tests benchmark
// "rebuilds", the rubric benchmark "mini", and the upload agents "builder"
// (lab) and "theirs" (other).
type candidateFixture struct {
	*agentFixture
}

func newCandidateFixture(t *testing.T, db *storage.DB) *candidateFixture {
	t.Helper()
	af := newAgentFixture(t, db)
	importBenchFixture(t, db)
	_, err := db.ImportBenchmark(af.system, "rebuilds", parseBenchFixture(t, candidateBench), "rebuilds.jsonl", 0)
	require.NoError(t, err)
	markHiddenTests(t, db, "rebuilds")
	require.NoError(t, servicetest.CreateAgent(db, af.member, "lab", &models.Agent{Name: "Builder", Kind: models.AgentUpload}, nil))
	require.NoError(t, servicetest.CreateAgent(db, af.stranger, "other", &models.Agent{Name: "Theirs", Kind: models.AgentUpload}, nil))
	return &candidateFixture{agentFixture: af}
}

// markHiddenTests turns an imported benchmark into a hidden-tests one.
func markHiddenTests(t *testing.T, db *storage.DB, slug string) {
	t.Helper()
	require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", slug).Updates(map[string]any{"evaluator": models.EvaluatorHiddenTests, "grades": models.GradesCandidates}).Error)
}

// submitCandidates submits candidates through the candidate service (any
// host accepted, no quota), enqueuing through jobs.
func submitCandidates(ctx context.Context, db *storage.DB, req models.CandidateRunRequest, jobs servicetest.HiddenTestsFunc) (*models.Run, error) {
	return service.NewCandidates(db, jobs, servicetest.AllowHosts{}, service.CandidateOptions{}).SubmitCandidates(ctx, req)
}

// goodCandidates answers the pair subset.
func goodCandidates() models.CandidateRunRequest {
	return models.CandidateRunRequest{
		TeamSlug: "lab", AgentSlug: "builder", BenchmarkSlug: "rebuilds", Subset: "pair", Notes: " built in an hour ",
		Candidates: []models.CandidateSpec{
			{TaskID: "s2", BaseURL: "https://agent.example.com/forum/", CostUSD: 1.5, TokensIn: 1000, TokensOut: 200, Turns: 12},
			{TaskID: " s1 ", BaseURL: " http://agent.example.com:8080/shop ", RestartURL: "http://agent.example.com/restart",
				HealthURL: "http://internal.test/health", CostUSD: 0.25, TokensIn: 10, TokensOut: 2, Turns: 3},
		},
	}
}

// TestStore_InsertCandidateRun: the run, its attempts with the reported
// costs, their candidates, the totals and the jobs are written in one
// transaction, under the team's quota; a failed enqueue or a refused quota
// writes nothing.
func TestStore_InsertCandidateRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCandidateFixture(t, db)
		var tasks []models.Task
		require.NoError(t, db.Gorm().Joins("JOIN benchmark_versions v ON v.id = tasks.version_id").
			Joins("JOIN benchmarks b ON b.id = v.benchmark_id").Where("b.slug = ?", "rebuilds").Order("position").Find(&tasks).Error)
		require.Len(t, tasks, 3)
		var agent models.Agent
		require.NoError(t, db.Gorm().Where("slug = ?", "builder").First(&agent).Error)
		now := time.Now().UTC()
		newRun := func() *models.Run {
			return &models.Run{TeamID: f.team.ID, AgentID: agent.ID, VersionID: tasks[0].VersionID, SubsetName: "pair",
				Status: models.RunRunning, Origin: models.OriginUploaded, AgentSnapshot: "{}", MaxSteps: 1, Parallelism: 1,
				CreatedAt: now, StartedAt: &now, TasksTotal: 2}
		}
		ids := []int64{tasks[0].ID, tasks[1].ID}
		cands := map[int64]models.CandidateSpec{
			tasks[0].ID: {TaskID: "s1", BaseURL: "http://a.test/", RestartURL: "http://a.test/r", CostUSD: 0.25, TokensIn: 10, TokensOut: 2, Turns: 3},
			tasks[1].ID: {TaskID: "s2", BaseURL: "http://b.test/", CostUSD: 1.5, TokensIn: 1000, TokensOut: 200, Turns: 12},
		}
		anyQuota := func(int64) error { return nil }

		var enqueued []int64
		run := newRun()
		err := db.InsertCandidateRun(f.member, run, ids, cands, "2 candidates", anyQuota, func(_ context.Context, tx *sql.Tx, r *models.Run, attemptIDs []int64) error {
			require.NotNil(t, tx)
			require.Equal(t, run.ID, r.ID)
			enqueued = attemptIDs
			return nil
		})
		require.NoError(t, err)
		require.InDelta(t, 1.75, run.Cost, 1e-9, "the run is reloaded with its totals")
		require.EqualValues(t, 1010, run.TokensIn)
		require.Equal(t, 15, run.StepsSum)
		require.Len(t, enqueued, 2)
		list, err := db.RunCandidates(f.member, run.ID)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "http://a.test/r", list[0].RestartURL)
		runID, c, err := db.AttemptCandidate(f.member, enqueued[1])
		require.NoError(t, err)
		require.Equal(t, run.ID, runID)
		require.Equal(t, "http://b.test/", c.BaseURL)

		before := countRows(t, db, "runs", "")
		err = db.InsertCandidateRun(f.member, newRun(), ids, cands, "", anyQuota, func(context.Context, *sql.Tx, *models.Run, []int64) error {
			return errors.New("queue down")
		})
		require.Error(t, err)
		overQuota := func(recent int64) error {
			require.EqualValues(t, 1, recent, "the team's runs of the last day")
			return models.Errorf(models.ERATELIMIT, "over")
		}
		err = db.InsertCandidateRun(f.member, newRun(), ids, cands, "", overQuota, func(context.Context, *sql.Tx, *models.Run, []int64) error {
			t.Fatal("a refused run queues nothing")
			return nil
		})
		require.Equal(t, models.ERATELIMIT, models.ErrorCode(err))
		require.Equal(t, before, countRows(t, db, "runs", ""))
		require.EqualValues(t, 2, countRows(t, db, "hidden_candidates", ""))
	})
}
