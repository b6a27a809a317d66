package models

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Leaderboard columns a board can be sorted by (the ?sort= values).
const (
	SortRank        = "rank"
	SortAgent       = "agent"
	SortTeam        = "team"
	SortModel       = "model"
	SortOrigin      = "origin"
	SortSuccessRate = "success_rate"
	SortJudgeScore  = "judge_score"
	SortRubricScore = "rubric_score"
	SortPerfectRate = "perfect_rate"
	SortEfficiency  = "efficiency"
	SortMeanSteps   = "mean_steps"
	SortCostPerTask = "cost_per_task"
	SortTokens      = "tokens"
	SortDate        = "date"

	// Hidden-tests boards: pass rates overall and per group, and tokens
	// per task.
	SortHiddenOverall = "hidden_overall"
	SortHiddenRequest = "hidden_request"
	SortHiddenBrowser = "hidden_browser"
	SortHiddenSystem  = "hidden_system"
	SortTokensPerTask = "tokens_per_task"
)

// Sort directions.
const (
	SortAsc  = "asc"
	SortDesc = "desc"
)

// Ways the model filter matches.
const (
	ModelContains = "contains"
	ModelExact    = "exact"
)

// maxModelFilter bounds the model filter's text.
const maxModelFilter = 200

// LeaderboardDateLayout is the layout of the from and to filters.
const LeaderboardDateLayout = "2006-01-02"

// LeaderboardQuery is what a visitor asks of a board: sort, filters and the
// best-per-agent toggle. The zero value (after Normalized) is the default
// board: every published run, best success rate first.
type LeaderboardQuery struct {
	Sort string // a Sort* key; "" is SortSuccessRate
	Dir  string // SortAsc or SortDesc; "" is the key's default direction
	// Origin keeps runs of one origin (one of RunOrigins, as ShownOrigin
	// gives it); "" keeps all.
	Origin string
	// OpenSource keeps open-source agents (true) or the others (false); nil keeps all.
	OpenSource *bool
	// Model keeps runs whose model contains the text (ModelContains) or is it
	// (ModelExact), ignoring case.
	Model      string
	ModelMatch string
	// From and To keep runs finished on or after From's day and on or before
	// To's day (UTC); runs that never finished drop out when either is set.
	From, To *time.Time
	// BestPerAgent keeps each agent's best row by success rate.
	BestPerAgent bool
	// Version picks a version of the benchmark by number; 0 is the current one.
	Version int
}

// Normalized fills the defaults: sort by success rate, the key's default
// direction, and contains for the model match.
func (q LeaderboardQuery) Normalized() LeaderboardQuery {
	if q.Sort == "" {
		q.Sort = SortSuccessRate
	}
	if q.Dir == "" {
		if k, ok := LeaderboardSort(q.Sort); ok {
			q.Dir = k.DefaultDir()
		} else {
			q.Dir = SortDesc
		}
	}
	if q.ModelMatch == "" {
		q.ModelMatch = ModelContains
	}
	return q
}

// Filtered reports whether any filter narrows the board.
func (q LeaderboardQuery) Filtered() bool {
	return q.Origin != "" || q.OpenSource != nil || q.Model != "" || q.From != nil || q.To != nil
}

