package storage

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// boardRow is one leaderboard entry joined to its run, agent and team, as the
// board's single query returns it.
type boardRow struct {
	models.LeaderboardEntry
	AgentID         int64
	Origin          string
	Verified        bool
	RunSubset       string
	AgentSnapshot   string
	FinishedAt      *time.Time
	AgentName       string
	AgentSlug       string
	AgentModel      string
	AgentOpenSource bool
	TeamSlug        string
	TeamName        string
	// The run's last re-scoring (see models.Run).
	RescoreSuccessesBefore *int
	RunSuccesses           int
	RunTasks               int
	RescoreChanged         int
	RescoredWith           string
}

// boardJoinColumns are the columns of a boardRow beside its entry's, over
// boardFrom.
const boardJoinColumns = `r.agent_id, r.origin, r.verified, r.subset_name AS run_subset, r.agent_snapshot, r.finished_at,
	a.name AS agent_name, a.slug AS agent_slug, a.model AS agent_model, a.open_source AS agent_open_source,
	t.slug AS team_slug, t.name AS team_name,
	r.rescore_successes_before, r.successes AS run_successes, r.tasks_total AS run_tasks, r.rescore_changed, r.rescored_with`

// entryColumns are the columns of leaderboard_entries a board reads: every
// field of models.LeaderboardEntry but its metrics JSON (large, and no board
// shows it), so that a figure added to the entry reaches the board's rows
// without a change here.
func entryColumns(q *gorm.DB) (string, error) {
	stmt := &gorm.Statement{DB: q}
	if err := stmt.Parse(&models.LeaderboardEntry{}); err != nil {
		return "", wrap(err, "leaderboard entry columns")
	}
	skip := stmt.Schema.LookUpField("Metrics").DBName
	cols := make([]string, 0, len(stmt.Schema.DBNames))
	for _, name := range stmt.Schema.DBNames {
		if name != skip {
			cols = append(cols, "le."+name)
		}
	}
	return strings.Join(cols, ", "), nil
}

// boardRows loads the entry of every run on one board in one query: the
// precomputed numbers with the run, agent and team they belong to. A run is on
// the board when it is published and administrators have not hidden it.
func boardRows(q *gorm.DB, versionID int64, subset string) ([]models.LeaderboardRow, error) {
	cols, err := entryColumns(q)
	if err != nil {
		return nil, err
	}
	var rows []boardRow
	err = q.Table("leaderboard_entries le").Select(cols+", "+boardJoinColumns).
		Joins("JOIN runs r ON r.id = le.run_id").
		Joins("JOIN agents a ON a.id = r.agent_id").
		Joins("JOIN teams t ON t.id = r.team_id").
		Where("le.version_id = ? AND le.subset_name = ? AND r.published = ? AND r.hidden_at IS NULL", versionID, subset, true).
		Order("le.run_id").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "leaderboard entries")
	}
	out := make([]models.LeaderboardRow, len(rows))
	for i, r := range rows {
		out[i] = r.toModel()
	}
	return out, nil
}

// toModel names the agent as the run's snapshot does: the board shows what
// ran, not what the agent has been renamed or re-pointed to since. An agent
// that has become open source since counts as open source.
func (r boardRow) toModel() models.LeaderboardRow {
	// Only the names: a snapshot's config (a replay script) can be long.
	var snap struct {
		Name       string `json:"name"`
		Model      string `json:"model"`
		OpenSource bool   `json:"open_source"`
	}
	_ = json.Unmarshal([]byte(r.AgentSnapshot), &snap) // an unreadable snapshot falls back to the agent row
	name, model := snap.Name, snap.Model
	if name == "" {
		name = r.AgentName
	}
	if model == "" {
		model = r.AgentModel
	}
	return models.LeaderboardRow{
		LeaderboardEntry: r.LeaderboardEntry, AgentID: r.AgentID, AgentName: name, AgentSlug: r.AgentSlug,
		TeamSlug: r.TeamSlug, TeamName: r.TeamName, Model: model, OpenSource: snap.OpenSource || r.AgentOpenSource,
		Origin: r.Origin, Verified: r.Verified, RunSubset: r.RunSubset, FinishedAt: r.FinishedAt,
		Rescore: models.RescoreChange{SuccessesBefore: r.RescoreSuccessesBefore, SuccessesAfter: &r.RunSuccesses, Tasks: &r.RunTasks,
			ChangedAttempts: r.RescoreChanged, Evaluators: r.RescoredWith},
	}
}

