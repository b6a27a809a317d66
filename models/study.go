package models

import (
	"strconv"
	"time"
)

// Study statuses. A study is set up as a draft (its sample is drawn when it is
// created; annotators are invited and judges configured), opened (assignments
// are made and annotators label), and closed (labels are final).
const (
	StudyDraft  = "draft"
	StudyOpen   = "open"
	StudyClosed = "closed"
)

// Sampling methods.
const (
	SampleRandom     = "random"     // a uniform sample of the sources' attempts
	SampleStratified = "stratified" // proportional to the strata of StratifyBy, at least one per stratum when size allows
)

// Strata a sample can be stratified by.
const (
	StratumOutcome    = "outcome"    // the attempt's outcome (success, failure, error)
	StratumAgent      = "agent"      // the run's agent
	StratumSite       = "site"       // the task's site (or "multi-site")
	StratumDifficulty = "difficulty" // the task's difficulty label ("unlabelled" when it has none)
)

// StudyStrata lists the strata in form order.
func StudyStrata() []string {
	return []string{StratumOutcome, StratumAgent, StratumSite, StratumDifficulty}
}

// Study labels: the questions a study asks. The first five are
// agreement.Label names; StudyLabelRubric asks pass or fail for each rubric
// item of the item's task, stored under RubricLabelKey(item id).
const (
	StudyLabelSuccess    = "success"     // successful | unsuccessful | unsure
	StudyLabelScore      = "score"       // 1 … 5
	StudyLabelSideEffect = "side_effect" // yes | no | unsure
	StudyLabelLooping    = "looping"     // yes | no
	StudyLabelOptimality = "optimality"  // 1 complete failure … 4 completely optimal
	StudyLabelRubric     = "rubric"      // pass | fail per rubric item
)

// StudyLabelNames lists every label a study may ask, in form order.
func StudyLabelNames() []string {
	return []string{StudyLabelSuccess, StudyLabelScore, StudyLabelSideEffect, StudyLabelLooping, StudyLabelOptimality, StudyLabelRubric}
}

// Rubric answers.
const (
	RubricPass = "pass"
	RubricFail = "fail"
)

// RubricLabelKey is the StudyLabels key of a rubric item's pass/fail answer.
func RubricLabelKey(rubricItemID int64) string {
	return StudyLabelRubric + ":" + strconv.FormatInt(rubricItemID, 10)
}

// Judge prompts a study judge configuration may use: the trajectory judge's
// versions answer success and the 1–5 score; the labels prompt answers every
// AgentRewardBench label (success, side effect, looping, optimality) and the
// score. Rubric items are judged by the rubric judge when the study asks for
// them.
const (
	StudyPromptTrajectoryV1 = "trajectory-v1"
	StudyPromptTrajectoryV2 = "trajectory-v2"
	StudyPromptLabelsV1     = "labels-v1"
)

// StudyPrompts lists the prompts in form order.
func StudyPrompts() []string {
	return []string{StudyPromptLabelsV1, StudyPromptTrajectoryV2, StudyPromptTrajectoryV1}
}

// Limits of a study.
const (
	MaxStudySample      = 5000 // items in one study
	MaxStudyAnnotators  = 200
	MaxStudyJudges      = 20
	MaxStudyNameLen     = 200
	MaxStudyDescription = 4000
	MaxStudyReasonLen   = 1000 // a skip or flag reason
)

// Study is a human-vs-LLM-judge agreement study over a sample of attempts.
type Study struct {
	ID          int64
	OwnerID     int64
	Name        string
	Description string
	Status      string
	// Sources: the runs sampled from, and benchmarks whose every completed
	// run the owner may see is sampled from. The owner must be able to see
	// each source run when the study is created.
	RunIDs       JSONList[int64]
	BenchmarkIDs JSONList[int64]
	Sampling     string // SampleRandom or SampleStratified
	StratifyBy   string // a Stratum* when stratified, else ""
	Seed         int64
	SampleSize   int // items asked for; ItemCount is what the sources gave
	ItemCount    int
	// OverlapFraction of the items (rounded) go to OverlapAnnotators
	// annotators each, for human-vs-human agreement; the rest to one.
	OverlapFraction   float64
	OverlapAnnotators int
	// Blind keeps judge verdicts, automatic scores and other annotators'
	// labels from annotators, on every page and API answer.
	Blind     bool
	Labels    JSONStrings          // StudyLabel* names, in StudyLabelNames order
	Judges    JSONList[StudyJudge] // the judge configurations compared
	CreatedAt time.Time
	UpdatedAt time.Time
	OpenedAt  *time.Time
	ClosedAt  *time.Time
}