// ParseLeaderboardQuery reads a board's query parameters: sort, dir, origin,
// open_source (yes|no), model, model_match (contains|exact), from and to
// (YYYY-MM-DD), best (1|0) and version. EINVALID naming the parameter when
// one is malformed; unknown parameters are ignored.
func ParseLeaderboardQuery(v url.Values) (LeaderboardQuery, error) {
	var q LeaderboardQuery
	q.Sort = strings.TrimSpace(v.Get("sort"))
	if q.Sort != "" {
		if _, ok := LeaderboardSort(q.Sort); !ok {
			return q, FieldError("sort", "sort: %q is not a column of the leaderboard; use one of %s", cut(q.Sort), strings.Join(sortKeys(), ", "))
		}
	}
	switch q.Dir = strings.TrimSpace(v.Get("dir")); q.Dir {
	case "", SortAsc, SortDesc:
	default:
		return q, FieldError("dir", "dir: %q is not a sort direction; use asc or desc", cut(q.Dir))
	}
	if q.Origin = strings.TrimSpace(v.Get("origin")); q.Origin != "" && !slices.Contains(RunOrigins(), q.Origin) {
		return q, FieldError("origin", "origin: %q is not a run origin; use one of %s", cut(q.Origin), strings.Join(RunOrigins(), ", "))
	}
	switch os := strings.TrimSpace(v.Get("open_source")); os {
	case "":
	case "yes", "true", "1":
		q.OpenSource = new(true)
	case "no", "false", "0":
		q.OpenSource = new(false)
	default:
		return q, FieldError("open_source", "open_source: %q is neither yes nor no", cut(os))
	}
	q.Model = strings.TrimSpace(v.Get("model"))
	if len(q.Model) > maxModelFilter {
		return q, FieldError("model", "model: the filter is longer than %d characters", maxModelFilter)
	}
	switch q.ModelMatch = strings.TrimSpace(v.Get("model_match")); q.ModelMatch {
	case "", ModelContains, ModelExact:
	default:
		return q, FieldError("model_match", "model_match: %q is neither contains nor exact", cut(q.ModelMatch))
	}
	for _, d := range []struct {
		field string
		dst   **time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		raw := strings.TrimSpace(v.Get(d.field))
		if raw == "" {
			continue
		}
		t, err := time.Parse(LeaderboardDateLayout, raw)
		if err != nil {
			return q, FieldError(d.field, "%s: %q is not a date; use YYYY-MM-DD", d.field, cut(raw))
		}
		*d.dst = &t
	}
	if q.From != nil && q.To != nil && q.To.Before(*q.From) {
		return q, FieldError("to", "to: %s is before from (%s)", q.To.Format(LeaderboardDateLayout), q.From.Format(LeaderboardDateLayout))
	}
	switch best := strings.TrimSpace(v.Get("best")); best {
	case "", "0", "false", "no":
	case "1", "true", "yes", "on":
		q.BestPerAgent = true
	default:
		return q, FieldError("best", "best: %q is neither 1 nor 0", cut(best))
	}
	if raw := strings.TrimSpace(v.Get("version")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return q, FieldError("version", "version: %q is not a version number", cut(raw))
		}
		q.Version = n
	}
	return q.Normalized(), nil
}

// cut shortens an echoed parameter so error messages stay readable.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Values encodes the query as URL parameters, leaving out defaults, so that a
// board's URL is a short permalink that ParseLeaderboardQuery reads back.
func (q LeaderboardQuery) Values() url.Values {
	q = q.Normalized()
	v := url.Values{}
	if k, _ := LeaderboardSort(q.Sort); q.Sort != SortSuccessRate || q.Dir != k.DefaultDir() {
		v.Set("sort", q.Sort)
		v.Set("dir", q.Dir)
	}
	if q.Origin != "" {
		v.Set("origin", q.Origin)
	}
	if q.OpenSource != nil {
		v.Set("open_source", map[bool]string{true: "yes", false: "no"}[*q.OpenSource])
	}
	if q.Model != "" {
		v.Set("model", q.Model)
		if q.ModelMatch == ModelExact {
			v.Set("model_match", ModelExact)
		}
	}
	if q.From != nil {
		v.Set("from", q.From.Format(LeaderboardDateLayout))
	}
	if q.To != nil {
		v.Set("to", q.To.Format(LeaderboardDateLayout))
	}
	if q.BestPerAgent {
		v.Set("best", "1")
	}
	if q.Version > 0 {
		v.Set("version", strconv.Itoa(q.Version))
	}
	return v
}

// SortedBy returns the query sorting by key: a second click on the current
// key flips the direction, a first click takes the key's default.
func (q LeaderboardQuery) SortedBy(key string) LeaderboardQuery {
	q = q.Normalized()
	k, _ := LeaderboardSort(key)
	if q.Sort == key {
		q.Dir = map[string]string{SortAsc: SortDesc, SortDesc: SortAsc}[q.Dir]
	} else {
		q.Sort, q.Dir = key, k.DefaultDir()
	}
	return q
}

