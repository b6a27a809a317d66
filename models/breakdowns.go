package models

import (
	"slices"
	"strings"
)

// The task labels a leaderboard's breakdowns table groups entries' results by
// (the ?dim= values), in the order the page offers them. They are the keys of
// the breakdowns stored with each leaderboard entry.
const (
	BreakdownSite       = "site"
	BreakdownDomain     = "domain"
	BreakdownDifficulty = "difficulty"
	BreakdownAttribute  = "attribute"
	BreakdownTaskType   = "task_type"
)

// BreakdownDimensions lists the dimensions a breakdowns page offers.
func BreakdownDimensions() []string {
	return []string{BreakdownSite, BreakdownDomain, BreakdownDifficulty, BreakdownAttribute, BreakdownTaskType}
}

// CheckBreakdownDimension returns the dimension named by a ?dim= value ("" is
// the site); EINVALID on the field "dim" for any other value.
func CheckBreakdownDimension(dim string) (string, error) {
	if dim == "" {
		return BreakdownSite, nil
	}
	if !slices.Contains(BreakdownDimensions(), dim) {
		return "", FieldError("dim", "dim must be one of %s, not %q", strings.Join(BreakdownDimensions(), ", "), dim)
	}
	return dim, nil
}

// UnlabeledGroup is the group of tasks without a label in a dimension, as the
// stored breakdowns name it; it sorts after every label.
const UnlabeledGroup = "(none)"

// difficultyRank orders difficulty labels from easy to hard, unknown labels
// after the known ones and the unlabeled last.
func difficultyRank(d string) int {
	switch strings.TrimSpace(d) {
	case DifficultyEasy:
		return 0
	case DifficultyMedium:
		return 1
	case DifficultyHard:
		return 2
	case "", UnlabeledGroup:
		return 4
	}
	return 3
}

// CompareDifficulty orders difficulty labels easy, medium, hard, then other
// labels by name, then the unlabeled; for sorting task rows and groups.
func CompareDifficulty(a, b string) int {
	ra, rb := difficultyRank(a), difficultyRank(b)
	if ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

// BreakdownQuery selects a board's breakdowns: the benchmark, the subset
// (SubsetFull or a named one), the version (0 is the current one), the
// dimension of the groups table and the page of the per-task matrix.
type BreakdownQuery struct {
	Slug      string
	Subset    string
	Version   int
	Dimension string
	Page      int
	PerPage   int
}

// BoardRef names one leaderboard: a version of a benchmark on one subset.
type BoardRef struct {
	BenchmarkSlug string
	BenchmarkName string
	// BenchmarkPublished is false only on boards admins see before publishing.
	BenchmarkPublished bool
	Version            int
	CurrentVersion     int
	Subset             string   // SubsetFull or a named subset
	Subsets            []string // every board of the version, SubsetFull first
}

// RateCell is a success rate over graded attempts with its Wilson 95%
// interval. Graded 0 means the entry has no graded attempt in the group.
type RateCell struct {
	Successes int
	Graded    int
	Rate      float64
	Low       float64
	High      float64
}

// Empty reports whether the cell has no graded attempt to show a rate for.
func (c RateCell) Empty() bool { return c.Graded == 0 }

// BreakdownEntry is one published run on a board, with its numbers on the
// board's tasks.
type BreakdownEntry struct {
	RunID      int64
	AgentName  string
	AgentSlug  string
	TeamName   string
	TeamSlug   string
	Model      string
	Origin     string
	Verified   bool
	Restricted bool // a full run's numbers on a named subset's tasks
	// Blind marks a run the viewer annotates in an open blind study: only
	// its overall rate (a leaderboard column) is shown, not its groups.
	Blind     bool
	Success   RateCell
	Tasks     int
	MeanSteps float64
	// CostPerTask is the mean cost of one task attempt in US dollars.
	CostPerTask float64
	// Unknown marks MeanSteps and CostPerTask an upload did not state.
	Unknown Unknown
	// Groups are the rates per label of the board's chosen dimension.
	Groups map[string]RateCell
	// Difficulty are the rates per difficulty label, for the difficulty chart.
	Difficulty map[string]RateCell
}

// BreakdownBoard is a board's entries broken down by one dimension. Entries
// are ordered by success rate, best first.
type BreakdownBoard struct {
	Board     BoardRef
	Dimension string
	// Groups are the labels of Dimension any entry has, in the stored order
	// (by name, the unlabeled last).
	Groups []string
	// Difficulties are the difficulty labels any entry has, easy to hard.
	Difficulties []string
	Entries      []BreakdownEntry
	// CostFrontier are the indexes in Entries of the entries on the
	// cost–success Pareto frontier (no entry whose cost is known is both
	// cheaper and more successful), cheapest first. Storage leaves it empty;
	// it is computed once from the entries (stats.CostFrontier) for the
	// page's chart and data table.
	CostFrontier []int
}

// MatrixEntry is a column of the per-task matrix: one entry of the board.
type MatrixEntry struct {
	RunID      int64
	AgentName  string
	TeamName   string
	Restricted bool
	// Blind marks a run the viewer annotates in an open blind study: its
	// cells are withheld and it counts in no task's solved/graded numbers.
	Blind bool
}

// MatrixCell is one entry's attempt at one task. AttemptID 0 means the entry
// has no attempt at the task; Outcome "" that the attempt has no verdict;
// Blind that the entry's outcomes are withheld from the viewer.
type MatrixCell struct {
	AttemptID int64
	Outcome   string
	Blind     bool
}

// MatrixTask is a row of the per-task matrix: a task and every entry's
// outcome on it, in the order of TaskMatrix.Entries.
type MatrixTask struct {
	ExternalID string
	Intent     string
	Difficulty string
	Solved     int // entries that solved it
	Graded     int // entries with a verdict on it
	Cells      []MatrixCell
}

// TaskMatrix is one page of the per-task matrix of a board: which entries
// solved which tasks, tasks from easy to hard and, within a difficulty, from
// the most solved to the least.
type TaskMatrix struct {
	Board   BoardRef
	Entries []MatrixEntry
	Tasks   []MatrixTask
	Total   int // tasks on the board
	Page    int
	PerPage int
}

// Pages is the number of pages of the matrix, at least 1.
func (m *TaskMatrix) Pages() int {
	if m.PerPage < 1 || m.Total == 0 {
		return 1
	}
	return (m.Total + m.PerPage - 1) / m.PerPage
}
