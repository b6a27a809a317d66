package models

import (
	"strings"
	"time"
)

// Source formats a benchmark can be imported from.
const (
	FormatWebArenaVerified = "webarena-verified"
	FormatWebArena         = "webarena"
	FormatOdysseys         = "odysseys"
	FormatProctor          = "proctor"
)

// ImportFormats lists the accepted import formats.
func ImportFormats() []string {
	return []string{FormatWebArenaVerified, FormatWebArena, FormatOdysseys, FormatProctor}
}

// Evaluator kinds a benchmark's tasks are graded by.
const (
	EvaluatorWebArenaVerified = "webarena-verified"
	// EvaluatorWebArenaVerifiedLenient reads WebArena-Verified answers more
	// leniently than the official evaluator; an administrator's choice, never
	// a default, and its boards say so.
	EvaluatorWebArenaVerifiedLenient = "webarena-verified-lenient"
	EvaluatorWebArena                = "webarena"
	EvaluatorRubric                  = "rubric"
	EvaluatorLLMJudge                = "llm-judge"
	EvaluatorNone                    = "none"
)

// What a benchmark's evaluator grades (Benchmark.Grades), as its registry
// record says: agents' runs, or candidate websites (hidden tests).
const (
	GradesAgents     = "agents"
	GradesCandidates = "candidates"
)

// Task types. WebArena-Verified uses retrieve / mutate / navigate; WebDS-style
// tasks use qa / action.
const (
	TaskRetrieve = "retrieve"
	TaskMutate   = "mutate"
	TaskNavigate = "navigate"
	TaskQA       = "qa"
	TaskAction   = "action"
)

// Difficulty levels.
const (
	DifficultyEasy   = "easy"
	DifficultyMedium = "medium"
	DifficultyHard   = "hard"
)

// SubsetFull names the implicit subset holding every task of a version.
const SubsetFull = "full"

// ValidateSubsetName checks the name of a named subset: a slug, and not "full",
// which every version has implicitly. EINVALID on the field "subset" otherwise.
func ValidateSubsetName(name string) error {
	if name == SubsetFull {
		return FieldError("subset", "the name %q is reserved for the implicit subset of every task", SubsetFull)
	}
	if !ValidSlug(name) {
		return FieldError("subset", "%q is not a valid subset name: use lower-case letters, digits and hyphens", name)
	}
	return nil
}

// MultiSite is the site key of a task that spans more than one site.
const MultiSite = "multi-site"

// GradesCandidates reports whether the benchmark grades candidate websites
// (hidden tests) rather than agents' runs.
func (b *Benchmark) GradesCandidates() bool { return b.Grades == GradesCandidates }

// Benchmark is a named task set; its tasks live in immutable versions.
type Benchmark struct {
	ID          int64
	Slug        string
	Name        string
	Description string
	Format      string
	Evaluator   string
	// Grades is what the evaluator grades (GradesAgents or
	// GradesCandidates), recorded at import from the evaluator registry so
	// that queries can filter on it.
	Grades           string `gorm:"default:agents"`
	CurrentVersionID *int64
	Published        bool
	// RevealReferences marks a benchmark whose reference action scripts are not
	// secret (the bundled sandbox): only then may teams run replay agents that
	// play them, since a replay's timeline shows the script and its answer.
	RevealReferences bool
	DefaultMaxSteps  int
	// A benchmark may name its own LLM judge instead of the server's;
	// JudgeAPIKey is sealed with the server's secret key.
	JudgeBaseURL string
	JudgeModel   string
	JudgeAPIKey  string `json:"-"`
	CreatedAt    time.Time
	UpdatedAt    time.Time

	CurrentVersion *BenchmarkVersion `gorm:"foreignKey:CurrentVersionID"`
	Sites          []Site            `gorm:"foreignKey:BenchmarkID"`
}

