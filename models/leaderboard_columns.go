package models

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A leaderboard's columns are described once, in LeaderboardColumns: the
// sort keys and their comparison, the table's header and cells, the CSV and
// the JSON all read that list. A new column is a new entry there (and the
// figure it shows, on LeaderboardRow or its LeaderboardEntry); nothing else
// names it.

// BoardKinds are the kinds of board whose table shows a column.
type BoardKinds uint8

const (
	// TaskBoards rank runs by their success rate over the board's tasks.
	TaskBoards BoardKinds = 1 << iota
	// HiddenTestsBoards rank runs by their pass rate over a hidden-tests
	// benchmark's tests (Leaderboard.HiddenTests).
	HiddenTestsBoards
	// AllBoards is every kind of board.
	AllBoards = TaskBoards | HiddenTestsBoards
)

// ValueKind is the type of a column's values: it decides how they compare
// and how the exports write them.
type ValueKind uint8

const (
	// KindNumber is a real number.
	KindNumber ValueKind = iota
	// KindInteger is a whole number.
	KindInteger
	// KindText is Proctor's own vocabulary (slugs, origins, subset names),
	// compared ignoring case.
	KindText
	// KindFreeText is text a team typed (agent, team and model names),
	// compared ignoring case; the CSV keeps it from being read as a formula.
	KindFreeText
	// KindFlag is yes or no.
	KindFlag
	// KindTime is an instant.
	KindTime
	// KindLink is one of the run's addresses (Text names which: LinkRunPage
	// or LinkRunAPI; Integer is the run's id), which exports write as
	// absolute URLs.
	KindLink
)

// The run's addresses a KindLink column holds.
const (
	LinkRunPage = "run"
	LinkRunAPI  = "run_api"
)

// CellKind is how the table shows a column's cells. The columns that say
// who ran what have cells of their own; every other column is a number
// written by its NumberFormat.
type CellKind uint8

const (
	// CellNumber is a right-aligned number, "—" when missing.
	CellNumber CellKind = iota
	// CellRank is the row's header: its rank or the range of ranks its
	// interval allows.
	CellRank
	// CellAgent names the agent, links the run and marks it verified or
	// restricted.
	CellAgent
	// CellTeam links the team.
	CellTeam
	// CellModel names the model and marks an open-source agent.
	CellModel
	// CellOrigin is the run's origin as a badge.
	CellOrigin
	// CellRate is the rate the board ranks by, with its interval as a bar
	// and as text, its counts and the re-scoring mark.
	CellRate
	// CellDate is the day the run finished.
	CellDate
)

// NumberFormat is how a number cell writes its value.
type NumberFormat uint8

const (
	// FormatFixed1 has one decimal: "11.5".
	FormatFixed1 NumberFormat = iota
	// FormatFixed2 has two decimals: "4.21".
	FormatFixed2
	// FormatFixed3 has three decimals: "0.812".
	FormatFixed3
	// FormatPercent is a share (0–1) in percent with one decimal: "62.5%".
	FormatPercent
	// FormatHundredfold is ×100 with two decimals: trajectory efficiency on
	// the scale the Odysseys paper prints.
	FormatHundredfold
	// FormatDollars is US dollars to four decimals: "$0.0231".
	FormatDollars
	// FormatCount is rounded to a whole number and shortened: "910",
	// "42k", "2.5M".
	FormatCount
)

// LeaderboardValue is a row's value in a column: the field of its column's
// Kind, or Missing.
type LeaderboardValue struct {
	// Missing: the row has no value (an optional metric no evaluation gave,
	// a figure an upload did not state, a run that never finished). It
	// sorts last in either direction, shows as "—", is empty in the CSV and
	// null in the JSON.
	Missing bool
	Number  float64
	Integer int64
	Text    string
	Flag    bool
	Time    time.Time
}