// Asks reports whether the study collects a label.
func (s *Study) Asks(label string) bool {
	for _, l := range s.Labels {
		if l == label {
			return true
		}
	}
	return false
}

// StudyJudge is one LLM judge configuration a study compares. Every
// configuration calls the server's judge endpoint (PROCTOR_JUDGE_BASE_URL),
// so a study owner never points the server at an address of their choosing.
type StudyJudge struct {
	Name          string `json:"name"`          // unique in the study, shown in reports
	Model         string `json:"model"`         // "" means the server judge's model
	Prompt        string `json:"prompt"`        // a StudyPrompt*
	Screenshots   bool   `json:"screenshots"`   // send screenshots
	Accessibility bool   `json:"accessibility"` // send each step's accessibility text
}

// StudyRequest creates a study.
type StudyRequest struct {
	Name              string       `json:"name"`
	Description       string       `json:"description"`
	RunIDs            []int64      `json:"run_ids"`
	Benchmarks        []string     `json:"benchmarks"` // slugs
	Sampling          string       `json:"sampling"`
	StratifyBy        string       `json:"stratify_by"`
	Seed              int64        `json:"seed"`
	SampleSize        int          `json:"sample_size"`
	OverlapFraction   float64      `json:"overlap_fraction"`
	OverlapAnnotators int          `json:"overlap_annotators"` // 0 means 2
	Blind             bool         `json:"blind"`
	Labels            []string     `json:"labels"`
	Judges            []StudyJudge `json:"judges"`
	Annotators        []string     `json:"annotators"` // emails of users to invite
}

// StudyItem is one sampled attempt in a study.
type StudyItem struct {
	ID        int64
	StudyID   int64
	AttemptID int64
	Position  int    // 1-based, in sample order
	Stratum   string // the stratum it was drawn from; "" for random samples
}

// StudyAnnotator is a user invited to annotate a study.
type StudyAnnotator struct {
	ID        int64
	StudyID   int64
	UserID    int64
	InvitedBy int64
	InvitedAt time.Time
}

// Assignment statuses.
const (
	AssignmentPending = "pending" // not submitted yet (labels may be autosaved)
	AssignmentDone    = "done"    // labels submitted
	AssignmentSkipped = "skipped" // skipped with a reason
	AssignmentFlagged = "flagged" // flagged with a reason (a broken trajectory, say)
)