// LeaderboardRow is one run's precomputed numbers on one board (its
// leaderboard entry), with what the board shows about the run. Rank,
// RankBest, RankWorst and OverlapsAbove are set by Apply. The board's columns
// (LeaderboardColumns) read their values from it.
type LeaderboardRow struct {
	// LeaderboardEntry is the run's entry on the board's subset: every
	// figure the metrics job stored for it (not its Metrics, which boards
	// do not read). Restricted marks a full run shown on a named subset's
	// board with its numbers on that subset's tasks only; on a hidden-tests
	// board SuccessRate and its interval are the run's overall pass rate
	// (HiddenPassed of HiddenRan tests), what the board ranks by.
	LeaderboardEntry
	AgentID    int64
	AgentName  string
	AgentSlug  string
	TeamSlug   string
	TeamName   string
	Model      string
	OpenSource bool
	Origin     string
	Verified   bool
	// RunSubset is the subset the run ran.
	RunSubset  string
	FinishedAt *time.Time

	// Rescore is what the run's last re-scoring changed about the whole run
	// (not only this board's tasks); not Known for a run never re-scored.
	Rescore RescoreChange

	// Rank is the row's place by success rate (tied rates share it).
	// RankBest and RankWorst bound the places the row could hold given the
	// 95% intervals: rows whose whole interval lies above the row's are
	// clearly better, rows whose whole interval lies below clearly worse, and
	// every other row could fall either side. OverlapsAbove marks a row whose
	// interval overlaps the interval of the row ranked just above it.
	Rank          int
	RankBest      int
	RankWorst     int
	OverlapsAbove bool
}

// TokensPerTask is the run's tokens (in and out) per task on the board.
func (r LeaderboardRow) TokensPerTask() float64 {
	if r.Tasks == 0 {
		return 0
	}
	return float64(r.Tokens) / float64(r.Tasks)
}

// PassRateBoard reports whether the row's SuccessRate is a pass rate over
// hidden tests (a hidden-tests board's row) rather than a share of tasks.
func (r LeaderboardRow) PassRateBoard() bool { return r.HiddenRan != nil }

// CountsText says what the row's rate counts: "31 of 42 tests" on a
// hidden-tests board (the tests that ran), "3 of 10 tasks" on others.
func (r LeaderboardRow) CountsText() string {
	if r.PassRateBoard() {
		passed := 0
		if r.HiddenPassed != nil {
			passed = *r.HiddenPassed
		}
		return strconv.Itoa(passed) + " of " + plural(*r.HiddenRan, "test")
	}
	return strconv.Itoa(r.Successes) + " of " + plural(r.Tasks, "task")
}

// plural is "1 task" or "3 tasks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Uncertain reports whether the intervals leave the row more than one place.
func (r LeaderboardRow) Uncertain() bool { return r.RankWorst > r.RankBest }

// RankText is the rank as the board prints it: "3" when the intervals fix
// it, or the range of places they allow, such as "2–4".
func (r LeaderboardRow) RankText() string {
	if r.Uncertain() {
		return fmt.Sprintf("%d–%d", r.RankBest, r.RankWorst)
	}
	return strconv.Itoa(r.Rank)
}

// BoardVersion is where a benchmark's boards stand: a value that moves
// whenever anything they or their exports show changes (a run published,
// withdrawn, hidden, shown again, verified or re-scored, its entries
// recomputed, the benchmark's settings, versions or subsets changed, a team
// or agent renamed), the same in every server process. A board rendered at
// one version may be served again while the version stays.
type BoardVersion struct {
	// BenchmarkID is the benchmark's row: a benchmark removed and imported
	// again under the same slug is another board.
	BenchmarkID int64
	// BenchmarkName is the benchmark's name, for a page's title.
	BenchmarkName string
	// Board moves with the benchmark's own boards; Shared with the names
	// every board shows (teams and agents).
	Board, Shared int64
	// Scope is what the caller's reads of the benchmark include: a board
	// rendered for one scope is never served to another.
	Scope BenchmarkScope
}

// Key is the version as one string, for cache keys and entity tags.
func (v BoardVersion) Key() string {
	return fmt.Sprintf("%d.%d.%d.%t.%t", v.BenchmarkID, v.Board, v.Shared, v.Scope.Unpublished, v.Scope.Secrets)
}

