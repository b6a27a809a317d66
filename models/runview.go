package models

import (
	"encoding/json"
	"time"
)

// ErrorClassCanceled marks attempts that never finished because their run was
// canceled; they are not charged to the agent.
const ErrorClassCanceled = "canceled"

// RunFilter selects runs for a listing. TeamSlug "" lists every team's runs the
// caller may see; Page counts from 1.
type RunFilter struct {
	TeamSlug string
	Page     int
	PerPage  int
}

// RunListItem is one run in a listing, with what it ran and how far it got.
type RunListItem struct {
	ID            int64
	Status        string
	Origin        string
	AgentName     string
	AgentSlug     string
	TeamSlug      string
	TeamName      string
	BenchmarkSlug string
	BenchmarkName string
	Subset        string
	TasksDone     int
	TasksTotal    int
	Successes     int
	Errors        int
	Published     bool
	CreatedAt     time.Time
	FinishedAt    *time.Time
	// Blind says Successes and Errors are withheld: the viewer annotates
	// some of the run's attempts in an open blind study.
	Blind bool `gorm:"-"`
}

// Finished reports whether the listed run has reached a final status.
func (r RunListItem) Finished() bool { return Run{Status: r.Status}.Finished() }

// TeamRunList is one page of a team's runs as the caller may see them.
type TeamRunList struct {
	Team  Team
	Runs  []RunListItem
	Total int
	// CanQueue is true for the team's members and administrators.
	CanQueue bool
}

// AttemptListItem is one attempt of a run with its task, for the run's table.
type AttemptListItem struct {
	ID             int64
	RunID          int64
	TaskExternalID string
	Intent         string
	Status         string
	Outcome        string
	ErrorClass     string
	ErrorMessage   string
	Score          *float64
	Steps          int
	Cost           float64
	Unknown        Unknown `gorm:"embedded"` // usage an upload did not state
	DurationMS     int64
	Tries          int
}

// RunPage is what a run's page shows: its live progress, whether the caller may
// cancel, retry or re-run it, and one page of its attempts.
type RunPage struct {
	Progress      RunProgress
	CanManage     bool
	Attempts      []AttemptListItem
	AttemptsTotal int
	Page          int
	PerPage       int
}

// RunFormOptions is what the queue-a-run form offers a team: its executable
// agents and the benchmarks it may run, with their named subsets.
type RunFormOptions struct {
	Team       Team
	Agents     []Agent
	Benchmarks []RunFormBenchmark
}

// RunFormBenchmark is a benchmark offered by the queue form.
type RunFormBenchmark struct {
	Slug    string
	Name    string
	Tasks   int
	Subsets []string // named subsets of the current version; "full" is implicit
}

// Timeline is one attempt as its timeline page shows it. Task holds public
// fields only: the evaluation spec, reference answers and actions never reach it.
type Timeline struct {
	Run        RunListItem
	Attempt    Attempt
	Task       Task
	Steps      []TimelineStep
	Evaluation *Evaluation // the primary verdict; nil until evaluated (or not judged)
	// Evaluations are every verdict on the attempt, newest first: the current
	// one of each kind, then the history that re-scoring kept.
	Evaluations []Evaluation
	// FinalAction is the episode's final action decoded, nil when there is none.
	FinalAction *Action
	CanManage   bool
	// MayRevealAnswer says the caller may reveal the task's expected answer
	// (administrators), as the run service decides.
	MayRevealAnswer bool
	// ErrorDetail is the attempt's platform error in full, server paths
	// included: filled for administrators only, "" for everyone else.
	ErrorDetail string
	// Hidden is the attempt's hidden-test tally when its benchmark is a
	// hidden-tests one (nil otherwise): such an attempt has no steps of its
	// own, its tests are its record.
	Hidden *TimelineHiddenTests
}

// TimelineHiddenTests is what an attempt's page shows of its hidden tests.
type TimelineHiddenTests struct {
	Summary HiddenSummary
	// CanBrowse says whether the caller may open the attempt's test browser
	// (see storage's rules on hidden tests).
	CanBrowse bool
}

// TimelineStep is a step with its action decoded for display.
type TimelineStep struct {
	Step    Step
	Action  *Action  // nil when the agent gave no valid action
	Blocked []string // requests the browser blocked during the step
}

// TimelineStepOf is a stored step as the timeline shows it, its action and
// blocked requests decoded.
func TimelineStepOf(s Step) TimelineStep {
	ts := TimelineStep{Step: s, Action: DecodeAction(s.Action)}
	if s.BlockedRequests != "" {
		_ = json.Unmarshal([]byte(s.BlockedRequests), &ts.Blocked)
	}
	return ts
}

// Point returns the action's viewport coordinates when it targets a point.
func (s TimelineStep) Point() (x, y float64, ok bool) {
	if s.Action == nil || s.Action.Target == nil || s.Action.Target.X == nil || s.Action.Target.Y == nil {
		return 0, 0, false
	}
	return *s.Action.Target.X, *s.Action.Target.Y, true
}

// DecodeAction decodes an action stored as JSON; nil when raw is empty or not an action.
func DecodeAction(raw string) *Action {
	if raw == "" {
		return nil
	}
	var a Action
	if err := json.Unmarshal([]byte(raw), &a); err != nil || a.Type == "" {
		return nil
	}
	return &a
}

// RunAgentSnapshot decodes the agent configuration a run froze; the zero value
// when it is missing or unreadable.
func RunAgentSnapshot(r *Run) AgentSnapshot {
	var s AgentSnapshot
	_ = json.Unmarshal([]byte(r.AgentSnapshot), &s)
	return s
}

// Current returns the attempt's current evaluation of a kind, nil when none.
func (t *Timeline) Current(kind string) *Evaluation {
	for i := range t.Evaluations {
		if t.Evaluations[i].Kind == kind && t.Evaluations[i].IsCurrent {
			return &t.Evaluations[i]
		}
	}
	return nil
}

// RubricItem returns the task's rubric item with the given id, nil when none.
func (t *Timeline) RubricItem(id int64) *RubricItem {
	for i := range t.Task.RubricItems {
		if t.Task.RubricItems[i].ID == id {
			return &t.Task.RubricItems[i]
		}
	}
	return nil
}

// WithholdResults hides the run's outcome counts from a viewer who
// annotates some of its attempts in an open blind study.
func (r *RunListItem) WithholdResults() {
	r.Blind, r.Successes, r.Errors = true, 0, 0
}
