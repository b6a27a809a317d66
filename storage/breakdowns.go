package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"gorm.io/gorm"

	"proctor/models"
	"proctor/stats"
)

// breakdownScope is a resolved board: the benchmark version and, for a named
// subset, the subset whose tasks it covers.
type breakdownScope struct {
	ref       models.BoardRef
	versionID int64
	subsetID  int64 // 0 on the full board
}

// breakdownBoardScope resolves a board the caller may see. ENOTFOUND for an
// unknown benchmark, version or subset, and for an unpublished benchmark
// unless the caller is an admin.
func breakdownBoardScope(ctx context.Context, q *gorm.DB, bq models.BreakdownQuery) (*breakdownScope, error) {
	b, err := visibleBenchmark(ctx, q, bq.Slug)
	if err != nil {
		return nil, err
	}
	var versions []models.BenchmarkVersion
	if err := q.Select("id, version").Where("benchmark_id = ?", b.ID).Order("version").Find(&versions).Error; err != nil {
		return nil, wrap(err, "benchmark versions")
	}
	s := &breakdownScope{ref: models.BoardRef{
		BenchmarkSlug: b.Slug, BenchmarkName: b.Name, BenchmarkPublished: b.Published, Subset: bq.Subset,
	}}
	for _, v := range versions {
		isCurrent := b.CurrentVersionID != nil && v.ID == *b.CurrentVersionID
		if isCurrent {
			s.ref.CurrentVersion = v.Version
		}
		if (bq.Version == 0 && isCurrent) || (bq.Version != 0 && v.Version == bq.Version) {
			s.versionID, s.ref.Version = v.ID, v.Version
		}
	}
	if s.versionID == 0 {
		if bq.Version != 0 {
			return nil, models.Errorf(models.ENOTFOUND, "Benchmark %q has no version %d.", bq.Slug, bq.Version)
		}
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark %q has no tasks yet.", bq.Slug)
	}
	var subsets []models.Subset
	if err := q.Select("id, name").Where("version_id = ?", s.versionID).Order("name").Find(&subsets).Error; err != nil {
		return nil, wrap(err, "subsets")
	}
	s.ref.Subsets = []string{models.SubsetFull}
	for _, sub := range subsets {
		s.ref.Subsets = append(s.ref.Subsets, sub.Name)
		if sub.Name == bq.Subset {
			s.subsetID = sub.ID
		}
	}
	if bq.Subset != models.SubsetFull && s.subsetID == 0 {
		return nil, models.Errorf(models.ENOTFOUND, "Benchmark %q has no subset %q.", bq.Slug, bq.Subset)
	}
	return s, nil
}

// breakdownRow is one published run's entry on a board with its run, agent
// and team, as the board's single query returns it.
type breakdownRow struct {
	RunID         int64
	Restricted    bool
	Tasks         int
	Successes     int
	SuccessRate   float64
	CILow         float64 `gorm:"column:ci_low"`
	CIHigh        float64 `gorm:"column:ci_high"`
	MeanSteps     float64
	CostPerTask   float64
	Metrics       string
	Origin        string
	Verified      bool
	AgentSnapshot string
	AgentName     string
	AgentSlug     string
	AgentModel    string
	TeamName      string
	TeamSlug      string
}

// breakdownColumns are the columns of a breakdownRow; the stored report
// (metrics) is read only when the breakdowns need it.
func breakdownColumns(withReport bool) string {
	cols := `le.run_id, le.restricted, le.tasks, le.successes, le.success_rate, le.ci_low, le.ci_high, le.mean_steps, le.cost_per_task,
	r.origin, r.verified, r.agent_snapshot, a.name AS agent_name, a.slug AS agent_slug, a.model AS agent_model,
	t.name AS team_name, t.slug AS team_slug`
	if withReport {
		cols += ", le.metrics"
	}
	return cols
}