// LeaderboardColumn describes one column of the leaderboards: how it sorts,
// how the table shows it and how the exports write it. A column with no
// Boards is a field only the exports carry.
type LeaderboardColumn struct {
	// Key is the ?sort= value ("" for a field only the exports carry). Two
	// columns share a key only when they show the same figure on different
	// kinds of board (a task board's mean steps are a hidden-tests board's
	// turns per task).
	Key string
	// Label heads the column; HiddenLabel instead on hidden-tests boards
	// when set. Title spells out a short label (the header's abbreviation
	// and the table's caption).
	Label, HiddenLabel, Title string
	// Boards are the kinds of board whose table shows the column; IfAny
	// leaves it out of a board where no published run has a value.
	Boards BoardKinds
	IfAny  bool
	// Better is the end of the column that is better (SortAsc or
	// SortDesc), "" when neither is (names, dates, the rank itself).
	Better string
	Cell   CellKind
	Format NumberFormat
	// Minor columns are left out on a narrow window (a phone): the agent's
	// cell then names the team and model, and the run's page has the rest.
	// Fold columns fold into the agent's cell on a board of many columns.
	Minor, Fold bool
	// TestID marks the column's cells (data-testid); "" for none.
	TestID string
	// Note is a cell's title, when the column has one.
	Note func(LeaderboardRow) string

	// Field names the column in the JSON and CSV exports; "" leaves it out
	// of both, JSONOnly out of the CSV. HiddenTestsOnly marks a figure only
	// hidden-tests boards have: other boards' JSON leaves it out, and the
	// exports list these fields after the others, so that every board's
	// export starts with the same fields.
	Field           string
	JSONOnly        bool
	HiddenTestsOnly bool

	// Kind is the type of the column's values; Nullable says a row may
	// lack one (Value's Missing). Value reads a row's.
	Kind     ValueKind
	Nullable bool
	Value    func(LeaderboardRow) LeaderboardValue
}

