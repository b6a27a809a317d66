package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"proctor/models"
)

// breakdownScope is a resolved board: the benchmark version and, for a named
// subset, the subset whose tasks it covers.
type breakdownScope struct {
	ref              models.BoardRef
	gradesCandidates bool // the benchmark's, for the runs' shown origins
	versionID        int64
	subsetID         int64 // 0 on the full board
}

// breakdownBoardScope resolves a board of a benchmark in scope. ENOTFOUND
// for an unknown benchmark, version or subset, and for an unpublished
// benchmark out of scope.
func breakdownBoardScope(q *gorm.DB, bq models.BreakdownQuery, scope models.BenchmarkScope) (*breakdownScope, error) {
	b, err := benchmarkIn(q, bq.Slug, scope)
	if err != nil {
		return nil, err
	}
	var versions []models.BenchmarkVersion
	if err := q.Select("id, version").Where("benchmark_id = ?", b.ID).Order("version").Find(&versions).Error; err != nil {
		return nil, wrap(err, "benchmark versions")
	}
	s := &breakdownScope{ref: models.BoardRef{
		BenchmarkSlug: b.Slug, BenchmarkName: b.Name, BenchmarkPublished: b.Published, Subset: bq.Subset,
	}, gradesCandidates: b.GradesCandidates()}
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
	Unknown       models.Unknown `gorm:"embedded"`
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
	cols := `le.run_id, le.restricted, le.tasks, le.successes, le.success_rate, le.ci_low, le.ci_high, le.mean_steps, le.cost_per_task, le.steps_unknown, le.tokens_unknown, le.cost_unknown,
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

// storedRate is the part of a stored models.Metrics a rate cell needs.
type storedRate struct {
	Graded      int             `json:"graded"`
	Successes   int             `json:"successes"`
	SuccessRate float64         `json:"success_rate"`
	SuccessCI   models.Interval `json:"success_ci"`
}

func (m storedRate) cell() models.RateCell {
	return models.RateCell{Successes: m.Successes, Graded: m.Graded, Rate: m.SuccessRate, Low: m.SuccessCI.Low, High: m.SuccessCI.High}
}

// storedGroup is the part of a stored models.MetricsGroup the breakdowns read.
type storedGroup struct {
	Key     string     `json:"key"`
	Metrics storedRate `json:"metrics"`
}

// storedReport is what the breakdowns read of a stored models.MetricsReport: the
// overall success rate and the groups of two dimensions.
type storedReport struct {
	metrics    storedRate
	groups     []storedGroup // of the page's dimension
	difficulty []storedGroup
}

// decodeStoredReport reads the overall metrics and the groups of dim and of
// the difficulty from a stored report. A report holds every dimension,
// intent templates too (hundreds of groups on WebArena-Verified), so it runs
// to about 200 kB; decoding 200 of them whole would take most of a page's
// time. The parts needed are cut out first and only they are decoded.
func decodeStoredReport(raw []byte, dim string) (storedReport, error) {
	var rep storedReport
	metrics, err := jsonField(raw, "metrics")
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(metrics, &rep.metrics); err != nil {
		return rep, fmt.Errorf("metrics: %w", err)
	}
	breakdowns, err := jsonField(raw, "breakdowns")
	if err != nil || breakdowns == nil {
		return rep, err
	}
	for _, part := range []struct {
		dim string
		dst *[]storedGroup
	}{{dim, &rep.groups}, {models.BreakdownDifficulty, &rep.difficulty}} {
		groups, err := jsonField(breakdowns, part.dim)
		if err != nil {
			return rep, err
		}
		if groups == nil {
			continue
		}
		if err := json.Unmarshal(groups, part.dst); err != nil {
			return rep, fmt.Errorf("breakdown %s: %w", part.dim, err)
		}
	}
	return rep, nil
}

// jsonField returns the raw value of a member of a JSON object, or nil when
// the object has no such member or is null (a report of no attempts has null
// breakdowns). It skips the other members' values by matching brackets and
// quotes without decoding them; the value returned is checked by whoever
// decodes it. Keys are compared as written, so key must need no escaping.
func jsonField(object []byte, key string) ([]byte, error) {
	i := skipSpace(object, 0)
	if bytes.Equal(bytes.TrimSpace(object[i:]), []byte("null")) {
		return nil, nil
	}
	if i >= len(object) || object[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	i++
	for {
		i = skipSpace(object, i)
		if i < len(object) && object[i] == '}' {
			return nil, nil
		}
		if i >= len(object) || object[i] != '"' {
			return nil, errors.New("malformed JSON object: expected a key")
		}
		end, err := skipString(object, i)
		if err != nil {
			return nil, err
		}
		name := object[i+1 : end-1]
		i = skipSpace(object, end)
		if i >= len(object) || object[i] != ':' {
			return nil, errors.New("malformed JSON object: expected a colon")
		}
		start := skipSpace(object, i+1)
		if i, err = skipValue(object, start); err != nil {
			return nil, err
		}
		if string(name) == key {
			return object[start:i], nil
		}
		i = skipSpace(object, i)
		switch {
		case i < len(object) && object[i] == ',':
			i++
		case i < len(object) && object[i] == '}':
			return nil, nil
		default:
			return nil, errors.New("malformed JSON object: expected a comma")
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], `"\`)
		if k < 0 {
			break
		}
		j += k
		if b[j] == '"' {
			return j + 1, nil
		}
		j += 2 // an escape and the character it escapes
	}
	return 0, errors.New("malformed JSON: unterminated string")
}