// breakdownRows loads every published run's entry on the board in one query,
// best success rate first. Unpublished runs and runs hidden by
// administrators never appear, whoever asks: the breakdowns are the public
// board's.
func breakdownRows(q *gorm.DB, s *breakdownScope, withReport bool) ([]breakdownRow, error) {
	var rows []breakdownRow
	err := q.Table("leaderboard_entries le").Select(breakdownColumns(withReport)).
		Joins("JOIN runs r ON r.id = le.run_id").
		Joins("JOIN agents a ON a.id = r.agent_id").
		Joins("JOIN teams t ON t.id = r.team_id").
		Where("le.version_id = ? AND le.subset_name = ? AND r.published = ? AND r.hidden_at IS NULL", s.versionID, s.ref.Subset, true).
		Order("le.success_rate DESC, le.ci_low DESC, le.run_id").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "leaderboard entries")
	}
	return rows, nil
}

// agentNameModel names the agent as the run's snapshot does (what ran, not
// what the agent has been renamed to since), falling back to the agent row.
func (r breakdownRow) agentNameModel() (name, model string) {
	var snap models.AgentSnapshot
	_ = json.Unmarshal([]byte(r.AgentSnapshot), &snap) // an unreadable snapshot falls back to the agent row
	name, model = cmp.Or(snap.Name, r.AgentName), cmp.Or(snap.Model, r.AgentModel)
	return name, model
}

// storedRate is the part of a stored stats.Metrics a rate cell needs.
type storedRate struct {
	Graded      int            `json:"graded"`
	Successes   int            `json:"successes"`
	SuccessRate float64        `json:"success_rate"`
	SuccessCI   stats.Interval `json:"success_ci"`
}

func (m storedRate) cell() models.RateCell {
	return models.RateCell{Successes: m.Successes, Graded: m.Graded, Rate: m.SuccessRate, Low: m.SuccessCI.Low, High: m.SuccessCI.High}
}

// storedGroup is the part of a stored stats.Group the breakdowns read.
type storedGroup struct {
	Key     string     `json:"key"`
	Metrics storedRate `json:"metrics"`
}

// storedReport is the part of a stored stats.Report the breakdowns read.
// Only the dimensions a page offers are named, so decoding skips the rest
// (intent templates, the largest) without building them.
type storedReport struct {
	Metrics    storedRate `json:"metrics"`
	Breakdowns struct {
		Site       []storedGroup `json:"site"`
		Domain     []storedGroup `json:"domain"`
		Difficulty []storedGroup `json:"difficulty"`
		Attribute  []storedGroup `json:"attribute"`
		TaskType   []storedGroup `json:"task_type"`
	} `json:"breakdowns"`
}

// groups returns the stored groups of one offered dimension.
func (r *storedReport) groups(dim string) []storedGroup {
	switch stats.Dimension(dim) {
	case stats.DimensionSite:
		return r.Breakdowns.Site
	case stats.DimensionDomain:
		return r.Breakdowns.Domain
	case stats.DimensionDifficulty:
		return r.Breakdowns.Difficulty
	case stats.DimensionAttribute:
		return r.Breakdowns.Attribute
	case stats.DimensionTaskType:
		return r.Breakdowns.TaskType
	}
	return nil
}

// cells maps groups to rate cells and adds their keys to seen.
func cells(groups []storedGroup, seen map[string]bool) map[string]models.RateCell {
	out := make(map[string]models.RateCell, len(groups))
	for _, g := range groups {
		out[g.Key] = g.Metrics.cell()
		seen[g.Key] = true
	}
	return out
}

// compareGroupKeys orders group keys by name with the unlabeled last, as
// the stored breakdowns do.
func compareGroupKeys(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == models.UnlabeledGroup:
		return 1
	case b == models.UnlabeledGroup:
		return -1
	}
	return strings.Compare(a, b)
}