// Leaderboard returns a benchmark's board for one subset ("full" or a named
// subset of the version) of its current version, or of the version the query
// names: one row per published run with an entry there (unless hidden by
// administrators), its origin as pages show it (models.ShownOrigin),
// filtered, ranked and sorted as the query asks; a hidden-tests board ranks
// by pass rate (its entries' success rate). Rows are the precomputed leaderboard entries, read
// with one query however many there are. ENOTFOUND for an unknown benchmark,
// version or subset, and for an unpublished benchmark out of scope (the
// service passes the caller's, models.BenchmarkScopeFor).
func (db *DB) Leaderboard(ctx context.Context, slug, subset string, query models.LeaderboardQuery, scope models.BenchmarkScope) (*models.Leaderboard, error) {
	q := db.q(ctx)
	b, err := benchmarkIn(q, slug, scope)
	if err != nil {
		return nil, err
	}
	var versions []models.BenchmarkVersion
	if err := q.Where("benchmark_id = ?", b.ID).Order("version").Find(&versions).Error; err != nil {
		return nil, wrap(err, "benchmark versions")
	}
	lb := &models.Leaderboard{
		BenchmarkSlug: b.Slug, BenchmarkName: b.Name, BenchmarkPublished: b.Published,
		Subset: subset, Query: query.Normalized(), HiddenTests: b.GradesCandidates(), Evaluator: b.Evaluator,
	}
	var version *models.BenchmarkVersion
	for i, v := range versions {
		if b.CurrentVersionID != nil && v.ID == *b.CurrentVersionID {
			lb.CurrentVersion = v.Version
			if query.Version == 0 {
				version = &versions[i]
			}
		}
		if query.Version != 0 && v.Version == query.Version {
			version = &versions[i]
		}
	}
	if version == nil {
		if query.Version != 0 {
			return nil, models.Errorf(models.ENOTFOUND, "Benchmark %q has no version %d.", slug, query.Version)
		}
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark %q has no tasks yet.", slug)
	}
	lb.Version = version.Version
	var subsets []models.Subset
	if err := q.Select("name, task_count").Where("version_id = ?", version.ID).Order("name").Find(&subsets).Error; err != nil {
		return nil, wrap(err, "subsets")
	}
	lb.Subsets = []string{models.SubsetFull}
	found := subset == models.SubsetFull
	if found {
		lb.SubsetTasks = version.TaskCount
	}
	for _, s := range subsets {
		lb.Subsets = append(lb.Subsets, s.Name)
		if s.Name == subset {
			found, lb.SubsetTasks = true, s.TaskCount
		}
	}
	if !found {
		return nil, models.Errorf(models.ENOTFOUND, "Version %d of benchmark %q has no subset %q.", version.Version, slug, subset)
	}
	if lb.HiddenTests {
		lb.PassThreshold = version.PassThreshold
	}
	rows, err := boardRows(q, version.ID, subset)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Origin = models.ShownOrigin(rows[i].Origin, b.GradesCandidates())
	}
	lb.SetRows(rows)
	return lb, nil
}

// BoardVersion returns where a benchmark's boards stand (models.BoardVersion)
// in one query: the counters that the triggers of migration 0015 move in the
// transaction of every change a board shows, whatever code path writes it.
// ENOTFOUND for an unknown benchmark and for an unpublished one out of scope,
// as Leaderboard. Read it before the board it stands for: a board read after
// its version is at least as new as that version.
func (db *DB) BoardVersion(ctx context.Context, slug string, scope models.BenchmarkScope) (models.BoardVersion, error) {
	var row struct {
		ID        int64
		Name      string
		Published bool
		Board     int64
		Shared    int64
	}
	err := db.q(ctx).Raw(`SELECT b.id, b.name, b.published,
		COALESCE((SELECT v.version FROM board_versions v WHERE v.benchmark_id = b.id), 0) AS board,
		COALESCE((SELECT v.version FROM board_versions v WHERE v.benchmark_id = 0), 0) AS shared
		FROM benchmarks b WHERE b.slug = ?`, slug).Scan(&row).Error
	if err != nil {
		return models.BoardVersion{}, wrap(err, "board version")
	}
	if row.ID == 0 || (!row.Published && !scope.Unpublished) {
		return models.BoardVersion{}, models.Errorf(models.ENOTFOUND, "benchmark %q not found.", slug)
	}
	return models.BoardVersion{BenchmarkID: row.ID, BenchmarkName: row.Name, Board: row.Board, Shared: row.Shared, Scope: scope}, nil
}
