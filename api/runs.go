package api

import (
	"encoding/json"
	"time"

	"proctor/models"
)

// RunBudgets are what a run may spend and how it runs, as queued: steps and
// seconds per episode, seconds per agent call, cost (null: no limit),
// episodes at once, and the notes shown on its page. In a request, zero
// budgets take the server's defaults.
type RunBudgets struct {
	MaxSteps            int      `json:"max_steps"`
	MaxEpisodeSeconds   int      `json:"max_episode_seconds"`
	MaxAgentCallSeconds int      `json:"max_agent_call_seconds"`
	MaxCost             *float64 `json:"max_cost"`
	Parallelism         int      `json:"parallelism"`
	Notes               string   `json:"notes"`
}

// RunInput is the body of POST /api/v1/runs; subset "" is every task.
type RunInput struct {
	Team      string `json:"team"`
	Agent     string `json:"agent"`
	Benchmark string `json:"benchmark"`
	Subset    string `json:"subset,omitempty"`
	RunBudgets
}

// Run is a run as queued: the answer of POST /api/v1/runs, of a re-run and
// of a candidate run.
type Run struct {
	ID        int64  `json:"id"`
	Team      string `json:"team,omitempty"`
	Agent     string `json:"agent,omitempty"`
	Benchmark string `json:"benchmark,omitempty"`
	Subset    string `json:"subset"`
	Status    string `json:"status"`
	Origin    string `json:"origin"`
	RunBudgets
	TasksTotal int       `json:"tasks_total"`
	CreatedAt  time.Time `json:"created_at"`
	URL        string    `json:"url"`
	APIURL     string    `json:"api_url"`
}

// RunItem is a run in listings (GET /api/v1/runs) and in a timeline.
type RunItem struct {
	ID            int64  `json:"id"`
	Status        string `json:"status"`
	Origin        string `json:"origin"`
	Team          string `json:"team"`
	TeamName      string `json:"team_name"`
	Agent         string `json:"agent"`
	AgentName     string `json:"agent_name"`
	Benchmark     string `json:"benchmark"`
	BenchmarkName string `json:"benchmark_name"`
	Subset        string `json:"subset"`
	TasksDone     int    `json:"tasks_done"`
	TasksTotal    int    `json:"tasks_total"`
	Successes     int    `json:"successes"`
	Errors        int    `json:"errors"`
	// ResultsWithheld: successes and errors read 0 because the caller
	// annotates some of the run's attempts in an open blind study.
	ResultsWithheld bool       `json:"results_withheld,omitempty"`
	Published       bool       `json:"published"`
	CreatedAt       time.Time  `json:"created_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	URL             string     `json:"url"`
	APIURL          string     `json:"api_url"`
}

// RunState is a run's live state (GET /api/v1/runs/{id}).
type RunState struct {
	ID        int64  `json:"id"`
	Status    string `json:"status"`
	Finished  bool   `json:"finished"`
	Origin    string `json:"origin"`
	Team      string `json:"team"`
	TeamName  string `json:"team_name"`
	Agent     string `json:"agent"`
	AgentName string `json:"agent_name"`
	Benchmark string `json:"benchmark"`
	Subset    string `json:"subset"`
	RunBudgets
	Published  bool `json:"published"`
	TasksTotal int  `json:"tasks_total"`
	Pending    int  `json:"pending"`
	// WaitingForAgent counts, for a run of an agent that connects (kind mcp,
	// or an http agent in pull mode), the episodes waiting for its claims.
	WaitingForAgent int            `json:"waiting_for_agent"`
	Running         int            `json:"running"`
	Done            int            `json:"done"`
	Percent         int            `json:"percent"`
	Successes       int            `json:"successes"`
	Failures        int            `json:"failures"`
	Errors          int            `json:"errors"`
	ErrorsByClass   map[string]int `json:"errors_by_class"`
	// ResultsWithheld: successes, failures and errors read 0 because the
	// caller annotates some of the run's attempts in an open blind study.
	ResultsWithheld bool       `json:"results_withheld,omitempty"`
	ETASeconds      *int64     `json:"eta_seconds"`
	Steps           int        `json:"steps"`
	TokensIn        int64      `json:"tokens_in"`
	TokensOut       int64      `json:"tokens_out"`
	Cost            float64    `json:"cost"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	URL             string     `json:"url"`
	AttemptsURL     string     `json:"attempts_url"`
}

// Successful reports whether a finished run completed (it may still hold
// failed attempts: those are the agent's results, not the run's failure).
func (r *RunState) Successful() bool { return r.Status == models.RunCompleted }

// Attempt is an attempt in a run's attempt list.
type Attempt struct {
	ID           int64    `json:"id"`
	RunID        int64    `json:"run_id"`
	Task         string   `json:"task"`
	Intent       string   `json:"intent"`
	Status       string   `json:"status"`
	Outcome      string   `json:"outcome"`
	ErrorClass   string   `json:"error_class"`
	ErrorMessage string   `json:"error_message"`
	Score        *float64 `json:"score"`
	Steps        int      `json:"steps"`
	Cost         float64  `json:"cost"`
	DurationMS   int64    `json:"duration_ms"`
	Tries        int      `json:"tries"`
	URL          string   `json:"url"`
	APIURL       string   `json:"api_url"`
}

