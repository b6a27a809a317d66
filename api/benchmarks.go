package api

import (
	"encoding/json"

	"proctor/models"
)

// Benchmark is a benchmark in GET /api/v1/benchmarks.
type Benchmark struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Format      string `json:"format"`
	Version     int    `json:"version"`
	Tasks       int    `json:"tasks"`
	Subsets     int    `json:"subsets"`
	Sites       int    `json:"sites"`
	Published   bool   `json:"published"`
}

// BenchmarkSummary is GET /api/v1/benchmarks/{slug}, the same JSON as
// `proctor benchmark show --json`.
type BenchmarkSummary = models.BenchmarkSummary

// RubricItem is one rubric item of a task; rubrics are public.
type RubricItem struct {
	Key          string  `json:"key"`
	Requirement  string  `json:"requirement"`
	Verification string  `json:"verification,omitempty"`
	Weight       float64 `json:"weight"`
}

// Task is a task in the API. The hidden fields (eval_spec and the
// references) are set only for admins; for everyone else they are absent
// from the JSON, not merely empty.
type Task struct {
	ID             string          `json:"id"`
	Position       int             `json:"position"`
	Intent         string          `json:"intent"`
	IntentTemplate string          `json:"intent_template,omitempty"`
	StartURLs      []string        `json:"start_urls"`
	Sites          []string        `json:"sites"`
	SiteKey        string          `json:"site_key"`
	TaskType       string          `json:"task_type,omitempty"`
	Difficulty     string          `json:"difficulty,omitempty"`
	Domain         string          `json:"domain,omitempty"`
	Attributes     []string        `json:"attributes"`
	Revision       int             `json:"revision"`
	Modality       string          `json:"modality,omitempty"`
	FileFormat     string          `json:"file_format,omitempty"`
	AccessType     string          `json:"access_type,omitempty"`
	MaxToolCalls   int             `json:"max_tool_calls,omitempty"`
	MaxSeconds     int             `json:"max_seconds,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	RubricItems    []RubricItem    `json:"rubric_items"`

	EvalSpec         json.RawMessage `json:"eval_spec,omitempty"`
	ReferenceAnswers json.RawMessage `json:"reference_answers,omitempty"`
	ReferenceActions json.RawMessage `json:"reference_actions,omitempty"`
}

// ImportResult is the answer to POST /api/v1/benchmarks/import.
type ImportResult struct {
	Benchmark string `json:"benchmark"`
	Version   int    `json:"version"`
	Checksum  string `json:"checksum"`
	Created   bool   `json:"created"`
	Tasks     int    `json:"tasks"`
	Subsets   int    `json:"subsets"`
	URL       string `json:"url"`
}
