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
	EvaluatorWebArena         = "webarena"
	EvaluatorRubric           = "rubric"
	EvaluatorLLMJudge         = "llm-judge"
	EvaluatorNone             = "none"
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

// MultiSite is the site key of a task that spans more than one site.
const MultiSite = "multi-site"

// Benchmark is a named task set; its tasks live in immutable versions.
type Benchmark struct {
	ID               int64
	Slug             string
	Name             string
	Description      string
	Format           string
	Evaluator        string
	CurrentVersionID *int64
	Published        bool
	DefaultMaxSteps  int
	CreatedAt        time.Time
	UpdatedAt        time.Time

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
	ImportedBy  *int64
	CreatedAt   time.Time

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
	ID               int64
	VersionID        int64
	ExternalID       string
	Position         int
	Intent           string
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
	Slug         string          `json:"slug"`
	Name         string          `json:"name"`
	Format       string          `json:"format"`
	Version      int             `json:"version"`
	Checksum     string          `json:"checksum"`
	Tasks        int             `json:"tasks"`
	BySite       map[string]int  `json:"by_site"`
	ByTaskType   map[string]int  `json:"by_task_type"`
	ByDifficulty map[string]int  `json:"by_difficulty"`
	ByDomain     map[string]int  `json:"by_domain"`
	ByAttribute  map[string]int  `json:"by_attribute"`
	RubricItems  int             `json:"rubric_items"`
	Subsets      []SubsetSummary `json:"subsets"`
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
	Version     int
	Tasks       int
	Subsets     int
	Sites       int
	Published   bool
}