// LeaderboardColumns lists every column of the leaderboards, in the order of
// the tables (each kind of board shows its own: see Boards), with the fields
// only the exports carry beside the column they belong to.
func LeaderboardColumns() []LeaderboardColumn {
	meanSteps := func(r LeaderboardRow) LeaderboardValue {
		return unlessUnknown(r.Unknown.Steps, number(r.MeanSteps))
	}
	return []LeaderboardColumn{
		{Key: SortRank, Label: "Rank", Boards: AllBoards, Cell: CellRank, TestID: "rank",
			Field: "rank", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.Rank) }},
		// "2–4" when the 95% intervals allow places 2 to 4 (rank_best to
		// rank_worst), the rank alone when they fix it.
		{Field: "rank_range", JSONOnly: true, Kind: KindText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.RankText()) }},
		{Field: "rank_best", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.RankBest) }},
		{Field: "rank_worst", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.RankWorst) }},
		{Field: "run_id", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.RunID) }},
		{Field: "url", Kind: KindLink, Value: func(r LeaderboardRow) LeaderboardValue { return link(LinkRunPage, r.RunID) }},
		{Field: "api_url", JSONOnly: true, Kind: KindLink, Value: func(r LeaderboardRow) LeaderboardValue { return link(LinkRunAPI, r.RunID) }},

		{Key: SortAgent, Label: "Agent", Boards: AllBoards, Cell: CellAgent,
			Field: "agent", Kind: KindFreeText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.AgentName) }},
		{Field: "agent_slug", Kind: KindText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.AgentSlug) }},
		{Key: SortTeam, Label: "Team", Boards: AllBoards, Cell: CellTeam, Minor: true, Fold: true,
			Field: "team", Kind: KindFreeText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.TeamName) }},
		{Field: "team_slug", Kind: KindText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.TeamSlug) }},
		{Key: SortModel, Label: "Model", Boards: AllBoards, Cell: CellModel, Minor: true, Fold: true,
			Field: "model", Kind: KindFreeText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.Model) }},
		{Field: "open_source", Kind: KindFlag, Value: func(r LeaderboardRow) LeaderboardValue { return flag(r.OpenSource) }},
		{Key: SortOrigin, Label: "Origin", Boards: AllBoards, Cell: CellOrigin, Minor: true,
			Field: "origin", Kind: KindText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.Origin) }},
		{Field: "verified", Kind: KindFlag, Value: func(r LeaderboardRow) LeaderboardValue { return flag(r.Verified) }},
		{Field: "run_subset", Kind: KindText, Value: func(r LeaderboardRow) LeaderboardValue { return text(r.RunSubset) }},
		{Field: "restricted", Kind: KindFlag, Value: func(r LeaderboardRow) LeaderboardValue { return flag(r.Restricted) }},
		{Field: "tasks", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.Tasks) }},
		{Field: "successes", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.Successes) }},

		{Key: SortSuccessRate, Label: "Success rate", HiddenLabel: "Pass rate", Boards: AllBoards, Better: SortDesc, Cell: CellRate, TestID: "success",
			Field: "success_rate", Kind: KindNumber, Value: func(r LeaderboardRow) LeaderboardValue { return number(r.SuccessRate) }},
		{Field: "ci95_low", Kind: KindNumber, Value: func(r LeaderboardRow) LeaderboardValue { return number(r.CILow) }},
		{Field: "ci95_high", Kind: KindNumber, Value: func(r LeaderboardRow) LeaderboardValue { return number(r.CIHigh) }},

		// Hidden-tests boards grade built websites by their tests' pass
		// rates: the mean over the board's tasks of each task's pass rate,
		// overall and per group, and no judge or rubric.
		{Key: SortHiddenOverall, Label: "Overall", Title: "Overall pass rate", Boards: HiddenTestsBoards, Better: SortDesc,
			Format: FormatPercent, Minor: true, TestID: "hidden-overall",
			Field: "hidden_overall", HiddenTestsOnly: true, Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.HiddenOverall) }},
		{Key: SortHiddenRequest, Label: "R", Title: "Request tests (R)", Boards: HiddenTestsBoards, Better: SortDesc,
			Format: FormatPercent, Minor: true, TestID: "hidden-request",
			Field: "hidden_request", HiddenTestsOnly: true, Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.HiddenRequest) }},
		{Key: SortHiddenBrowser, Label: "B", Title: "Browser tests (B)", Boards: HiddenTestsBoards, Better: SortDesc,
			Format: FormatPercent, Minor: true, TestID: "hidden-browser",
			Field: "hidden_browser", HiddenTestsOnly: true, Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.HiddenBrowser) }},
		{Key: SortHiddenSystem, Label: "S", Title: "System tests (S)", Boards: HiddenTestsBoards, Better: SortDesc,
			Format: FormatPercent, Minor: true, TestID: "hidden-system",
			Field: "hidden_system", HiddenTestsOnly: true, Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.HiddenSystem) }},
		// The tests behind a hidden-tests board's pass rate.
		{Field: "hidden_passed", HiddenTestsOnly: true, Kind: KindInteger, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalInteger(r.HiddenPassed) }},
		{Field: "hidden_ran", HiddenTestsOnly: true, Kind: KindInteger, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalInteger(r.HiddenRan) }},

		{Key: SortJudgeScore, Label: "Judge score", Boards: TaskBoards, IfAny: true, Better: SortDesc,
			Format: FormatFixed2, Minor: true, Note: judgedNote,
			Field: "judge_score", Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.JudgeScore) }},
		{Field: "judged", Kind: KindInteger, Value: func(r LeaderboardRow) LeaderboardValue { return integer(r.Judged) }},
		{Key: SortRubricScore, Label: "Rubric score", Boards: TaskBoards, IfAny: true, Better: SortDesc,
			Format: FormatFixed3, Minor: true,
			Field: "rubric_score", Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.RubricScore) }},
		{Key: SortPerfectRate, Label: "Perfect rate", Boards: TaskBoards, IfAny: true, Better: SortDesc,
			Format: FormatPercent, Minor: true,
			Field: "perfect_rate", Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.PerfectRate) }},
		{Key: SortEfficiency, Label: "Efficiency", Boards: TaskBoards, IfAny: true, Better: SortDesc,
			Format: FormatHundredfold, Minor: true,
			Field: "efficiency", Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return optionalNumber(r.Efficiency) }},

		// What a run spent: unknown (Missing) where an upload did not say.
		{Key: SortMeanSteps, Label: "Mean steps", Boards: TaskBoards, Better: SortAsc,
			Format: FormatFixed1, Minor: true, TestID: "mean-steps",
			Field: "mean_steps", Kind: KindNumber, Nullable: true, Value: meanSteps},
		{Key: SortCostPerTask, Label: "Cost per task", Boards: AllBoards, Better: SortAsc,
			Format: FormatDollars, Minor: true, TestID: "cost-per-task",
			Field: "cost_per_task", Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return unlessUnknown(r.Unknown.Cost, number(r.CostPerTask)) }},
		{Key: SortTokens, Label: "Tokens", Boards: TaskBoards, Better: SortAsc,
			Format: FormatCount, Minor: true, TestID: "tokens",
			Field: "tokens", Kind: KindInteger, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue { return unlessUnknown(r.Unknown.Tokens, integer(r.Tokens)) }},
		{Key: SortTokensPerTask, Label: "Tokens per task", Boards: HiddenTestsBoards, Better: SortAsc,
			Format: FormatCount, Minor: true, TestID: "tokens-per-task",
			Kind: KindNumber, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue {
				return unlessUnknown(r.Unknown.Tokens, number(r.TokensPerTask()))
			}},
		{Key: SortMeanSteps, Label: "Turns per task", Boards: HiddenTestsBoards, Better: SortAsc,
			Format: FormatFixed1, Minor: true, TestID: "turns-per-task",
			Kind: KindNumber, Nullable: true, Value: meanSteps},

		{Key: SortDate, Label: "Date", Boards: AllBoards, Cell: CellDate, Minor: true,
			Field: "finished_at", Kind: KindTime, Nullable: true,
			Value: func(r LeaderboardRow) LeaderboardValue {
				if r.FinishedAt == nil {
					return LeaderboardValue{Missing: true}
				}
				return LeaderboardValue{Time: *r.FinishedAt}
			}},
	}
}

func number(x float64) LeaderboardValue { return LeaderboardValue{Number: x} }

