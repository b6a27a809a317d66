package models

import "time"

// Run statuses.
const (
	RunQueued     = "queued"
	RunRunning    = "running"
	RunEvaluating = "evaluating"
	RunCompleted  = "completed"
	RunFailed     = "failed"
	RunCanceled   = "canceled"
)

// Run origins, shown as a badge on the leaderboard.
const (
	OriginExecuted   = "executed"   // executed by Proctor
	OriginUploaded   = "uploaded"   // uploaded through the submission portal
	OriginReproduced = "reproduced" // uploaded, then reproduced by admins
	// OriginCandidates is a hidden-tests run: its team submitted candidate
	// websites and Proctor ran the benchmark's hidden tests against them.
	// It is stored as OriginUploaded (the run's results came from outside
	// until Proctor tested them) and shown as this (ShownOrigin).
	OriginCandidates = "candidates"
)

// RunOrigins lists the origins runs are shown with, as the leaderboard's
// origin filter offers them.
func RunOrigins() []string {
	return []string{OriginExecuted, OriginUploaded, OriginReproduced, OriginCandidates}
}

// ShownOrigin is a run's origin as pages, exports and the API show it: an
// uploaded run of a benchmark that grades candidate websites (hidden tests)
// is OriginCandidates, since what its team uploaded is websites that Proctor
// tested, not trajectories; any other run keeps its stored origin.
func ShownOrigin(stored string, gradesCandidates bool) string {
	if stored == OriginUploaded && gradesCandidates {
		return OriginCandidates
	}
	return stored
}

// OriginLabel names a run's origin (as ShownOrigin gives it) the way badges
// and summaries print it.
func OriginLabel(origin string) string {
	switch origin {
	case OriginExecuted:
		return "executed by Proctor"
	case OriginUploaded:
		return "uploaded"
	case OriginReproduced:
		return "reproduced by admins"
	case OriginCandidates:
		return "candidates submitted, tested by Proctor"
	}
	return origin
}

// Run is one agent's pass over a benchmark subset. AgentSnapshot freezes the agent
// configuration the run used, so later edits of the agent do not change it.
type Run struct {
	ID                  int64
	TeamID              int64
	AgentID             int64
	VersionID           int64
	SubsetName          string
	Status              string
	Origin              string
	AgentSnapshot       string // JSON, secrets excluded
	MaxSteps            int
	MaxEpisodeSeconds   int
	MaxAgentCallSeconds int
	MaxCost             *float64
	Parallelism         int
	// AgentConnects is set for a run of an agent that connects to Proctor (kind
	// mcp, or an http agent in pull mode): its episodes wait for the agent's
	// claims instead of being queued for a worker to call it.
	AgentConnects bool
	Notes         string
	Published     bool
	Verified      bool
	CreatedBy     *int64
	CreatedAt     time.Time
	StartedAt     *time.Time
	FinishedAt    *time.Time
	RescoredAt    *time.Time
	RescoredWith  string // the evaluators of the last re-scoring, e.g. "webarena-verified@2"
	// RescoreID is the last re-scoring request; RescoreSuccessesBefore the
	// run's successes before it graded its first attempt (nil before any
	// re-scoring), RescoreChanged how many attempts' outcomes it changed.
	RescoreID              string
	RescoreSuccessesBefore *int
	RescoreChanged         int
	// EvaluationsVersion counts the evaluations recorded for the run;
	// MetricsVersion is the count its precomputed metrics reflect.
	EvaluationsVersion int64
	MetricsVersion     int64

	TasksTotal int
	TasksDone  int
	Successes  int
	Failures   int
	Errors     int
	ScoreSum   float64
	StepsSum   int
	TokensIn   int64
	TokensOut  int64
	Cost       float64

	Agent   *Agent            `gorm:"foreignKey:AgentID"`
	Team    *Team             `gorm:"foreignKey:TeamID"`
	Version *BenchmarkVersion `gorm:"foreignKey:VersionID"`
}

// Attempt outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeError   = "error"
)

