package storage

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"gorm.io/gorm"

	"proctor/models"
	"proctor/stats"
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
func runMetricsAttempts(q *gorm.DB, runID int64) ([]stats.Attempt, error) {
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
	out := make([]stats.Attempt, len(rows))
	for i, r := range rows {
		a := stats.Attempt{
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

// computeRunMetrics computes a run's metrics on its own subset and, for a
// full run, on every named subset of its version.
func computeRunMetrics(q *gorm.DB, run *models.Run) ([]stats.Report, error) {
	scoped, err := runReports(q, run)
	if err != nil {
		return nil, err
	}
	out := make([]stats.Report, len(scoped))
	for i, s := range scoped {
		out[i] = s.Report
	}
	return out, nil
}

// scopedReport is a run's metrics on one subset with the tasks they cover.
type scopedReport struct {
	stats.Report
	TaskIDs []int64
}

// runReports computes a run's metrics on its own subset and, for a full
// run, on every named subset of its version, each with its tasks.
func runReports(q *gorm.DB, run *models.Run) ([]scopedReport, error) {
	attempts, err := runMetricsAttempts(q, run.ID)
	if err != nil {
		return nil, err
	}
	taskIDs := func(in []stats.Attempt) []int64 {
		ids := make([]int64, len(in))
		for i, a := range in {
			ids[i] = a.TaskID
		}
		return ids
	}
	out := []scopedReport{{stats.NewReport(run.SubsetName, false, attempts), taskIDs(attempts)}}
	if run.SubsetName != models.SubsetFull {
		return out, nil
	}
	sets, names, err := subsetTasks(q, run.VersionID)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		var in []stats.Attempt
		for _, a := range attempts {
			if sets[name][a.TaskID] {
				in = append(in, a)
			}
		}
		out = append(out, scopedReport{stats.NewReport(name, true, in), taskIDs(in)})
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

// setHiddenRates fills an entry's hidden-tests columns: the mean over the
// entry's tasks of each task's pass rate (models.MeanHiddenRates), and the
// overall pass rate the board ranks by (stats.HiddenPassRate), which stands
// in the entry's success rate and interval with the counts behind it.
func setHiddenRates(e *models.LeaderboardEntry, taskIDs []int64, byTask map[int64]*models.HiddenSummary) {
	tasks := make([]*models.HiddenSummary, len(taskIDs))
	for i, id := range taskIDs {
		tasks[i] = byTask[id]
	}
	m := models.MeanHiddenRates(tasks)
	e.HiddenOverall, e.HiddenRequest, e.HiddenBrowser, e.HiddenSystem = m.Overall, m.Request, m.Browser, m.System
	p := stats.HiddenPassRate(tasks)
	passed, ran := p.Tests.Passed, p.Tests.Ran()
	e.HiddenPassed, e.HiddenRan = &passed, &ran
	e.SuccessRate, e.CILow, e.CIHigh = 0, p.Low, p.High
	if p.Rate != nil {
		e.SuccessRate = *p.Rate
	}
}

// RefreshRunMetrics recomputes a run's metrics and writes its leaderboard
// rows (one per subset it has numbers for) in one transaction, unless they
// already reflect every evaluation recorded for the run. System only.
func (db *DB) RefreshRunMetrics(ctx context.Context, runID int64) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue computes metrics.")
	}
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
		all, err := runReports(tx, &run)
		if err != nil {
			return err
		}
		b, err := benchmarkOfVersion(tx, run.VersionID)
		if err != nil {
			return err
		}
		var hiddenByTask map[int64]*models.HiddenSummary
		if b.gradesCandidates() {
			if hiddenByTask, err = runHiddenByTask(tx, runID); err != nil {
				return err
			}
		}
		if err := tx.Where("run_id = ?", runID).Delete(&models.LeaderboardEntry{}).Error; err != nil {
			return wrap(err, "leaderboard entries")
		}
		now := db.now()
		for _, rm := range all {
			e, err := leaderboardEntry(&run, benchmarkIDs[0], rm.Report, now)
			if err != nil {
				return err
			}
			if hiddenByTask != nil {
				setHiddenRates(e, rm.TaskIDs, hiddenByTask)
			}
			if err := tx.Create(e).Error; err != nil {
				return wrap(err, "leaderboard entry")
			}
		}
		return wrap(tx.Model(&models.Run{}).Where("id = ?", runID).Update("metrics_version", run.EvaluationsVersion).Error, "run")
	})
}

// leaderboardEntry is the precomputed row of a run's metrics on one subset.
func leaderboardEntry(run *models.Run, benchmarkID int64, rm stats.Report, now time.Time) (*models.LeaderboardEntry, error) {
	m := rm.Metrics
	raw, err := json.Marshal(rm)
	if err != nil {
		return nil, err
	}
	e := &models.LeaderboardEntry{
		RunID: run.ID, BenchmarkID: benchmarkID, VersionID: run.VersionID, SubsetName: rm.Subset, Restricted: rm.Restricted,
		Tasks: m.N, Successes: m.Successes, SuccessRate: m.SuccessRate, CILow: m.SuccessCI.Low, CIHigh: m.SuccessCI.High,
		PerfectRate: m.PerfectRate, Efficiency: m.Efficiency, MeanSteps: m.MeanSteps, CostPerTask: m.CostPerTask,
		Tokens: m.TokensIn + m.TokensOut, Unknown: m.Unknown, Metrics: string(raw), ComputedAt: now,
	}
	if m.JudgeScore != nil {
		e.JudgeScore, e.Judged = &m.JudgeScore.Mean, m.JudgeScore.N
	}
	if m.RubricScore != nil {
		e.RubricScore = &m.RubricScore.Mean
	}
	return e, nil
}

// RunMetrics returns a run's metrics on its own subset first, then on every
// named subset for a full run: the precomputed rows when they reflect every
// verdict, else computed now. ENOTFOUND when the caller may not see
// the run.
func (db *DB) RunMetrics(ctx context.Context, runID int64) ([]stats.Report, error) {
	q := db.q(ctx)
	run, _, err := db.runAccess(ctx, q, runID, false)
	if err != nil {
		return nil, err
	}
	if run.MetricsVersion != run.EvaluationsVersion {
		// The metrics job has not caught up with the latest verdicts yet (it
		// runs a second after them): compute this one run's numbers now rather
		// than show stale ones.
		return computeRunMetrics(q, run)
	}
	var entries []models.LeaderboardEntry
	if err := q.Where("run_id = ?", runID).Find(&entries).Error; err != nil {
		return nil, wrap(err, "leaderboard entries")
	}
	if len(entries) == 0 {
		return computeRunMetrics(q, run)
	}
	out := make([]stats.Report, 0, len(entries))
	for _, e := range entries {
		var rm stats.Report
		if err := json.Unmarshal([]byte(e.Metrics), &rm); err != nil {
			return nil, wrap(err, "leaderboard metrics")
		}
		out = append(out, rm)
	}
	slices.SortStableFunc(out, func(a, b stats.Report) int {
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
	return out, nil
}