// StudyAssignment gives one study item to one annotator and holds their
// labels. Imported labels (CSV) have UserID 0 and the file's annotator name.
type StudyAssignment struct {
	ID            int64
	StudyID       int64
	StudyItemID   int64
	UserID        int64
	AnnotatorName string // imported labels only
	Position      int    // 1-based, in the annotator's queue
	Status        string
	Reason        string      // why it was skipped or flagged
	Labels        StudyLabels // label → canonical value (agreement.Spec.Parse)
	TimeSpentMS   int64
	SubmittedAt   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// StudyLabelInput is what the annotation form or API sends for one item.
type StudyLabelInput struct {
	// Labels are label → value in any spelling agreement.Spec.Parse accepts;
	// rubric items under RubricLabelKey. A label left out keeps its saved
	// value; "" clears it.
	Labels map[string]string `json:"labels"`
	// Action: "save" (autosave, status unchanged), "submit" (every asked label
	// answered), "skip" or "flag" (Reason required).
	Action string `json:"action"`
	Reason string `json:"reason"`
	// TimeSpentMS is the time spent on the item since the last save; it is
	// added up (capped per save at MaxStudyTimeDelta).
	TimeSpentMS int64 `json:"time_spent_ms"`
}

// Label input actions.
const (
	LabelActionSave   = "save"
	LabelActionSubmit = "submit"
	LabelActionSkip   = "skip"
	LabelActionFlag   = "flag"
)

// MaxStudyTimeDeltaMS caps the time one save may add: a tab left open over a
// weekend does not count as a weekend of work.
const MaxStudyTimeDeltaMS = 30 * 60 * 1000

// StudyVerdict is one study judge configuration's labels for one item.
type StudyVerdict struct {
	ID          int64
	StudyID     int64
	StudyItemID int64
	Judge       string      // StudyJudge.Name, or the judge named in an imported file
	Imported    bool        // from a file rather than judged here
	Labels      StudyLabels // label → canonical value
	Rationale   string
	Error       string // why the judge gave no verdict; Labels empty
	// PromptVersion and PromptSHA256 identify the prompt the judge was asked
	// with (such as "labels-v1" and its text's SHA-256), so that a verdict
	// stays explained by the exact text; empty for imported verdicts.
	PromptVersion string
	PromptSHA256  string
	TokensIn      int64
	TokensOut     int64
	Cost          float64
	LatencyMS     int64
	CreatedAt     time.Time

	// Config is the configuration the verdict was judged with, when a judge
	// job saves it: the save is refused (ECONFLICT) unless it is still the
	// study's configuration of that name, so a configuration changed during
	// a job never gets the old one's verdicts. Not stored.
	Config *StudyJudge `gorm:"-" json:"-"`
}

// StudyLabels maps label names (and RubricLabelKey keys) to canonical values.
type StudyLabels = JSONMap[string]

// StudyListItem is a study in the studies list, with the viewer's role.
type StudyListItem struct {
	Study
	OwnerName string
	Role      string // "owner", "annotator" or "admin"
	Assigned  int    // the viewer's assignments
	Finished  int    // of which done, skipped or flagged
}

// Roles in a study, as StudyListItem.Role and StudyView.Role say.
const (
	StudyRoleOwner     = "owner"
	StudyRoleAnnotator = "annotator"
	StudyRoleAdmin     = "admin"
)

// StudyView is a study's page for its owner and admins (everything) or an
// annotator (the study's settings and their own progress only).
type StudyView struct {
	Study      Study
	OwnerName  string
	Role       string
	CanManage  bool // the owner or an admin
	Annotators []StudyAnnotatorView
	Progress   StudyProgress   // the whole study's (managers) or the viewer's own
	Judges     []StudyJudgeRun // per configuration: what has been judged (managers only)
}

// StudyAnnotatorView is an invited annotator with their progress.
type StudyAnnotatorView struct {
	UserID      int64
	Name        string
	Email       string
	Progress    StudyProgress
	TimeSpentMS int64
}

// StudyProgress counts assignments by status.
type StudyProgress struct {
	Assigned int
	Done     int
	Skipped  int
	Flagged  int
}

// Finished is done, skipped and flagged together.
func (p StudyProgress) Finished() int { return p.Done + p.Skipped + p.Flagged }

// Percent is the finished share, 0–100.
func (p StudyProgress) Percent() int {
	if p.Assigned == 0 {
		return 0
	}
	return p.Finished() * 100 / p.Assigned
}

// StudyJudgeRun is what one judge configuration has judged of a study.
type StudyJudgeRun struct {
	StudyJudge
	Judged    int // items with labels
	Errors    int // items the judge gave no verdict on
	TokensIn  int64
	TokensOut int64
	Cost      float64
}

// StudyQueue is an annotator's own queue in a study.
type StudyQueue struct {
	Study    Study
	Entries  []StudyQueueEntry
	Progress StudyProgress
	// Next is the first pending entry's item id, 0 when none is left.
	Next int64
}

// StudyQueueEntry is one assignment in an annotator's queue.
type StudyQueueEntry struct {
	ItemID      int64
	Position    int
	Status      string
	Reason      string
	TaskIntent  string
	TimeSpentMS int64
	SubmittedAt *time.Time
}

// StudyItemView is one item as the annotation page shows it. For an
// annotator of a blind study, Timeline carries no evaluation, the attempt no
// outcome or score, the run no metrics, and Reveal is nil: storage strips
// them, so no page or API answer can leak them.
type StudyItemView struct {
	Study       Study
	Item        StudyItem
	Role        string
	Assignment  *StudyAssignment // the viewer's own; nil for a manager without one
	Timeline    Timeline
	RubricItems []RubricItem // the task's rubric, when the study asks for rubric labels
	Reveal      *StudyReveal
	Position    int   // in the viewer's queue (managers: in the sample), 1-based
	Total       int   // of the queue (managers: the sample)
	PrevID      int64 // previous item id in that order, 0 at the start
	NextID      int64 // next item id, 0 at the end
}

// StudyReveal is what a blind study keeps from its annotators: the attempt's
// evaluations, the study judges' verdicts and every annotator's labels.
type StudyReveal struct {
	Evaluations []Evaluation
	Verdicts    []StudyVerdict
	Labels      []StudyAnnotatorLabels
}

// StudyAnnotatorLabels is one annotator's labels for an item.
type StudyAnnotatorLabels struct {
	Annotator string
	Status    string
	Reason    string
	Labels    StudyLabels
}

// StudyData is everything a study's agreement report reads, for its owner
// and admins.
type StudyData struct {
	Study       Study
	Items       []StudyDataItem
	Human       []StudyHumanLabel // submitted (done) assignments and imported labels
	Verdicts    []StudyVerdict    // study judge configurations and imported judges
	Evaluations []StudyEvaluation // the attempts' current evaluations: the automatic judges
}

// StudyDataItem is a study item with what the report groups and keys by.
type StudyDataItem struct {
	ItemID     int64
	AttemptID  int64
	RunID      int64
	Position   int
	Benchmark  string // slug
	Agent      string // agent name
	Model      string // the run's model, "" when unknown
	TaskID     string // the task's external id
	Intent     string
	Site       string // the task's site key
	Difficulty string // "" when unlabelled
	Outcome    string
	Rubric     []RubricItem
}

// StudyHumanLabel is one annotator's submitted labels for one item.
type StudyHumanLabel struct {
	ItemID      int64
	UserID      int64 // 0 for imported labels
	Annotator   string
	Labels      StudyLabels
	TimeSpentMS int64
}

// StudyEvaluation is an item's current evaluation of one kind, as an
// automatic judge: check → success; judge → success and score; rubric →
// rubric labels.
type StudyEvaluation struct {
	ItemID     int64
	Kind       string
	Evaluator  string
	Verdict    string
	JudgeScore *int
	Rubric     map[int64]bool // rubric item id → passed
	Cost       float64
}

// StudyImportRow is one imported human label or judge verdict, keyed the
// AgentRewardBench way; storage matches it to a study item by benchmark slug,
// model name (StudyDataItem.Model, else the agent's name) and task id.
type StudyImportRow struct {
	Benchmark string
	Model     string
	TaskID    string
	Who       string // annotator or judge name
	Labels    StudyLabels
	Line      int
}

// StudyImportResult says what an import did.
type StudyImportResult struct {
	Imported  int
	Replaced  int      // rows that replaced an earlier import of the same annotator or judge and item
	Unmatched []string // keys that match no item (capped), "line N: benchmark/model/task"
	Skipped   int      // bad rows left out (the user chose to skip them)
}

// StudyGate is the study service's access rule for one operation, bound to
// the caller: storage reads the caller's invitation and assignments by
// UserID (0 for callers without an account, such as the system), and Let,
// given the study (nil when there is no such study) and whether the caller
// was invited to annotate it, answers the caller's role in the study and
// whether they manage it, or the error to answer. Storage applies it inside
// the transaction that reads or changes the study.
type StudyGate struct {
	UserID int64
	Let    func(st *Study, annotator bool) (role string, manage bool, err error)
}
