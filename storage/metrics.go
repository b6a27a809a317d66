package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// metricsRow is one attempt with its task's labels and its current judge and
// rubric verdicts, as the metrics query returns it.
type metricsRow struct {
	TaskID         int64
	Outcome        string
	Steps          int
	TokensIn       int64
	TokensOut      int64
	Cost           float64
	Unknown        models.Unknown `gorm:"embedded"`
	DurationMS     int64          `gorm:"column:duration_ms"`
	ErrorClass     string
	SiteKey        string
	Domain         string
	Difficulty     string
	TaskType       string
	IntentTemplate string
	Attributes     models.JSONStrings
	JudgeScore     *float64
	RubricScore    *float64
	RubricVerdict  *string
}

// runMetricsAttempts loads a run's attempts as the metrics see them, in one query.
func runMetricsAttempts(q *gorm.DB, runID int64) ([]models.MetricsAttempt, error) {
	var rows []metricsRow
	err := q.Table("attempts a").Select(`a.task_id, a.outcome, a.steps, a.tokens_in, a.tokens_out, a.cost, a.duration_ms, a.error_class,
		a.steps_unknown, a.tokens_unknown, a.cost_unknown,
		t.site_key, t.domain, t.difficulty, t.task_type, t.intent_template, t.attributes,
		j.judge_score AS judge_score, rb.score AS rubric_score, rb.verdict AS rubric_verdict`).
		Joins("JOIN tasks t ON t.id = a.task_id").
		Joins("LEFT JOIN evaluations j ON j.attempt_id = a.id AND j.kind = ? AND j.is_current = ? AND j.verdict <> ?", models.EvaluationJudge, true, models.OutcomeError).
		Joins("LEFT JOIN evaluations rb ON rb.attempt_id = a.id AND rb.kind = ? AND rb.is_current = ? AND rb.verdict <> ?", models.EvaluationRubric, true, models.OutcomeError).
		Where("a.run_id = ?", runID).Order("a.task_id").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "run attempts")
	}
	out := make([]models.MetricsAttempt, len(rows))
	for i, r := range rows {
		a := models.MetricsAttempt{
			TaskID: r.TaskID, Outcome: r.Outcome, JudgeScore: r.JudgeScore, RubricScore: r.RubricScore,
			Steps: r.Steps, TokensIn: r.TokensIn, TokensOut: r.TokensOut, Cost: r.Cost, Unknown: r.Unknown, DurationMS: r.DurationMS,
			ErrorClass: r.ErrorClass, Site: r.SiteKey, Domain: r.Domain, Difficulty: r.Difficulty,
			TaskType: r.TaskType, IntentTemplate: r.IntentTemplate, Attributes: r.Attributes,
		}
		if r.RubricScore != nil && r.RubricVerdict != nil {
			perfect := *r.RubricVerdict == models.OutcomeSuccess
			a.Perfect = &perfect
		}
		out[i] = a
	}
	return out, nil
}

// subsetTasks maps each named subset of a version to its task ids.
func subsetTasks(q *gorm.DB, versionID int64) (map[string]map[int64]bool, []string, error) {
	var rows []struct {
		Name   string
		TaskID int64
	}
	if err := q.Table("subsets s").Select("s.name, st.task_id").Joins("JOIN subset_tasks st ON st.subset_id = s.id").
		Where("s.version_id = ?", versionID).Scan(&rows).Error; err != nil {
		return nil, nil, wrap(err, "subsets")
	}
	sets := map[string]map[int64]bool{}
	var names []string
	for _, r := range rows {
		if sets[r.Name] == nil {
			sets[r.Name] = map[int64]bool{}
			names = append(names, r.Name)
		}
		sets[r.Name][r.TaskID] = true
	}
	slices.Sort(names)
	return sets, names, nil
}

// runScopes returns a run's attempts on its own subset and, for a full run,
// on every named subset of its version: what its metrics are computed from.
func runScopes(q *gorm.DB, run *models.Run) ([]models.AttemptScope, error) {
	attempts, err := runMetricsAttempts(q, run.ID)
	if err != nil {
		return nil, err
	}
	out := []models.AttemptScope{{Subset: run.SubsetName, Attempts: attempts}}
	if run.SubsetName != models.SubsetFull {
		return out, nil
	}
	sets, names, err := subsetTasks(q, run.VersionID)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		var in []models.MetricsAttempt
		for _, a := range attempts {
			if sets[name][a.TaskID] {
				in = append(in, a)
			}
		}
		out = append(out, models.AttemptScope{Subset: name, Restricted: true, Attempts: in})
	}
	return out, nil
}

// runHiddenByTask tallies a hidden-tests run's results per task; tasks
// without results are absent.
func runHiddenByTask(q *gorm.DB, runID int64) (map[int64]*models.HiddenSummary, error) {
	byAttempt, err := runHiddenSummaries(q, runID)
	if err != nil {
		return nil, err
	}
	var attempts []struct {
		ID     int64
		TaskID int64
	}
	if err := q.Table("attempts").Select("id, task_id").Where("run_id = ?", runID).Scan(&attempts).Error; err != nil {
		return nil, wrap(err, "run attempts")
	}
	out := map[int64]*models.HiddenSummary{}
	for _, a := range attempts {
		if s := byAttempt[a.ID]; s != nil {
			out[a.TaskID] = s
		}
	}
	return out, nil
}

