package service

import (
	"context"
	"encoding/json"
	"fmt"

	"proctor/models"
	"proctor/stats"
	"proctor/storage"
)

// MetricsStore is what the metrics service needs from storage.
type MetricsStore interface {
	RefreshRunMetrics(ctx context.Context, runID int64, rows storage.LeaderboardRows) error
}

// Metrics computes runs' metrics and their precomputed leaderboard rows.
type Metrics struct {
	store MetricsStore
}

// NewMetrics returns the metrics service over store.
func NewMetrics(store MetricsStore) *Metrics {
	return &Metrics{store: store}
}

// RefreshRunMetrics recomputes a run's metrics and writes its leaderboard
// rows (one per subset it has numbers for) in one transaction, unless they
// already reflect every evaluation recorded for the run. EFORBIDDEN for any
// caller but the system: the queue computes metrics.
func (m *Metrics) RefreshRunMetrics(ctx context.Context, runID int64) error {
	if !models.ActorFrom(ctx).System {
		return models.Errorf(models.EFORBIDDEN, "Only the queue computes metrics.")
	}
	return m.store.RefreshRunMetrics(ctx, runID, LeaderboardRows)
}

// Reports computes a run's metrics on each of its scopes.
func Reports(scopes []models.AttemptScope) []models.MetricsReport {
	out := make([]models.MetricsReport, len(scopes))
	for i, s := range scopes {
		out[i] = stats.NewReport(s.Subset, s.Restricted, s.Attempts)
	}
	return out
}

// LeaderboardRows computes a run's precomputed leaderboard rows, one per
// scope; a hidden-tests run's rows rank by its hidden-tests pass rate.
func LeaderboardRows(src storage.RunMetricsSource) ([]*models.LeaderboardEntry, error) {
	out := make([]*models.LeaderboardEntry, len(src.Scopes))
	for i, s := range src.Scopes {
		e, err := leaderboardEntry(&src.Run, src.BenchmarkID, stats.NewReport(s.Subset, s.Restricted, s.Attempts), src)
		if err != nil {
			return nil, err
		}
		if src.HiddenByTask != nil {
			setHiddenRates(e, s.TaskIDs(), src.HiddenByTask)
		}
		out[i] = e
	}
	return out, nil
}

// leaderboardEntry is the precomputed row of a run's metrics on one subset.
func leaderboardEntry(run *models.Run, benchmarkID int64, rm models.MetricsReport, src storage.RunMetricsSource) (*models.LeaderboardEntry, error) {
	m := rm.Metrics
	raw, err := json.Marshal(rm)
	if err != nil {
		return nil, fmt.Errorf("encode metrics of run %d: %w", run.ID, err)
	}
	e := &models.LeaderboardEntry{
		RunID: run.ID, BenchmarkID: benchmarkID, VersionID: run.VersionID, SubsetName: rm.Subset, Restricted: rm.Restricted,
		Tasks: m.N, Successes: m.Successes, SuccessRate: m.SuccessRate, CILow: m.SuccessCI.Low, CIHigh: m.SuccessCI.High,
		PerfectRate: m.PerfectRate, Efficiency: m.Efficiency, MeanSteps: m.MeanSteps, CostPerTask: m.CostPerTask,
		Tokens: m.TokensIn + m.TokensOut, Unknown: m.Unknown, Metrics: string(raw), ComputedAt: src.Now,
	}
	if m.JudgeScore != nil {
		e.JudgeScore, e.Judged = &m.JudgeScore.Mean, m.JudgeScore.N
	}
	if m.RubricScore != nil {
		e.RubricScore = &m.RubricScore.Mean
	}
	return e, nil
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