// sortedKeys returns the keys of seen sorted by compare.
func sortedKeys(seen map[string]bool, compare func(a, b string) int) []string {
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

// BreakdownBoard returns a board's published entries broken down by one
// dimension (models.BreakdownDimensions), with each entry's rates by
// difficulty for the charts. It reads the precomputed leaderboard entries in
// one query and never aggregates attempts. EINVALID (field "dim") for an
// unknown dimension; ENOTFOUND for an unknown benchmark, version or subset,
// and for an unpublished benchmark unless the caller is an admin.
func (db *DB) BreakdownBoard(ctx context.Context, bq models.BreakdownQuery) (*models.BreakdownBoard, error) {
	dim, err := models.CheckBreakdownDimension(bq.Dimension)
	if err != nil {
		return nil, err
	}
	q := db.q(ctx)
	s, err := breakdownBoardScope(ctx, q, bq)
	if err != nil {
		return nil, err
	}
	rows, err := breakdownRows(q, s, true)
	if err != nil {
		return nil, err
	}
	out := &models.BreakdownBoard{Board: s.ref, Dimension: dim, Entries: make([]models.BreakdownEntry, 0, len(rows))}
	groupKeys, difficulties := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		var rep storedReport
		if err := json.Unmarshal([]byte(r.Metrics), &rep); err != nil {
			return nil, wrap(err, "leaderboard metrics")
		}
		name, model := r.agentNameModel()
		e := models.BreakdownEntry{
			RunID: r.RunID, AgentName: name, AgentSlug: r.AgentSlug, TeamName: r.TeamName, TeamSlug: r.TeamSlug,
			Model: model, Origin: r.Origin, Verified: r.Verified, Restricted: r.Restricted,
			Success: rep.Metrics.cell(), Tasks: r.Tasks, MeanSteps: r.MeanSteps, CostPerTask: r.CostPerTask,
			Groups:     cells(rep.groups(dim), groupKeys),
			Difficulty: cells(rep.groups(models.BreakdownDifficulty), difficulties),
		}
		out.Entries = append(out.Entries, e)
	}
	if dim == models.BreakdownDifficulty {
		out.Groups = sortedKeys(groupKeys, models.CompareDifficulty)
	} else {
		out.Groups = sortedKeys(groupKeys, compareGroupKeys)
	}
	out.Difficulties = sortedKeys(difficulties, models.CompareDifficulty)
	return out, nil
}

// matrixTaskRow is a board task with how many entries solved and graded it.
type matrixTaskRow struct {
	ID         int64
	ExternalID string
	Intent     string
	Difficulty string
	Position   int
	Solved     int
	Graded     int
}

// matrixAttemptRow is one entry's attempt at one task of the page.
type matrixAttemptRow struct {
	ID      int64
	RunID   int64
	TaskID  int64
	Outcome string
}

// boardTasks returns the board's tasks (every task of the version, or the
// subset's) with their solve counts over the given runs, in one query. A
// full run on a named subset's board counts only its attempts at the
// subset's tasks.
func boardTasks(q *gorm.DB, s *breakdownScope, runIDs []int64) ([]matrixTaskRow, error) {
	sel := q.Table("tasks t")
	if len(runIDs) == 0 {
		sel = sel.Select("t.id, t.external_id, t.intent, t.difficulty, t.position, 0 AS solved, 0 AS graded")
	} else {
		sel = sel.Select(`t.id, t.external_id, t.intent, t.difficulty, t.position,
			COALESCE(SUM(CASE WHEN a.outcome = ? THEN 1 ELSE 0 END), 0) AS solved,
			COALESCE(SUM(CASE WHEN a.outcome IN (?, ?, ?) THEN 1 ELSE 0 END), 0) AS graded`,
			models.OutcomeSuccess, models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError).
			Joins("LEFT JOIN attempts a ON a.task_id = t.id AND a.run_id IN ?", runIDs).
			Group("t.id, t.external_id, t.intent, t.difficulty, t.position")
	}
	sel = sel.Where("t.version_id = ?", s.versionID)
	if s.subsetID != 0 {
		sel = sel.Where("t.id IN (SELECT st.task_id FROM subset_tasks st WHERE st.subset_id = ?)", s.subsetID)
	}
	var tasks []matrixTaskRow
	if err := sel.Scan(&tasks).Error; err != nil {
		return nil, wrap(err, "board tasks")
	}
	return tasks, nil
}

