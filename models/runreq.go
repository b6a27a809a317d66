package models

import (
	"encoding/json"
	"strings"
	"time"
)

// Run budget defaults and bounds.
const (
	DefaultMaxSteps            = 30
	MaxMaxSteps                = 500
	DefaultMaxEpisodeSeconds   = 600
	DefaultMaxAgentCallSeconds = 60
	MaxParallelism             = 32
)

// RunRequest is what a team asks for when queuing a run.
type RunRequest struct {
	TeamSlug            string
	AgentSlug           string
	BenchmarkSlug       string
	Subset              string // "full" or a subset name
	MaxSteps            int
	MaxEpisodeSeconds   int
	MaxAgentCallSeconds int
	MaxCost             *float64
	Parallelism         int
	Notes               string
}

// Normalize fills defaults and validates the request, naming the field at fault.
func (r *RunRequest) Normalize() error {
	r.Subset = strings.TrimSpace(r.Subset)
	if r.Subset == "" {
		r.Subset = SubsetFull
	}
	if r.AgentSlug == "" {
		return FieldError("agent", "choose an agent")
	}
	if r.BenchmarkSlug == "" {
		return FieldError("benchmark", "choose a benchmark")
	}
	if r.MaxSteps == 0 {
		r.MaxSteps = DefaultMaxSteps
	}
	if r.MaxSteps < 1 || r.MaxSteps > MaxMaxSteps {
		return FieldError("max_steps", "max steps must be between 1 and %d", MaxMaxSteps)
	}
	if r.MaxEpisodeSeconds == 0 {
		r.MaxEpisodeSeconds = DefaultMaxEpisodeSeconds
	}
	if r.MaxEpisodeSeconds < 10 || r.MaxEpisodeSeconds > 6*3600 {
		return FieldError("max_episode_seconds", "seconds per episode must be between 10 and 21600")
	}
	if r.MaxAgentCallSeconds == 0 {
		r.MaxAgentCallSeconds = min(DefaultMaxAgentCallSeconds, r.MaxEpisodeSeconds)
	}
	if r.MaxAgentCallSeconds < 1 || r.MaxAgentCallSeconds > r.MaxEpisodeSeconds {
		return FieldError("max_agent_call_seconds", "seconds per agent call must be between 1 and the seconds per episode")
	}
	if r.MaxCost != nil && *r.MaxCost <= 0 {
		return FieldError("max_cost", "max cost must be positive, or left empty for no limit")
	}
	if r.Parallelism == 0 {
		r.Parallelism = 1
	}
	if r.Parallelism < 1 || r.Parallelism > MaxParallelism {
		return FieldError("parallelism", "parallelism must be between 1 and %d", MaxParallelism)
	}
	if len(r.Notes) > 2000 {
		return FieldError("notes", "notes must be at most 2000 characters")
	}
	return nil
}