func integer[T int | int64](n T) LeaderboardValue { return LeaderboardValue{Integer: int64(n)} }

func text(s string) LeaderboardValue { return LeaderboardValue{Text: s} }

func flag(b bool) LeaderboardValue { return LeaderboardValue{Flag: b} }

func link(which string, runID int64) LeaderboardValue {
	return LeaderboardValue{Text: which, Integer: runID}
}

func optionalNumber(x *float64) LeaderboardValue {
	if x == nil {
		return LeaderboardValue{Missing: true}
	}
	return number(*x)
}

func optionalInteger(n *int) LeaderboardValue {
	if n == nil {
		return LeaderboardValue{Missing: true}
	}
	return integer(*n)
}

// unlessUnknown is v, or Missing when an upload did not state it.
func unlessUnknown(unknown bool, v LeaderboardValue) LeaderboardValue {
	v.Missing = v.Missing || unknown
	return v
}

// judgedNote says what a judge score is the mean of.
func judgedNote(r LeaderboardRow) string {
	if r.JudgeScore == nil {
		return "not judged"
	}
	return fmt.Sprintf("mean over %d judged attempts (1–5)", r.Judged)
}

// LeaderboardSortKeys lists the sortable columns in table order, one per
// key.
func LeaderboardSortKeys() []LeaderboardColumn {
	var out []LeaderboardColumn
	for _, c := range LeaderboardColumns() {
		if c.Key != "" && !slices.ContainsFunc(out, func(o LeaderboardColumn) bool { return o.Key == c.Key }) {
			out = append(out, c)
		}
	}
	return out
}

// LeaderboardSort returns the column a sort key sorts by; ok is false for an
// unknown key.
func LeaderboardSort(key string) (LeaderboardColumn, bool) {
	for _, c := range LeaderboardColumns() {
		if c.Key == key && key != "" {
			return c, true
		}
	}
	return LeaderboardColumn{}, false
}

// LeaderboardExports lists the columns the JSON and CSV exports carry (the
// CSV leaves out the JSONOnly ones), in their order: the table's, with the
// figures only hidden-tests boards have last.
func LeaderboardExports() []LeaderboardColumn {
	var common, hidden []LeaderboardColumn
	for _, c := range LeaderboardColumns() {
		switch {
		case c.Field == "":
		case c.HiddenTestsOnly:
			hidden = append(hidden, c)
		default:
			common = append(common, c)
		}
	}
	return append(common, hidden...)
}

// ShownOn reports whether the table of a hidden-tests board (hidden) or of
// a task board (!hidden) has the column.
func (c LeaderboardColumn) ShownOn(hidden bool) bool {
	if hidden {
		return c.Boards&HiddenTestsBoards != 0
	}
	return c.Boards&TaskBoards != 0
}

// LabelOn is the column's header on a hidden-tests board (hidden) or on a
// task board.
func (c LeaderboardColumn) LabelOn(hidden bool) string {
	if hidden && c.HiddenLabel != "" {
		return c.HiddenLabel
	}
	return c.Label
}

// DefaultDir is the direction a first click sorts by: the better end first;
// where neither end is better, ascending, but dates newest first.
func (c LeaderboardColumn) DefaultDir() string {
	switch {
	case c.Better != "":
		return c.Better
	case c.Kind == KindTime:
		return SortDesc
	}
	return SortAsc
}

// Compare orders two rows by the column's values, ascending. missing is
// non-zero when exactly one of them lacks a value: -1 when b does, 1 when
// a does, so that missing values sort last whichever the direction.
func (c LeaderboardColumn) Compare(a, b LeaderboardRow) (order, missing int) {
	va, vb := c.Value(a), c.Value(b)
	switch {
	case va.Missing && vb.Missing:
		return 0, 0
	case va.Missing:
		return 0, 1
	case vb.Missing:
		return 0, -1
	}
	switch c.Kind {
	case KindNumber:
		return cmp.Compare(va.Number, vb.Number), 0
	case KindInteger, KindLink:
		return cmp.Compare(va.Integer, vb.Integer), 0
	case KindFlag:
		return compareFlags(va.Flag, vb.Flag), 0
	case KindTime:
		return va.Time.Compare(vb.Time), 0
	}
	return compareText(va.Text, vb.Text), 0
}

// compareText orders text ignoring case, then by bytes.
func compareText(a, b string) int {
	return cmp.Or(cmp.Compare(strings.ToLower(a), strings.ToLower(b)), cmp.Compare(a, b))
}

// compareFlags orders no before yes.
func compareFlags(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// sortKeys are the sort keys in the order LeaderboardSortKeys lists them.
func sortKeys() []string {
	cols := LeaderboardSortKeys()
	keys := make([]string, len(cols))
	for i, c := range cols {
		keys[i] = c.Key
	}
	return keys
}
