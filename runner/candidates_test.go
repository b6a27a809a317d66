package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/importer"
	"proctor/internal/evaltest"
	"proctor/migrations"
	"proctor/models"
	"proctor/runner"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
	"proctor/vault"
)

// candidateBenchmark is a two-task benchmark, imported as "none" (the
// importer does not take the hidden-tests evaluator yet) and marked
// hidden-tests afterwards.
const candidateBenchmark = `{"proctor_benchmark": 1, "name": "Rebuilds", "evaluator": "none"}
{"id": "r1", "intent": "Rebuild the shop.", "start_urls": ["__SHOP__/"], "sites": ["shop"]}
{"id": "r2", "intent": "Rebuild the forum.", "start_urls": ["__FORUM__/"], "sites": ["forum"]}
`

// TestRunner_SubmitCandidates: a candidate run's hidden-tests jobs are
// inserted with it, one per attempt on the hidden-tests queue, on every
// database driver; a refused submission queues nothing.
func TestRunner_SubmitCandidates(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		sealer, err := vault.New(strings.Repeat("k", vault.MinSecretLength))
		require.NoError(t, err)
		db.UseAgentSecrets(sealer)
		r, err := runner.New(runner.Config{Evaluators: evaltest.Registry(),
			DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			AgentClient: func(timeout time.Duration) *http.Client { return &http.Client{Timeout: timeout} },
		})
		require.NoError(t, err)
		ctx := context.Background()
		sys := models.WithActor(ctx, models.SystemActor())
		ds, err := importer.Parse(evaltest.Registry(), models.FormatProctor, strings.NewReader(candidateBenchmark), nil)
		require.NoError(t, err)
		_, err = db.ImportBenchmark(sys, "rebuilds", ds, "rebuilds.jsonl", 0)
		require.NoError(t, err)
		require.NoError(t, db.Gorm().Model(&models.Benchmark{}).Where("slug = ?", "rebuilds").Updates(map[string]any{"evaluator": models.EvaluatorHiddenTests, "grades": models.GradesCandidates}).Error)
		u, err := db.CreateUser(ctx, "builder@example.org", "Builder", "correct horse battery", false)
		require.NoError(t, err)
		member := models.WithActor(ctx, models.Actor{UserID: u.ID, Email: u.Email})
		_, err = servicetest.Teams(db).CreateTeam(member, "Lab", "lab", "")
		require.NoError(t, err)
		require.NoError(t, servicetest.CreateAgent(db, member, "lab", &models.Agent{Name: "Builder", Kind: models.AgentUpload}, nil))

		req := models.CandidateRunRequest{TeamSlug: "lab", AgentSlug: "builder", BenchmarkSlug: "rebuilds", Candidates: []models.CandidateSpec{
			{TaskID: "r1", BaseURL: "http://93.184.216.34/shop"}, {TaskID: "r2", BaseURL: "http://93.184.216.34/forum"},
		}}
		candidates := servicetest.Candidates(db, r.Jobs())
		run, err := candidates.SubmitCandidates(member, req)
		require.NoError(t, err)
		var attempts []int64
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Pluck("id", &attempts).Error)
		jobs := hiddenTestsJobs(t, db)
		require.Len(t, jobs, 2)
		for i, j := range jobs {
			require.Equal(t, runner.HiddenTestsArgs{AttemptID: attempts[i], RunID: run.ID}, j)
		}

		req.Candidates[1].BaseURL = "http://127.0.0.1/forum"
		_, err = candidates.SubmitCandidates(member, req)
		require.Equal(t, "candidates[1].base_url", models.ErrorField(err))
		require.Len(t, hiddenTestsJobs(t, db), 2, "a refused submission queues nothing")
	})
}

// hiddenTestsJobs lists the queued hidden-tests jobs' arguments by attempt.
func hiddenTestsJobs(t *testing.T, db *storage.DB) []runner.HiddenTestsArgs {
	t.Helper()
	column := "CAST(args AS TEXT)"
	if db.Dialect() == migrations.SQLite {
		column = "json(args)" // River keeps SQLite's binary JSON
	}
	var raw []string
	require.NoError(t, db.Gorm().Raw("SELECT "+column+" FROM river_job WHERE kind = ? AND queue = ? ORDER BY id",
		runner.HiddenTestsArgs{}.Kind(), runner.QueueHiddenTests).Scan(&raw).Error)
	out := make([]runner.HiddenTestsArgs, len(raw))
	for i, s := range raw {
		require.NoError(t, json.Unmarshal([]byte(s), &out[i]), s)
	}
	return out
}