// AgentSnapshot is the agent configuration a run froze when it was queued.
// Secrets are not copied: the run reads them from the agent when it executes.
type AgentSnapshot struct {
	ID          int64           `json:"id"`
	Slug        string          `json:"slug"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Model       string          `json:"model"`
	Framework   string          `json:"framework"`
	OpenSource  bool            `json:"open_source"`
	EndpointURL string          `json:"endpoint_url"`
	Config      json.RawMessage `json:"config,omitempty"`
	SecretNames []string        `json:"secret_names,omitempty"`
}

// SnapshotOf freezes an agent's configuration.
func SnapshotOf(a *Agent) AgentSnapshot {
	s := AgentSnapshot{ID: a.ID, Slug: a.Slug, Name: a.Name, Kind: a.Kind, Model: a.Model,
		Framework: a.Framework, OpenSource: a.OpenSource, EndpointURL: a.EndpointURL, SecretNames: a.SecretNameList()}
	if strings.TrimSpace(a.Config) != "" && json.Valid([]byte(a.Config)) {
		s.Config = json.RawMessage(a.Config)
	}
	return s
}

// EpisodeSpec is everything a worker needs to execute one attempt's try.
type EpisodeSpec struct {
	Run       Run
	Attempt   Attempt
	Task      Task // with hidden fields: the replay agent plays the reference actions
	Agent     AgentSnapshot
	Sites     []Site
	Try       int
	Namespace string
	Evaluator string // the benchmark's evaluator kind (models.Evaluator…)

	// Filled for evaluation only:
	Steps []Step // the attempt's steps in order
	// Judge is the benchmark's own LLM judge (key opened); empty BaseURL when
	// the benchmark uses the server's judge.
	Judge JudgeSettings
}

// JudgeSettings name an OpenAI-compatible endpoint used as an LLM judge.
type JudgeSettings struct {
	BaseURL string
	Model   string
	APIKey  string
	// KeyError says why the benchmark's sealed key could not be opened (a
	// changed server secret, say); such a judge is not used.
	KeyError string
}

// RunProgress is a run's live state for its page.
type RunProgress struct {
	Run     Run
	Pending int
	// WaitingForAgent counts, for a run whose agent connects, the pending
	// attempts no claim has taken yet.
	WaitingForAgent int
	Running         int
	Done            int
	ErrorsBy        map[string]int // by error class
	// OutOfBudget counts the failures whose episodes ran out of budget.
	OutOfBudget int
	ETA         time.Duration // zero when unknown
	AgentName   string
	TeamSlug    string
	TeamName    string
	Benchmark   string
	BenchmarkID int64
	// Blind says the run's results are withheld: the viewer annotates some
	// of its attempts in an open blind study (WithholdResults).
	Blind bool
}

// WithholdResults blanks what the run's attempts scored (successes,
// failures, errors and their classes, scores, re-scoring changes), keeping
// how far the run got, for an annotator of a blind study over it.
func (p *RunProgress) WithholdResults() {
	p.Blind = true
	p.Run.Successes, p.Run.Failures, p.Run.Errors, p.Run.ScoreSum = 0, 0, 0, 0
	p.Run.RescoreSuccessesBefore, p.Run.RescoreChanged = nil, 0
	p.ErrorsBy, p.OutOfBudget = map[string]int{}, 0
}

// Percent is the share of attempts done, 0–100.
func (p RunProgress) Percent() int {
	if p.Run.TasksTotal == 0 {
		return 0
	}
	return p.Done * 100 / p.Run.TasksTotal
}

// Finished reports whether the run has reached a final status.
func (r Run) Finished() bool {
	return r.Status == RunCompleted || r.Status == RunFailed || r.Status == RunCanceled
}

// PlaysReferenceScript reports whether an agent would replay the benchmark's
// hidden reference actions: a replay agent without a script of its own.
func (s AgentSnapshot) PlaysReferenceScript() bool {
	if s.Kind != AgentReplay {
		return false
	}
	var settings struct {
		Actions json.RawMessage `json:"actions"`
	}
	_ = json.Unmarshal(s.Config, &settings)
	return len(settings.Actions) == 0
}

// CheckReferenceReplay refuses a run that would reveal hidden reference actions:
// replaying them is for administrators, or for benchmarks whose references are public.
func CheckReferenceReplay(actor Actor, snap AgentSnapshot, b *Benchmark) error {
	if snap.PlaysReferenceScript() && !b.RevealReferences && !actor.Privileged() {
		return FieldError("agent", "%s would replay %s's hidden reference actions, which only administrators may run; give the agent a script of its own (settings \"actions\")", snap.Name, b.Slug)
	}
	return nil
}

// LastRescore is what the run's last re-scoring changed: successes before
// and now, the task count, the attempts whose outcome changed and the
// evaluators; not Known for a run never re-scored.
func (r Run) LastRescore() RescoreChange {
	successes, tasks := r.Successes, r.TasksTotal
	return RescoreChange{SuccessesBefore: r.RescoreSuccessesBefore, SuccessesAfter: &successes, Tasks: &tasks,
		ChangedAttempts: r.RescoreChanged, Evaluators: r.RescoredWith}
}

// CheckDailyQuota is ERATELIMIT when a team that has created recent runs in
// the last 24 hours has reached its daily quota (0 = unlimited); admins and
// the system are exempt.
func CheckDailyQuota(actor Actor, team *Team, recent int64, dailyQuota int) error {
	if dailyQuota <= 0 || actor.Privileged() {
		return nil
	}
	if recent >= int64(dailyQuota) {
		return Errorf(ERATELIMIT, "Team %s has queued %d runs in the last 24 hours, its daily quota; try again later or ask an administrator.", team.Slug, recent)
	}
	return nil
}
