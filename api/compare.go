package api

import "proctor/models"

// Comparison is GET /api/v1/compare: two to four runs of one benchmark side
// by side, the compare page's content.
type Comparison struct {
	Benchmark      CompareBenchmark          `json:"benchmark"`
	Runs           []CompareRun              `json:"runs"`
	VersionsDiffer bool                      `json:"versions_differ"`
	MetricsSubset  string                    `json:"metrics_subset"`
	Metrics        []models.CompareMetric    `json:"metrics"`
	Breakdowns     []models.CompareBreakdown `json:"breakdowns"`
	SharedTasks    int                       `json:"shared_tasks"`
	DifferingTasks int                       `json:"differing_tasks"`
	Tasks          []CompareTask             `json:"tasks"`
	PairedTests    []models.PairedTest       `json:"paired_tests"`
	URL            string                    `json:"url"`
}

// CompareBenchmark names the compared runs' benchmark.
type CompareBenchmark struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// CompareRun is a compared run: its listing plus what the comparison adds.
type CompareRun struct {
	RunItem
	Label            string `json:"label"`
	Baseline         bool   `json:"baseline"`
	Model            string `json:"model"`
	BenchmarkVersion int    `json:"benchmark_version"`
	MetricsSubset    string `json:"metrics_subset"`
	Restricted       bool   `json:"restricted"`
}

// CompareTask is a shared task with each run's attempt and timeline.
type CompareTask struct {
	ID         string        `json:"task_id"`
	Intent     string        `json:"intent"`
	Difficulty string        `json:"difficulty,omitempty"`
	Site       string        `json:"site,omitempty"`
	Differs    bool          `json:"differs"`
	Group      string        `json:"group,omitempty"` // two runs only: first_only, second_only, both, neither, ungraded
	Runs       []CompareCell `json:"runs"`
}

// CompareCell is one run's attempt at a compared task.
type CompareCell struct {
	models.CompareCell
	TimelineURL string `json:"timeline_url"`
}