// solveRate is the share of graded entries that solved a task; -1 when none
// graded it, so such tasks sort after every graded one.
func (t matrixTaskRow) solveRate() float64 {
	if t.Graded == 0 {
		return -1
	}
	return float64(t.Solved) / float64(t.Graded)
}

// compareMatrixTasks orders tasks easy to hard, then most solved first, then
// in the benchmark's own order.
func compareMatrixTasks(a, b matrixTaskRow) int {
	if c := models.CompareDifficulty(a.Difficulty, b.Difficulty); c != 0 {
		return c
	}
	if c := cmp.Compare(b.solveRate(), a.solveRate()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Position, b.Position); c != 0 {
		return c
	}
	return strings.Compare(a.ExternalID, b.ExternalID)
}

// TaskMatrix returns one page of a board's per-task matrix: for each task,
// every published entry's outcome, tasks sorted by difficulty and then by how
// many entries solved them. It reads the entries in one query, the tasks with
// their solve counts in one, and the page's attempts of every entry in one,
// however many entries there are. EINVALID (field "page") for a page past
// the last, or bounds that are not positive; ENOTFOUND as for BreakdownBoard.
func (db *DB) TaskMatrix(ctx context.Context, bq models.BreakdownQuery) (*models.TaskMatrix, error) {
	if bq.Page < 1 || bq.PerPage < 1 {
		return nil, models.FieldError("page", "page and per_page must be positive")
	}
	q := db.q(ctx)
	s, err := breakdownBoardScope(ctx, q, bq)
	if err != nil {
		return nil, err
	}
	rows, err := breakdownRows(q, s, false)
	if err != nil {
		return nil, err
	}
	m := &models.TaskMatrix{Board: s.ref, Page: bq.Page, PerPage: bq.PerPage, Entries: make([]models.MatrixEntry, len(rows))}
	runIDs := make([]int64, len(rows))
	column := make(map[int64]int, len(rows))
	for i, r := range rows {
		name, _ := r.agentNameModel()
		m.Entries[i] = models.MatrixEntry{RunID: r.RunID, AgentName: name, TeamName: r.TeamName, Restricted: r.Restricted}
		runIDs[i], column[r.RunID] = r.RunID, i
	}
	tasks, err := boardTasks(q, s, runIDs)
	if err != nil {
		return nil, err
	}
	m.Total = len(tasks)
	if bq.Page > m.Pages() {
		return nil, models.FieldError("page", "page %d is past the last page of tasks (%d)", bq.Page, m.Pages())
	}
	slices.SortFunc(tasks, compareMatrixTasks)
	start := min((bq.Page-1)*bq.PerPage, len(tasks))
	tasks = tasks[start:min(start+bq.PerPage, len(tasks))]
	if len(tasks) == 0 {
		return m, nil
	}
	row := make(map[int64]int, len(tasks))
	taskIDs := make([]int64, len(tasks))
	m.Tasks = make([]models.MatrixTask, len(tasks))
	for i, t := range tasks {
		row[t.ID], taskIDs[i] = i, t.ID
		m.Tasks[i] = models.MatrixTask{
			ExternalID: t.ExternalID, Intent: t.Intent, Difficulty: t.Difficulty,
			Solved: t.Solved, Graded: t.Graded, Cells: make([]models.MatrixCell, len(rows)),
		}
	}
	if len(runIDs) == 0 {
		return m, nil
	}
	var attempts []matrixAttemptRow
	if err := q.Table("attempts a").Select("a.id, a.run_id, a.task_id, a.outcome").
		Where("a.run_id IN ? AND a.task_id IN ?", runIDs, taskIDs).Scan(&attempts).Error; err != nil {
		return nil, wrap(err, "matrix attempts")
	}
	for _, a := range attempts {
		m.Tasks[row[a.TaskID]].Cells[column[a.RunID]] = models.MatrixCell{AttemptID: a.ID, Outcome: a.Outcome}
	}
	return m, nil
}
