package hiddenfixture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"proctor/hiddentest"
	"proctor/importer"
	"proctor/models"
	"proctor/runner/hidden"
	"proctor/service"
	"proctor/storage"
)

// RebuildTask is the one task of the benchmark WriteRebuilds imports: the
// sample benchmark's (hiddenbench), a rebuild of the sandbox shop.
const RebuildTask = "shop-rebuild"

// OfflineBuildTest is the sample suite's one test Proctor cannot carry
// out: it does not host candidates, so it cannot build one without network.
// Both candidates have it not run.
const OfflineBuildTest = "sys-offline-build"

// BrokenRebuildFailures are the tests the sample's broken rebuild fails, by
// the defect that fails them (docs/hidden-tests.md, "The sample
// candidates"): 11 tests in all, some failed by two defects.
func BrokenRebuildFailures() map[string][]string {
	return map[string][]string{
		"wrong images":          {"b1-home-page", "b1-product-page", "b1-search-results"},
		"missing Orders tab":    {"b1-tab-orders", "b2-order-in-history"},
		"404 booking route":     {"req-checkout-empty-cart", "b2-order-in-history", "b2-stock-after-order", "b3-order-survives-restart", "b3-orders-private-per-visitor"},
		"state lost on restart": {"b3-cart-survives-restart", "b3-order-survives-restart", "b3-review-survives-restart"},
	}
}