// ScopeKey is the scope alone as a string: boards rendered for different
// scopes are different boards.
func (v BoardVersion) ScopeKey() string {
	return fmt.Sprintf("%t.%t", v.Scope.Unpublished, v.Scope.Secrets)
}

// Before reports whether v is an earlier version than w of the same
// benchmark's boards: a benchmark imported again is a later one, and the
// counters only grow. Versions of different scopes are not compared.
func (v BoardVersion) Before(w BoardVersion) bool {
	if v.Scope != w.Scope {
		return false
	}
	if v.BenchmarkID != w.BenchmarkID {
		return v.BenchmarkID < w.BenchmarkID
	}
	return v.Board <= w.Board && v.Shared <= w.Shared && (v.Board < w.Board || v.Shared < w.Shared)
}

// Leaderboard is one benchmark version's board for one subset, as a visitor
// asked for it.
type Leaderboard struct {
	BenchmarkSlug string
	BenchmarkName string
	// BenchmarkPublished is false only on boards admins see before publishing.
	BenchmarkPublished bool
	// HiddenTests marks a hidden-tests benchmark's board: it ranks by the
	// runs' overall pass rates (in the rows' SuccessRate), shows pass rates
	// overall and per group (R, B, S) instead of judge and rubric columns,
	// and cost, tokens and turns per task.
	HiddenTests bool
	// PassThreshold is, on a hidden-tests board, the pass rate a task of the
	// board's version needs to succeed.
	PassThreshold float64
	// Evaluator is the benchmark's evaluator kind now.
	Evaluator string
	// Lenient marks a board of a benchmark graded by a lenient reading (of
	// WebArena-Verified): its scores are not official scores. The handler
	// sets it from the evaluator registry.
	Lenient        bool
	Version        int
	CurrentVersion int
	Subset         string
	SubsetTasks    int
	// Subsets lists the boards of this version: "full" first, then the named subsets.
	Subsets []string
	Query   LeaderboardQuery
	// Rows are the published runs that pass the filters, sorted as asked.
	Rows []LeaderboardRow
	// Published counts every published run on the board before filters.
	Published int
	// Columns are the columns of the board's table, in order: those of its
	// kind of board (LeaderboardColumn.Boards), leaving out the optional
	// ones no published run on the board has a value in. Set by SetRows.
	Columns []LeaderboardColumn
}

// RateLabel names the column boards rank by: "Pass rate" on a hidden-tests
// board (tests passed of tests run), "Success rate" on the others.
func (lb *Leaderboard) RateLabel() string {
	c, _ := LeaderboardSort(SortSuccessRate)
	return c.LabelOn(lb.HiddenTests)
}

// Shows reports whether the board's table has the column of a sort key.
func (lb *Leaderboard) Shows(key string) bool {
	return slices.ContainsFunc(lb.Columns, func(c LeaderboardColumn) bool { return c.Key == key })
}

// SetRows applies the board's query to every published row of the board (the
// filters, the best-per-agent toggle, ranks and bands by success rate, then
// the requested order) and sets the table's columns and the count from all
// of them. HiddenTests must be set first: it picks the columns.
func (lb *Leaderboard) SetRows(all []LeaderboardRow) {
	lb.Published = len(all)
	lb.Columns = nil
	for _, c := range LeaderboardColumns() {
		if !c.ShownOn(lb.HiddenTests) {
			continue
		}
		if c.IfAny && !slices.ContainsFunc(all, func(r LeaderboardRow) bool { return !c.Value(r).Missing }) {
			continue
		}
		lb.Columns = append(lb.Columns, c)
	}
	lb.Rows = lb.Query.Apply(all)
}

// Apply filters rows, keeps each agent's best when asked, ranks what is left
// by success rate with the range of ranks its interval allows, and sorts it
// as the query asks. It does
// not modify rows.
func (q LeaderboardQuery) Apply(rows []LeaderboardRow) []LeaderboardRow {
	q = q.Normalized()
	out := make([]LeaderboardRow, 0, len(rows))
	for _, r := range rows {
		if q.keeps(r) {
			out = append(out, r)
		}
	}
	if q.BestPerAgent {
		out = bestPerAgent(out)
	}
	rankRows(out)
	sortRows(out, q.Sort, q.Dir)
	return out
}