// RunMetricsSource is what a run's metrics are computed from.
type RunMetricsSource struct {
	Run         models.Run
	BenchmarkID int64
	// Scopes are the run's attempts on its own subset, then on each named
	// subset for a full run.
	Scopes []models.AttemptScope
	// HiddenByTask is each task's hidden-tests tally for a hidden-tests
	// run (tasks without results absent); nil for other runs.
	HiddenByTask map[int64]*models.HiddenSummary
	// Now is when the rows are computed.
	Now time.Time
}

// LeaderboardRows computes a run's precomputed leaderboard rows, one per
// subset it has numbers for.
type LeaderboardRows func(src RunMetricsSource) ([]*models.LeaderboardEntry, error)

// RefreshRunMetrics replaces a run's leaderboard rows with those rows
// computes from its attempts, in one transaction, unless they already
// reflect every evaluation recorded for the run.
func (db *DB) RefreshRunMetrics(ctx context.Context, runID int64, rows LeaderboardRows) error {
	return db.tx(ctx, func(tx *gorm.DB) error {
		var run models.Run
		if err := tx.First(&run, runID).Error; err != nil {
			return wrap(err, "run")
		}
		// The version is read before the attempts: rows computed from newer
		// evaluations than it counts are only recomputed once more, never stale.
		if run.MetricsVersion == run.EvaluationsVersion && run.EvaluationsVersion > 0 {
			return nil
		}
		var benchmarkIDs []int64
		if err := tx.Model(&models.BenchmarkVersion{}).Where("id = ?", run.VersionID).Pluck("benchmark_id", &benchmarkIDs).Error; err != nil || len(benchmarkIDs) == 0 {
			return wrap(err, "benchmark version")
		}
		scopes, err := runScopes(tx, &run)
		if err != nil {
			return err
		}
		b, err := benchmarkOfVersion(tx, run.VersionID)
		if err != nil {
			return err
		}
		src := RunMetricsSource{Run: run, BenchmarkID: benchmarkIDs[0], Scopes: scopes, Now: db.now()}
		if b.gradesCandidates() {
			if src.HiddenByTask, err = runHiddenByTask(tx, runID); err != nil {
				return err
			}
		}
		entries, err := rows(src)
		if err != nil {
			return err
		}
		if err := tx.Where("run_id = ?", runID).Delete(&models.LeaderboardEntry{}).Error; err != nil {
			return wrap(err, "leaderboard entries")
		}
		for _, e := range entries {
			if err := tx.Create(e).Error; err != nil {
				return wrap(err, "leaderboard entry")
			}
		}
		return wrap(tx.Model(&models.Run{}).Where("id = ?", runID).Update("metrics_version", run.EvaluationsVersion).Error, "run")
	})
}

// RunReports returns a run's stored metrics on its own subset first, then on
// every named subset for a full run, when its precomputed rows reflect every
// verdict; otherwise it returns nil reports and the attempts to compute them
// from now. ENOTFOUND when the scope does not see the run.
func (db *DB) RunReports(ctx context.Context, scope models.RunScope, runID int64) ([]models.MetricsReport, []models.AttemptScope, error) {
	q := db.q(ctx)
	run, _, err := db.runAccess(q, scope, runID, false)
	if err != nil {
		return nil, nil, err
	}
	if run.MetricsVersion == run.EvaluationsVersion {
		// Otherwise the metrics job has not caught up with the latest verdicts
		// yet (it runs a second after them): this one run's numbers are
		// computed now rather than shown stale.
		var entries []models.LeaderboardEntry
		if err := q.Where("run_id = ?", runID).Find(&entries).Error; err != nil {
			return nil, nil, wrap(err, "leaderboard entries")
		}
		if len(entries) > 0 {
			out, err := storedReports(entries)
			if err != nil {
				return nil, nil, err
			}
			slices.SortStableFunc(out, func(a, b models.MetricsReport) int {
				switch {
				case a.Restricted != b.Restricted:
					if !a.Restricted {
						return -1
					}
					return 1
				case a.Subset < b.Subset:
					return -1
				case a.Subset > b.Subset:
					return 1
				}
				return 0
			})
			return out, nil, nil
		}
	}
	scopes, err := runScopes(q, run)
	return nil, scopes, err
}

// storedReports decodes the metrics stored with leaderboard rows.
func storedReports(entries []models.LeaderboardEntry) ([]models.MetricsReport, error) {
	out := make([]models.MetricsReport, 0, len(entries))
	for _, e := range entries {
		var rm models.MetricsReport
		if err := json.Unmarshal([]byte(e.Metrics), &rm); err != nil {
			return nil, wrap(err, fmt.Sprintf("leaderboard metrics of run %d", e.RunID))
		}
		out = append(out, rm)
	}
	return out, nil
}