// Attempt statuses.
const (
	AttemptPending    = "pending"
	AttemptRunning    = "running"
	AttemptEvaluating = "evaluating"
	AttemptDone       = "done"
)

// Error classes say why an episode ended early. An attempt that ran out of
// budget (steps, cost: ErrorClassBudget; the episode's time:
// ErrorClassTimeout) failed its task; the others were errors, whose fault
// the class names.
const (
	ErrorClassAgent       = "agent"
	ErrorClassEnvironment = "environment"
	ErrorClassPlatform    = "platform"
	ErrorClassBudget      = "budget"
	ErrorClassTimeout     = "timeout"
)

// BudgetExhausted reports whether an episode that ended with this class ran
// out of one of its budgets.
func BudgetExhausted(errorClass string) bool {
	return errorClass == ErrorClassBudget || errorClass == ErrorClassTimeout
}

// AttemptOutcome is an attempt's outcome from its evaluator's verdict and
// how its episode ended. A success stands. An episode that ran out of
// budget is graded like any other (an agent out of steps usually failed,
// as benchmarks count it; its class says why). One that ended in any other
// error is an error, not charged as a failure.
func AttemptOutcome(verdict, errorClass string) string {
	if errorClass == "" || verdict == OutcomeSuccess || BudgetExhausted(errorClass) {
		return verdict
	}
	return OutcomeError
}

// Attempt is one task inside a run.
type Attempt struct {
	ID           int64
	RunID        int64
	TaskID       int64
	Status       string
	Outcome      string
	ErrorClass   string
	ErrorMessage string // what everyone who may see the run reads; server paths replaced
	// ErrorDetail is a platform error's full text, for administrators. GORM
	// writes it but never reads it back into an Attempt, so no listing, page
	// or export can carry it; Timeline.ErrorDetail is its one way out.
	ErrorDetail string `gorm:"->:false;<-"`
	Score       *float64
	Steps       int
	TokensIn    int64
	TokensOut   int64
	Cost        float64
	// Usage an uploaded attempt's bundle did not state: its Steps, TokensIn
	// and TokensOut, Cost are then zero and mean nothing.
	Unknown      Unknown `gorm:"embedded"`
	StartedAt    *time.Time
	FinishedAt   *time.Time
	DurationMS   int64
	FinalAnswer  string // JSON
	HARKey       string
	PageStateKey string // artifact key of the live-page state read at the end (eval.PageState JSON)
	// Tries counts episode starts; a restarted episode (worker lost, environment
	// retry) starts clean under a new namespace and artifact prefix.
	Tries     int
	Namespace string // the sandbox/site namespace of the current try
	// WorkerID is the lease of the process running the current try ("" when
	// none): its attempts are released when that lease lapses.
	WorkerID  string
	CreatedAt time.Time
	UpdatedAt time.Time

	Task *Task `gorm:"foreignKey:TaskID"`
}

// Unknown marks an attempt's (or a board entry's) usage figures that are not
// known: an uploaded bundle did not state them. Pages show "—" for them and
// sort them last; exports leave them empty.
type Unknown struct {
	Steps  bool `gorm:"column:steps_unknown" json:"steps,omitempty"`
	Tokens bool `gorm:"column:tokens_unknown" json:"tokens,omitempty"`
	Cost   bool `gorm:"column:cost_unknown" json:"cost,omitempty"`
}

// Any reports whether some figure is unknown.
func (u Unknown) Any() bool { return u.Steps || u.Tokens || u.Cost }

// Step is one observe–ask–act cycle of an attempt. Artifacts are stored before the
// row that points at them.
type Step struct {
	ID              int64
	AttemptID       int64
	Index           int    `gorm:"column:step_index"`
	Action          string // JSON
	Thought         string
	URL             string
	Title           string
	Tabs            string // JSON
	ScreenshotKey   string
	ThumbnailKey    string
	AXTreeKey       string
	Error           string
	BlockedRequests string // JSON
	ObserveMS       int64
	AgentMS         int64
	ActMS           int64
	// PersistMS is how long storing the step's artifacts took, up to the
	// writing of its row; it runs beside the agent's next step, so it is
	// not part of StepStart's reckoning.
	PersistMS int64
	TokensIn  int64
	TokensOut int64
	Cost      float64
	CreatedAt time.Time
}