// Timeline is an attempt's timeline with signed artifact URLs
// (GET /api/v1/runs/{id}/attempts/{attempt_id}).
type Timeline struct {
	Run        RunItem      `json:"run"`
	Attempt    TimelineTry  `json:"attempt"`
	Task       TimelineTask `json:"task"`
	Evaluation *Evaluation  `json:"evaluation"` // the primary verdict, null until evaluated or when not judged
	// Evaluations are every verdict, newest first: the current one of each
	// kind (check, judge, rubric) and the history re-scoring kept.
	Evaluations []Evaluation   `json:"evaluations"`
	Steps       []TimelineStep `json:"steps"`
}

// TimelineTry is the attempt of a timeline.
type TimelineTry struct {
	ID           int64           `json:"id"`
	Status       string          `json:"status"`
	Outcome      string          `json:"outcome"`
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	Score        *float64        `json:"score"`
	Steps        int             `json:"steps"`
	TokensIn     int64           `json:"tokens_in"`
	TokensOut    int64           `json:"tokens_out"`
	Cost         float64         `json:"cost"`
	DurationMS   int64           `json:"duration_ms"`
	Tries        int             `json:"tries"`
	FinalAnswer  json.RawMessage `json:"final_answer"`
	StartedAt    *time.Time      `json:"started_at"`
	FinishedAt   *time.Time      `json:"finished_at"`
	URL          string          `json:"url"`
}

// TimelineTask is a task's public fields only.
type TimelineTask struct {
	ID         string   `json:"id"`
	Intent     string   `json:"intent"`
	StartURLs  []string `json:"start_urls"`
	Sites      []string `json:"sites"`
	TaskType   string   `json:"task_type"`
	Difficulty string   `json:"difficulty"`
	Domain     string   `json:"domain"`
	Attributes []string `json:"attributes"`
}

// Evaluation is one verdict on an attempt.
type Evaluation struct {
	Evaluator        string           `json:"evaluator"`
	EvaluatorVersion string           `json:"evaluator_version"`
	Kind             string           `json:"kind"`
	Primary          bool             `json:"primary"`
	Current          bool             `json:"current"`
	Rescore          bool             `json:"rescore"`
	Verdict          string           `json:"verdict"`
	Score            *float64         `json:"score"`
	JudgeScore       *int             `json:"judge_score"`
	InputsChecksum   string           `json:"inputs_checksum"`
	TokensIn         int64            `json:"tokens_in"`
	TokensOut        int64            `json:"tokens_out"`
	Cost             float64          `json:"cost"`
	Rubric           []RubricJudgment `json:"rubric"`
	Details          json.RawMessage  `json:"details"`
	CreatedAt        time.Time        `json:"created_at"`
}

// RubricJudgment is an evaluation's judgment of one rubric item.
type RubricJudgment struct {
	Key       string `json:"key"`
	Passed    bool   `json:"passed"`
	Rationale string `json:"rationale"`
	Steps     []int  `json:"steps"`
}

// TimelineStep is one step of a timeline.
type TimelineStep struct {
	Index           int             `json:"index"`
	Action          json.RawMessage `json:"action"`
	Summary         string          `json:"summary"`
	Thought         string          `json:"thought"`
	URL             string          `json:"url"`
	Title           string          `json:"title"`
	Error           string          `json:"error"`
	BlockedRequests []string        `json:"blocked_requests"`
	ObserveMS       int64           `json:"observe_ms"`
	AgentMS         int64           `json:"agent_ms"`
	ActMS           int64           `json:"act_ms"`
	PersistMS       int64           `json:"persist_ms"`
	TokensIn        int64           `json:"tokens_in"`
	TokensOut       int64           `json:"tokens_out"`
	Cost            float64         `json:"cost"`
	ScreenshotURL   string          `json:"screenshot_url,omitempty"`
	ThumbnailURL    string          `json:"thumbnail_url,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
}

// Retried is the answer of POST /api/v1/runs/{id}/retry.
type Retried struct {
	Requeued int    `json:"requeued"`
	APIURL   string `json:"api_url"`
}

// ResultLine is one line of a run's results export
// (GET /api/v1/runs/{id}/results.jsonl): the WebArena-Verified evaluation
// result of the attempt's task (task_id, sites, task_revision, status, score
// and, from the benchmark's deterministic check, evaluators_results), then
// Proctor's own fields about the attempt.
type ResultLine struct {
	TaskID            any             `json:"task_id"` // a number when the benchmark's task id is one, as in WebArena-Verified
	Sites             []string        `json:"sites"`
	TaskRevision      int             `json:"task_revision"`
	Status            *string         `json:"status"` // the primary evaluation's verdict; null until evaluated
	Score             *float64        `json:"score"`
	EvaluatorsResults json.RawMessage `json:"evaluators_results,omitempty"`
	ErrorMsg          *string         `json:"error_msg,omitempty"`
	Evaluator         string          `json:"evaluator,omitempty"`
	EvaluatorVersion  string          `json:"evaluator_version,omitempty"`

	AttemptID     int64   `json:"attempt_id"`
	AttemptStatus string  `json:"attempt_status"`
	Outcome       *string `json:"outcome"` // success | failure | error; null without one
	ErrorClass    string  `json:"error_class,omitempty"`
	Steps         int     `json:"steps"`
	TokensIn      int64   `json:"tokens_in"`
	TokensOut     int64   `json:"tokens_out"`
	Cost          float64 `json:"cost"`
	DurationMS    int64   `json:"duration_ms"`
	JudgeScore    *int    `json:"judge_score"`
	TimelineURL   string  `json:"timeline_url"`
}