// keeps reports whether a row passes the query's filters.
func (q LeaderboardQuery) keeps(r LeaderboardRow) bool {
	if q.Origin != "" && r.Origin != q.Origin {
		return false
	}
	if q.OpenSource != nil && r.OpenSource != *q.OpenSource {
		return false
	}
	if q.Model != "" {
		if q.ModelMatch == ModelExact && !strings.EqualFold(r.Model, q.Model) {
			return false
		}
		if q.ModelMatch != ModelExact && !strings.Contains(strings.ToLower(r.Model), strings.ToLower(q.Model)) {
			return false
		}
	}
	if q.From != nil || q.To != nil {
		if r.FinishedAt == nil {
			return false
		}
		day := r.FinishedAt.UTC()
		if q.From != nil && day.Before(*q.From) {
			return false
		}
		if q.To != nil && !day.Before(q.To.AddDate(0, 0, 1)) {
			return false
		}
	}
	return true
}

// byStanding orders rows best first: success rate, then the interval's lower
// end (more evidence for the same rate), more tasks, then the earlier run.
func byStanding(a, b LeaderboardRow) int {
	return cmp.Or(
		cmp.Compare(b.SuccessRate, a.SuccessRate),
		cmp.Compare(b.CILow, a.CILow),
		cmp.Compare(b.Tasks, a.Tasks),
		cmp.Compare(a.RunID, b.RunID),
	)
}

// bestPerAgent keeps each agent's best row by standing, in input order.
func bestPerAgent(rows []LeaderboardRow) []LeaderboardRow {
	best := map[int64]int{}
	for i, r := range rows {
		if j, ok := best[r.AgentID]; !ok || byStanding(r, rows[j]) < 0 {
			best[r.AgentID] = i
		}
	}
	out := rows[:0:0]
	for i, r := range rows {
		if best[r.AgentID] == i {
			out = append(out, r)
		}
	}
	return out
}

// rankRows orders rows best first and sets their ranks. Ranks follow
// success rate (equal rates share a rank, the next rank skips). A row's rank
// range runs from one past the rows that are clearly better (their interval's
// low end above the row's high end) to the last row that is not clearly worse
// (its interval's high end at or above the row's low end): its place within
// that range could be chance. Two sorted lists of interval ends find both in
// O(n log n), so a board of any size ranks quickly.
func rankRows(rows []LeaderboardRow) {
	slices.SortStableFunc(rows, byStanding)
	lows := make([]float64, len(rows))
	highs := make([]float64, len(rows))
	for i, r := range rows {
		lows[i], highs[i] = r.CILow, r.CIHigh
	}
	slices.Sort(lows)
	slices.Sort(highs)
	for i := range rows {
		r := &rows[i]
		r.Rank = i + 1
		if i > 0 && rows[i-1].SuccessRate == r.SuccessRate {
			r.Rank = rows[i-1].Rank
		}
		// Lows strictly above this row's high end: the clearly better rows.
		above, _ := slices.BinarySearch(lows, math.Nextafter(r.CIHigh, math.Inf(1)))
		r.RankBest = 1 + len(rows) - above
		// Highs strictly below this row's low end: the clearly worse rows.
		below, _ := slices.BinarySearch(highs, r.CILow)
		r.RankWorst = len(rows) - below
		r.OverlapsAbove = i > 0 && overlaps(rows[i-1], *r)
	}
}

// overlaps reports whether two rows' 95% intervals share any point.
func overlaps(a, b LeaderboardRow) bool {
	return a.CILow <= b.CIHigh && b.CILow <= a.CIHigh
}

// sortRows orders ranked rows by the column of a sort key (the success rate
// for an unknown key): missing values (no judge score, a figure an upload did
// not state, no finish date) last in either direction, ties by standing.
func sortRows(rows []LeaderboardRow, key, dir string) {
	col, ok := LeaderboardSort(key)
	if !ok {
		col, _ = LeaderboardSort(SortSuccessRate)
	}
	sign := 1
	if dir == SortDesc {
		sign = -1
	}
	slices.SortStableFunc(rows, func(a, b LeaderboardRow) int {
		c, missing := col.Compare(a, b)
		if missing == 0 {
			c *= sign
		} else {
			c = missing
		}
		return cmp.Or(c, byStanding(a, b))
	})
}