// Evaluation kinds: an attempt has at most one current evaluation of each.
const (
	EvaluationCheck  = "check"  // the benchmark's deterministic check (WebArena-Verified, WebArena)
	EvaluationJudge  = "judge"  // an LLM trajectory judge: success and a 1–5 score
	EvaluationRubric = "rubric" // an LLM rubric judge: pass/fail per rubric item
)

// Evaluation is one evaluator's verdict on an attempt. Re-scoring adds rows and
// never overwrites history: IsCurrent marks the newest row of each Kind, and
// IsPrimary the verdict that sets the attempt's outcome.
type Evaluation struct {
	ID               int64
	AttemptID        int64
	Evaluator        string // e.g. webarena-verified, llm-judge:<model>:<prompt-version>
	EvaluatorVersion string
	Kind             string // EvaluationCheck, EvaluationJudge or EvaluationRubric
	IsPrimary        bool
	IsCurrent        bool
	Rescore          bool   // made by a re-scoring rather than when the attempt finished
	RescoreID        string // the re-scoring request that made it
	InputsChecksum   string // SHA-256 of what the evaluator read (spec, answer, HAR, page state, trajectory)
	Verdict          string // success | failure | error
	Score            *float64
	JudgeScore       *int   // 1–5 where the evaluator gives one
	Details          string // JSON
	TokensIn         int64  // what judging cost
	TokensOut        int64
	Cost             float64
	CreatedAt        time.Time

	RubricJudgments []RubricJudgment `gorm:"foreignKey:EvaluationID"`
}

// RubricJudgment is an evaluation's pass/fail on one rubric item.
type RubricJudgment struct {
	ID            int64
	EvaluationID  int64
	RubricItemID  int64
	Passed        bool
	Rationale     string
	EvidenceSteps JSONInts // step numbers the judge cited
}

// LeaderboardEntry is a precomputed leaderboard row for one run on one subset,
// recomputed whenever the run's evaluations change.
type LeaderboardEntry struct {
	ID          int64
	RunID       int64
	BenchmarkID int64
	VersionID   int64
	SubsetName  string
	Restricted  bool // a full run shown on a subset board, restricted to its tasks
	Tasks       int
	Successes   int
	// SuccessRate is the share of the run's graded attempts on the subset
	// that succeeded, and CILow and CIHigh its Wilson 95% interval (on a
	// hidden-tests benchmark, the pass rate of HiddenPassed of HiddenRan).
	SuccessRate float64
	CILow       float64
	CIHigh      float64
	JudgeScore  *float64
	RubricScore *float64
	PerfectRate *float64
	Efficiency  *float64
	MeanSteps   float64
	CostPerTask float64
	Tokens      int64
	// Unknown: some counted attempt's upload did not state these figures.
	Unknown Unknown `gorm:"embedded"`
	Judged  int     // attempts with a judge score
	// Hidden-tests boards: the mean over the board's tasks of each task's
	// pass rate, overall and per group (R, B, S); nil on other benchmarks.
	HiddenOverall *float64
	HiddenRequest *float64
	HiddenBrowser *float64
	HiddenSystem  *float64
	// HiddenPassed and HiddenRan count a hidden-tests board's tests, every
	// task's together: passed, and run (those not run left out). The
	// entry's SuccessRate and interval are then their pass rate
	// (models.HiddenPassRate); nil on other benchmarks.
	HiddenPassed *int
	HiddenRan    *int
	Metrics      string // the MetricsReport, JSON
	ComputedAt   time.Time
}

// RescoreScope selects the attempts a re-scoring grades again: one run, every
// run of one benchmark, or (both zero) everything.
type RescoreScope struct {
	RunID       int64
	BenchmarkID int64
}