// BrokenRebuildFailed lists the tests the broken rebuild fails, sorted,
// each once.
func BrokenRebuildFailed() []string {
	var ids []string
	for _, list := range BrokenRebuildFailures() {
		ids = append(ids, list...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// RebuildsOptions choose whose runs WriteRebuilds writes and how the
// benchmark grades them.
type RebuildsOptions struct {
	Slug string // the benchmark's slug; "sample-rebuilds" when empty
	// TeamID's agents CopyAgentID and BrokenAgentID submitted the copy and
	// the broken rebuild.
	TeamID        int64
	CopyAgentID   int64
	BrokenAgentID int64
	// Published publishes both runs.
	Published bool
	// PassThreshold is the benchmark's pass threshold; 0 for the default.
	PassThreshold float64
}

// Rebuilds is what WriteRebuilds wrote.
type Rebuilds struct {
	BenchmarkSlug string
	CopyRunID     int64
	BrokenRunID   int64
	// Attempts are the runs' one attempt each, by run id.
	Attempts map[int64]int64
}

// WriteRebuilds imports a one-task hidden-tests benchmark graded by the
// sample suite and writes the runs of the sample's two candidates: the copy,
// which passes every test but the offline build (not run here), and the
// broken rebuild, which fails the 11 tests its defects touch (31 of the 42
// that run pass). Unlike Write, the results are recorded through
// storage.SaveHiddenResults, as the hidden-tests job records them, so that
// the runs are graded (outcome, score, evaluation) and completed by the
// product's own rule; then their leaderboard entries are computed.
func WriteRebuilds(ctx context.Context, db *storage.DB, opt RebuildsOptions) (*Rebuilds, error) {
	if opt.Slug == "" {
		opt.Slug = "sample-rebuilds"
	}
	sys := models.WithActor(ctx, models.SystemActor())
	suite, err := hiddentest.Parse(bytes.NewReader(hiddentest.SandboxShopSuite()))
	if err != nil {
		return nil, fmt.Errorf("parse the sample suite: %w", err)
	}
	imported, err := db.ImportBenchmark(sys, opt.Slug, rebuildsDataset(opt.PassThreshold), opt.Slug+".jsonl", 0)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", opt.Slug, err)
	}
	g := db.Gorm().WithContext(ctx)
	var task models.Task
	if err := g.Where("version_id = ?", imported.Version.ID).Take(&task).Error; err != nil {
		return nil, fmt.Errorf("read the task: %w", err)
	}
	out := &Rebuilds{BenchmarkSlug: opt.Slug, Attempts: map[int64]int64{}}
	failed := BrokenRebuildFailed()
	for i, c := range []struct {
		agentID int64
		name    string
		fails   []string
		dst     *int64
	}{
		{opt.CopyAgentID, "copy", nil, &out.CopyRunID},
		{opt.BrokenAgentID, "broken", failed, &out.BrokenRunID},
	} {
		var results []models.HiddenTestResult
		for pos, test := range suite.Tests {
			r := models.HiddenTestResult{TestID: test.ID, Position: pos, Group: test.Group, Level: test.Level, Result: models.HiddenPassed, DurationMS: 600}
			switch {
			case test.ID == OfflineBuildTest:
				r.Result, r.Reason, r.DurationMS = models.HiddenNotRun, hidden.OfflineBuildReason, 0
			case slices.Contains(c.fails, test.ID):
				r.Result, r.Reason = models.HiddenFailed, test.ID+": the rebuild does not do what the reference does."
			}
			results = append(results, r)
		}
		runID, attemptID, err := writeRebuildRun(ctx, db, opt, imported.Version.ID, task.ID, c.agentID, c.name, time.Duration(i)*time.Minute)
		if err != nil {
			return nil, err
		}
		if _, err := db.SaveHiddenResults(sys, attemptID, models.HiddenOutcome{Try: 1, Results: results, Duration: 3 * time.Minute}, nil); err != nil {
			return nil, fmt.Errorf("grade the %s: %w", c.name, err)
		}
		if err := service.NewMetrics(db).RefreshRunMetrics(sys, runID); err != nil {
			return nil, fmt.Errorf("refresh the metrics of the %s: %w", c.name, err)
		}
		*c.dst = runID
		out.Attempts[runID] = attemptID
	}
	return out, nil
}

// writeRebuildRun writes a running candidate run of the agent with one
// attempt on its first try, as submitting a candidate and starting its
// tests leaves them.
func writeRebuildRun(ctx context.Context, db *storage.DB, opt RebuildsOptions, versionID, taskID, agentID int64, name string, offset time.Duration) (int64, int64, error) {
	g := db.Gorm().WithContext(ctx)
	var agent models.Agent
	if err := g.Take(&agent, agentID).Error; err != nil {
		return 0, 0, fmt.Errorf("read agent %d: %w", agentID, err)
	}
	snap, err := json.Marshal(models.SnapshotOf(&agent))
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now().UTC().Truncate(time.Second).Add(-time.Hour + offset)
	run := &models.Run{
		TeamID: opt.TeamID, AgentID: agentID, VersionID: versionID, SubsetName: models.SubsetFull,
		Status: models.RunRunning, Origin: models.OriginUploaded, AgentSnapshot: string(snap), Published: opt.Published,
		Notes: "The sample's " + name + ".", CreatedAt: t0, StartedAt: &t0, TasksTotal: 1, MaxSteps: 30, Parallelism: 1,
	}
	if err := g.Create(run).Error; err != nil {
		return 0, 0, fmt.Errorf("create the %s's run: %w", name, err)
	}
	attempt := &models.Attempt{
		RunID: run.ID, TaskID: taskID, Status: models.AttemptRunning, Tries: 1, StartedAt: &t0,
		Cost: 1.25, TokensIn: 40_000, TokensOut: 6_000, Steps: 30, CreatedAt: t0, UpdatedAt: t0,
	}
	if err := g.Create(attempt).Error; err != nil {
		return 0, 0, fmt.Errorf("create the %s's attempt: %w", name, err)
	}
	cand := &models.HiddenCandidate{AttemptID: attempt.ID, BaseURL: "https://" + name + ".rebuilds.example.org/{visitor}/shop", CreatedAt: t0}
	if err := g.Create(cand).Error; err != nil {
		return 0, 0, fmt.Errorf("create the %s's candidate: %w", name, err)
	}
	return run.ID, attempt.ID, nil
}

// rebuildsDataset is the sample benchmark's one task graded by the sample
// suite, with the given pass threshold (0 for the default).
func rebuildsDataset(threshold float64) *importer.Dataset {
	ds := &importer.Dataset{
		Format: models.FormatProctor, Evaluator: models.EvaluatorHiddenTests, Grades: models.GradesCandidates,
		Name: "Sample rebuilds", Description: "Rebuild the sandbox shop.",
		Sites: []importer.SiteSpec{{Name: "shop", Placeholder: "__SHOP__"}},
		Tasks: []models.Task{{
			ExternalID: RebuildTask, Intent: "Rebuild the shop so that it looks and behaves like the reference.",
			StartURLs: models.JSONStrings{"__SHOP__/"}, Sites: models.JSONStrings{"shop"}, SiteKey: "shop",
			TaskType: "build", Difficulty: models.DifficultyHard, Metadata: "{}", EvalSpec: string(hiddentest.SandboxShopSuite()),
		}},
	}
	if threshold != 0 {
		ds.PassThreshold = &threshold
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%v %v", ds.Tasks, threshold))
	ds.Checksum = hex.EncodeToString(sum[:])
	return ds
}
