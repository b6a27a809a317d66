package storage

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// CompareRunRow is a compared run as the comparison query returns it: its
// listing fields plus what visibility and matching need.
type CompareRunRow struct {
	models.RunListItem
	TeamID             int64
	VersionID          int64
	BenchmarkVersion   int
	BenchmarkID        int64
	BenchmarkPublished bool
	AgentSnapshot      string
	HiddenAt           *time.Time
	HiddenReason       string
}

// CompareAttempt is one attempt of a compared run with its task's public labels.
type CompareAttempt struct {
	ID         int64
	RunID      int64
	Outcome    string
	ExternalID string
	Intent     string
	Difficulty string
	SiteKey    string
	Position   int
}

// CompareSource is what a comparison of runs is built from.
type CompareSource struct {
	// Runs are the compared runs in the order asked for.
	Runs []CompareRunRow
	// Reports are each run's stored metrics by run id; a run without stored
	// rows yet has its attempts in Scopes instead, to compute them from.
	Reports map[int64][]models.MetricsReport
	Scopes  map[int64][]models.AttemptScope
	// Attempts are every attempt of the runs with its task's public labels,
	// by run then task position.
	Attempts []CompareAttempt
}

// CompareSource loads the runs of ids to compare, in that order, with their
// metrics and attempts. ENOTFOUND for the first run that does not exist or
// that the scope does not see.
func (db *DB) CompareSource(ctx context.Context, scope models.RunScope, ids []int64) (*CompareSource, error) {
	q := db.q(ctx)
	rows, err := comparableRuns(q, scope, ids)
	if err != nil {
		return nil, err
	}
	src := &CompareSource{Runs: rows}
	if src.Reports, src.Scopes, err = compareReports(q, rows); err != nil {
		return nil, err
	}
	err = q.Table("attempts a").Joins("JOIN tasks t ON t.id = a.task_id").
		Select("a.id, a.run_id, a.outcome, t.external_id, t.intent, t.difficulty, t.site_key, t.position").
		Where("a.run_id IN ?", ids).Order("a.run_id, t.position").Scan(&src.Attempts).Error
	if err != nil {
		return nil, wrap(err, "compared attempts")
	}
	return src, nil
}

// comparableRuns loads the runs in the order of ids, ENOTFOUND for the first
// that is missing or not visible to the scope. Two queries whatever the
// number of runs: the runs, then the scope's memberships among their teams.
func comparableRuns(q *gorm.DB, scope models.RunScope, ids []int64) ([]CompareRunRow, error) {
	var found []CompareRunRow
	err := runListFrom(q).Select(runListColumns+`, r.team_id, r.version_id, v.version AS benchmark_version,
		b.id AS benchmark_id, b.published AS benchmark_published, r.agent_snapshot, r.hidden_at, r.hidden_reason`).
		Where("r.id IN ?", ids).Scan(&found).Error
	if err != nil {
		return nil, wrap(err, "compared runs")
	}
	member := map[int64]bool{}
	if !scope.All && scope.UserID != 0 && len(found) > 0 {
		teamIDs := make([]int64, len(found))
		for i, r := range found {
			teamIDs[i] = r.TeamID
		}
		var mine []int64
		if err := q.Model(&models.Membership{}).Where("user_id = ? AND team_id IN ?", scope.UserID, teamIDs).
			Pluck("team_id", &mine).Error; err != nil {
			return nil, wrap(err, "memberships")
		}
		for _, id := range mine {
			member[id] = true
		}
	}
	out := make([]CompareRunRow, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(found, func(r CompareRunRow) bool { return r.ID == id })
		if i < 0 {
			return nil, runNotFound(id)
		}
		r := found[i]
		if scope.All || member[r.TeamID] {
			out = append(out, r)
			continue
		}
		if !r.Published || !r.BenchmarkPublished {
			return nil, runNotFound(id)
		}
		if r.HiddenAt != nil {
			// As on the run's own page: its summary and the reason are public,
			// its attempts are not.
			return nil, models.Errorf(models.ENOTFOUND, "Run %d was hidden by the administrators: %s", id, r.HiddenReason)
		}
		out = append(out, r)
	}
	return out, nil
}

// compareReports returns the stored reports of each run by run id (one
// query for all runs) and, for a run without rows yet, its attempts to
// compute them from.
func compareReports(q *gorm.DB, rows []CompareRunRow) (map[int64][]models.MetricsReport, map[int64][]models.AttemptScope, error) {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var entries []models.LeaderboardEntry
	if err := q.Where("run_id IN ?", ids).Order("run_id, id").Find(&entries).Error; err != nil {
		return nil, nil, wrap(err, "leaderboard entries")
	}
	stored, err := storedReports(entries)
	if err != nil {
		return nil, nil, err
	}
	reports := map[int64][]models.MetricsReport{}
	for i, e := range entries {
		reports[e.RunID] = append(reports[e.RunID], stored[i])
	}
	scopes := map[int64][]models.AttemptScope{}
	for _, r := range rows {
		if len(reports[r.ID]) > 0 {
			continue
		}
		s, err := runScopes(q, &models.Run{ID: r.ID, VersionID: r.VersionID, SubsetName: r.Subset})
		if err != nil {
			return nil, nil, err
		}
		scopes[r.ID] = s
	}
	return reports, scopes, nil
}