// BenchmarkVersion is one imported state of a benchmark. Re-importing identical
// input reuses it; changed input creates the next version, and runs keep pointing
// at the version they used.
type BenchmarkVersion struct {
	ID          int64
	BenchmarkID int64
	Version     int
	Checksum    string // SHA-256 of the canonical import input
	SourceName  string
	TaskCount   int
	RubricItems int
	// PassThreshold is the pass rate a task of a hidden-tests benchmark
	// needs to succeed, in (0, 1]: DefaultPassThreshold (every test that
	// ran passed) unless the benchmark's file states another. It belongs to
	// the version, so that the runs of a version are all graded alike.
	PassThreshold float64 `gorm:"default:1"`
	ImportedBy    *int64
	CreatedAt     time.Time

	Subsets []Subset `gorm:"foreignKey:VersionID"`
}

// Site is one website a benchmark's tasks run on, configured per deployment:
// the placeholder in task URLs (such as __SHOPPING__) maps to URL.
type Site struct {
	ID             int64
	BenchmarkID    int64
	Name           string
	Placeholder    string
	URL            string
	ResetURL       string
	MaxConcurrency int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Task is one benchmark task. EvalSpec, ReferenceAnswers and ReferenceActions are
// hidden: they never reach agents, teams or public pages.
type Task struct {
	ID         int64
	VersionID  int64
	ExternalID string
	Position   int
	Intent     string
	// SearchText is the intent folded to lower case in Go, so that searching is
	// case-insensitive for all of Unicode on SQLite too (its LOWER folds ASCII only).
	SearchText       string
	IntentTemplate   string
	StartURLs        JSONStrings
	Sites            JSONStrings
	SiteKey          string // the single site, or MultiSite
	TaskType         string
	Difficulty       string
	Domain           string
	Attributes       JSONStrings
	Revision         int
	Modality         string
	FileFormat       string
	AccessType       string
	MaxToolCalls     int
	MaxSeconds       int
	Metadata         string // public JSON
	EvalSpec         string // hidden JSON
	ReferenceAnswers string // hidden JSON
	ReferenceActions string // hidden JSON

	RubricItems []RubricItem `gorm:"foreignKey:TaskID"`
	// ReferenceCaptures are a hidden-tests task's reference screenshots,
	// filled by the importer and stored with the task; never loaded for pages.
	ReferenceCaptures []ReferenceCapture `gorm:"foreignKey:TaskID"`
}

// RubricItem is one weighted requirement of a task, judged pass or fail over the
// whole trajectory.
type RubricItem struct {
	ID           int64
	TaskID       int64
	Key          string `gorm:"column:item_key"`
	Position     int
	Requirement  string
	Verification string
	Weight       float64
}

// TaskSite indexes tasks by each site they touch, for filtering.
type TaskSite struct {
	TaskID int64  `gorm:"primaryKey"`
	Site   string `gorm:"primaryKey"`
}

// TaskAttribute indexes tasks by attribute (multihop, structured, tool-usage, …).
type TaskAttribute struct {
	TaskID    int64  `gorm:"primaryKey"`
	Attribute string `gorm:"primaryKey"`
}

// Subset is a named task set inside a version, with the checksum of its task ids.
type Subset struct {
	ID          int64
	VersionID   int64
	Name        string
	Description string
	Checksum    string
	TaskCount   int
	CreatedAt   time.Time
}

// SubsetTask is a subset membership row.
type SubsetTask struct {
	SubsetID int64 `gorm:"primaryKey"`
	TaskID   int64 `gorm:"primaryKey"`
}

// SiteKeyOf returns the site key used in breakdowns: the one site, MultiSite, or "".
func SiteKeyOf(sites []string) string {
	switch len(sites) {
	case 0:
		return ""
	case 1:
		return sites[0]
	}
	return MultiSite
}

// PlaceholderFor returns the conventional URL placeholder of a site: __SHOPPING_ADMIN__.
func PlaceholderFor(site string) string {
	return "__" + strings.ToUpper(strings.ReplaceAll(site, "-", "_")) + "__"
}

// TaskFilter selects tasks in the task browser. Empty fields match everything.
type TaskFilter struct {
	Site       string
	TaskType   string
	Difficulty string
	Domain     string
	Attribute  string
	Subset     string
	Query      string
	Page       int
	PerPage    int
}

// BenchmarkSummary is the machine-readable summary printed by
// `proctor benchmark show --json`; scripts rely on its keys.
type BenchmarkSummary struct {
	Slug         string         `json:"slug"`
	Name         string         `json:"name"`
	Format       string         `json:"format"`
	Version      int            `json:"version"`
	Checksum     string         `json:"checksum"`
	Tasks        int            `json:"tasks"`
	BySite       map[string]int `json:"by_site"`
	ByTaskType   map[string]int `json:"by_task_type"`
	ByDifficulty map[string]int `json:"by_difficulty"`
	ByDomain     map[string]int `json:"by_domain"`
	ByAttribute  map[string]int `json:"by_attribute"`
	RubricItems  int            `json:"rubric_items"`
	// PassThreshold is, for a hidden-tests benchmark, the pass rate a task
	// of the current version needs to succeed; 0 (left out) for others.
	PassThreshold float64         `json:"pass_threshold,omitempty"`
	Subsets       []SubsetSummary `json:"subsets"`
}

// SubsetSummary is one subset's part of a BenchmarkSummary.
type SubsetSummary struct {
	Name   string         `json:"name"`
	Tasks  int            `json:"tasks"`
	BySite map[string]int `json:"by_site"`
}

// BenchmarkListItem is a benchmark with its current version's counts, for listings.
type BenchmarkListItem struct {
	Slug        string
	Name        string
	Description string
	Format      string
	VersionID   int64 // of the current version; 0 before the first import
	Version     int
	Tasks       int
	Subsets     int
	// SubsetNames are the current version's named subsets, each with its own
	// leaderboard beside the full one.
	SubsetNames []string `gorm:"-"`
	Sites       int
	Published   bool
}

// Task browser page sizes.
const (
	DefaultTasksPerPage = 50
	MaxTasksPerPage     = 200
)

// Normalized returns the filter with its text trimmed and its page bounds applied:
// page from 1, per page DefaultTasksPerPage when unset, at most MaxTasksPerPage.
func (f TaskFilter) Normalized() TaskFilter {
	f.Site = strings.TrimSpace(f.Site)
	f.TaskType = strings.TrimSpace(f.TaskType)
	f.Difficulty = strings.TrimSpace(f.Difficulty)
	f.Domain = strings.TrimSpace(f.Domain)
	f.Attribute = strings.TrimSpace(f.Attribute)
	f.Subset = strings.TrimSpace(f.Subset)
	f.Query = strings.TrimSpace(f.Query)
	if f.Subset == SubsetFull {
		f.Subset = ""
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.PerPage < 1 {
		f.PerPage = DefaultTasksPerPage
	}
	if f.PerPage > MaxTasksPerPage {
		f.PerPage = MaxTasksPerPage
	}
	return f
}

// Active reports whether any filter other than the page is set.
func (f TaskFilter) Active() bool {
	return f.Site != "" || f.TaskType != "" || f.Difficulty != "" || f.Domain != "" ||
		f.Attribute != "" || f.Subset != "" || f.Query != ""
}

// HideSecrets blanks the hidden fields (evaluation spec, reference answers and
// reference actions) so the task can be shown to someone who may not see them.
func (t *Task) HideSecrets() {
	t.EvalSpec, t.ReferenceAnswers, t.ReferenceActions = "", "", ""
}

// HasSecrets reports whether any hidden field is set.
func (t *Task) HasSecrets() bool {
	return t.EvalSpec != "" || t.ReferenceAnswers != "" || t.ReferenceActions != ""
}

// ImportResult is what an import did: the benchmark, the version the input maps
// to, and whether that version was created (false: identical input, unchanged).
type ImportResult struct {
	Benchmark *Benchmark
	Version   *BenchmarkVersion
	Created   bool
	// Subsets is how many named subsets the imported file declared.
	Subsets int
}

// BenchmarkFacets lists the distinct values the task browser can filter by.
type BenchmarkFacets struct {
	Sites        []string
	TaskTypes    []string
	Difficulties []string
	Domains      []string
	Attributes   []string
	Subsets      []string
}

// BenchmarkDetail is what the benchmark page shows: the benchmark, its summary,
// its sites and how many tasks use each site (multi-site tasks included).
type BenchmarkDetail struct {
	Benchmark Benchmark
	Grading   Grading
	Summary   BenchmarkSummary
	Sites     []Site
	SiteTasks map[string]int
}

// TaskPage is one page of the task browser: the filter as applied, the values it
// can take, the matching tasks and how many match in all.
type TaskPage struct {
	Benchmark Benchmark
	Facets    BenchmarkFacets
	Filter    TaskFilter
	Tasks     []Task
	Total     int
}

// HasPrev reports whether there is a page before this one.
func (p TaskPage) HasPrev() bool { return p.Filter.Page > 1 }

// HasNext reports whether there is a page after this one.
func (p TaskPage) HasNext() bool { return p.Filter.Page*p.Filter.PerPage < p.Total }

// First is the 1-based position of the first task shown, 0 when none is.
func (p TaskPage) First() int {
	if len(p.Tasks) == 0 {
		return 0
	}
	return (p.Filter.Page-1)*p.Filter.PerPage + 1
}

// Last is the 1-based position of the last task shown.
func (p TaskPage) Last() int { return (p.Filter.Page-1)*p.Filter.PerPage + len(p.Tasks) }

// Grading is what pages show of how a benchmark is graded, as its
// evaluator's registry record says; handlers fill it.
type Grading struct {
	// Lenient: its scores are a lenient reading, not the official ones.
	Lenient bool
	// Readings: an administrator may choose between readings of its
	// evaluator (the Grading page).
	Readings bool
	// RubricJudged: its primary evaluator is the rubric judge.
	RubricJudged bool
	// Candidates: it grades candidate websites (hidden tests), not agents.
	Candidates bool
}

// AdminBenchmark is a benchmark with every version it has, newest first, for the
// admin dashboard.
type AdminBenchmark struct {
	Benchmark Benchmark
	Grading   Grading
	Versions  []BenchmarkVersion
}

// IsCurrent reports whether v is the benchmark's current version.
func (a AdminBenchmark) IsCurrent(v BenchmarkVersion) bool {
	return a.Benchmark.CurrentVersionID != nil && *a.Benchmark.CurrentVersionID == v.ID
}

// TaskDefect is a flaw in a task's own evaluation spec, in the benchmark's
// published data: no output can pass the task under its evaluator (e.g. two
// checks that compare the same request with different values). Shown to
// administrators on the task's page.
type TaskDefect struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// JudgeUpdate changes a benchmark's own LLM judge. An empty BaseURL makes the
// benchmark use the server's judge. APIKey nil keeps the stored key; a
// pointer to "" removes it.
type JudgeUpdate struct {
	BaseURL string
	Model   string
	APIKey  *string
}

// BenchmarkScope is what a read of benchmarks includes beyond what anyone may
// see. The benchmark service sets it from the caller (BenchmarkScopeFor);
// storage reads what it is told.
type BenchmarkScope struct {
	// Unpublished benchmarks are found and listed.
	Unpublished bool
	// Secrets are read: a task's hidden fields (evaluation spec, reference
	// answers and actions) and a site's deployment URL and reset hook.
	Secrets bool
}

// BenchmarkScopeFor is the rule of who sees what of a benchmark: an
// unpublished benchmark, its tasks' hidden fields and its sites' deployment
// URLs exist only for administrators and the system.
func BenchmarkScopeFor(a Actor) BenchmarkScope {
	p := a.Privileged()
	return BenchmarkScope{Unpublished: p, Secrets: p}
}