// skipValue returns the index after the value that starts at b[i]: a string,
// an object or array (to its matching bracket), or a literal or number (to
// the next delimiter).
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("malformed JSON: missing value")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("malformed JSON: unbalanced brackets")
	}
	j := i
	for ; j < len(b); j++ {
		if c := b[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if j == i {
		return 0, errors.New("malformed JSON: missing value")
	}
	return j, nil
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
// and for an unpublished benchmark out of scope (the service passes the
// caller's, models.BenchmarkScopeFor).
func (db *DB) BreakdownBoard(ctx context.Context, bq models.BreakdownQuery, scope models.BenchmarkScope, withheld Withheld) (*models.BreakdownBoard, error) {
	dim, err := models.CheckBreakdownDimension(bq.Dimension)
	if err != nil {
		return nil, err
	}
	q := db.q(ctx)
	s, err := breakdownBoardScope(q, bq, scope)
	if err != nil {
		return nil, err
	}
	rows, err := breakdownRows(q, s, true)
	if err != nil {
		return nil, err
	}
	out := &models.BreakdownBoard{Board: s.ref, Dimension: dim, Entries: make([]models.BreakdownEntry, 0, len(rows))}
	blind, err := withheld.of(ctx, breakdownRunIDs(rows))
	if err != nil {
		return nil, err
	}
	groupKeys, difficulties := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		rep, err := decodeStoredReport([]byte(r.Metrics), dim)
		if err != nil {
			return nil, wrap(err, "leaderboard metrics")
		}
		name, model := r.agentNameModel()
		e := models.BreakdownEntry{
			RunID: r.RunID, AgentName: name, AgentSlug: r.AgentSlug, TeamName: r.TeamName, TeamSlug: r.TeamSlug,
			Model: model, Origin: models.ShownOrigin(r.Origin, s.gradesCandidates), Verified: r.Verified, Restricted: r.Restricted,
			Success: rep.metrics.cell(), Tasks: r.Tasks, MeanSteps: r.MeanSteps, CostPerTask: r.CostPerTask, Unknown: r.Unknown,
			Groups:     cells(rep.groups, groupKeys),
			Difficulty: cells(rep.difficulty, difficulties),
		}
		if blind[r.RunID] {
			// A group of a few tasks would tell their outcomes.
			e.Blind, e.Groups, e.Difficulty = true, nil, nil
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
// subset's) with how many of the given runs solved and graded each: one
// query for the tasks and one that counts the runs' attempts. Counting from
// the attempts, rather than joining every task to them, lets the database
// walk the runs' attempts once by their (run, task) index. A full run on a
// named subset's board counts only its attempts at the subset's tasks.
func boardTasks(q *gorm.DB, s *breakdownScope, runIDs []int64) ([]matrixTaskRow, error) {
	inBoard := func(db *gorm.DB, column string) *gorm.DB {
		if s.subsetID == 0 {
			return db
		}
		return db.Where(column+" IN (SELECT st.task_id FROM subset_tasks st WHERE st.subset_id = ?)", s.subsetID)
	}
	var tasks []matrixTaskRow
	if err := inBoard(q.Table("tasks t").Select("t.id, t.external_id, t.intent, t.difficulty, t.position").
		Where("t.version_id = ?", s.versionID), "t.id").Scan(&tasks).Error; err != nil {
		return nil, wrap(err, "board tasks")
	}
	if len(runIDs) == 0 || len(tasks) == 0 {
		return tasks, nil
	}
	var counts []struct {
		TaskID int64
		Solved int
		Graded int
	}
	err := inBoard(q.Table("attempts a").Select(`a.task_id,
			COUNT(*) FILTER (WHERE a.outcome = ?) AS solved,
			COUNT(*) FILTER (WHERE a.outcome IN (?, ?, ?)) AS graded`,
		models.OutcomeSuccess, models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError).
		Where("a.run_id IN ?", runIDs), "a.task_id").
		Group("a.task_id").Scan(&counts).Error
	if err != nil {
		return nil, wrap(err, "board task outcomes")
	}
	byID := make(map[int64]int, len(tasks))
	for i, t := range tasks {
		byID[t.ID] = i
	}
	for _, c := range counts {
		if i, ok := byID[c.TaskID]; ok {
			tasks[i].Solved, tasks[i].Graded = c.Solved, c.Graded
		}
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
func (db *DB) TaskMatrix(ctx context.Context, bq models.BreakdownQuery, scope models.BenchmarkScope, withheld Withheld) (*models.TaskMatrix, error) {
	if bq.Page < 1 || bq.PerPage < 1 {
		return nil, models.FieldError("page", "page and per_page must be positive")
	}
	q := db.q(ctx)
	s, err := breakdownBoardScope(q, bq, scope)
	if err != nil {
		return nil, err
	}
	rows, err := breakdownRows(q, s, false)
	if err != nil {
		return nil, err
	}
	m := &models.TaskMatrix{Board: s.ref, Page: bq.Page, PerPage: bq.PerPage, Entries: make([]models.MatrixEntry, len(rows))}
	blind, err := withheld.of(ctx, breakdownRunIDs(rows))
	if err != nil {
		return nil, err
	}
	// runIDs are the entries whose outcomes the viewer may see.
	runIDs := make([]int64, 0, len(rows))
	column := make(map[int64]int, len(rows))
	for i, r := range rows {
		name, _ := r.agentNameModel()
		m.Entries[i] = models.MatrixEntry{RunID: r.RunID, AgentName: name, TeamName: r.TeamName, Restricted: r.Restricted, Blind: blind[r.RunID]}
		column[r.RunID] = i
		if !blind[r.RunID] {
			runIDs = append(runIDs, r.RunID)
		}
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
		for j, e := range m.Entries {
			m.Tasks[i].Cells[j].Blind = e.Blind
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

// breakdownRunIDs lists the runs of a board's entries.
func breakdownRunIDs(rows []breakdownRow) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.RunID
	}
	return ids
}
