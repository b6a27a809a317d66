package api

import (
	"time"

	"proctor/models"
)

// StudyInput is the body of POST /api/v1/studies: the domain's study
// request, field for field.
type StudyInput models.StudyRequest

// StudyLabelInput is the body of PUT
// /api/v1/studies/{id}/items/{item_id}/labels.
type StudyLabelInput = models.StudyLabelInput

// Study is a study's settings.
type Study struct {
	ID                int64               `json:"id"`
	Name              string              `json:"name"`
	Description       string              `json:"description"`
	Status            string              `json:"status"` // draft, open or closed
	OwnerID           int64               `json:"owner_id"`
	RunIDs            []int64             `json:"run_ids"`
	BenchmarkIDs      []int64             `json:"benchmark_ids"`
	Sampling          string              `json:"sampling"`
	StratifyBy        string              `json:"stratify_by"`
	Seed              int64               `json:"seed"`
	SampleSize        int                 `json:"sample_size"` // asked for
	ItemCount         int                 `json:"item_count"`  // drawn
	OverlapFraction   float64             `json:"overlap_fraction"`
	OverlapAnnotators int                 `json:"overlap_annotators"`
	Blind             bool                `json:"blind"`
	Labels            []string            `json:"labels"`
	Judges            []models.StudyJudge `json:"judges"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
	OpenedAt          *time.Time          `json:"opened_at"`
	ClosedAt          *time.Time          `json:"closed_at"`
	URL               string              `json:"url"`
	APIURL            string              `json:"api_url"`
}

// StudyListItem is a study in the caller's list, with their role and
// their own progress.
type StudyListItem struct {
	Study
	OwnerName string `json:"owner_name"`
	Role      string `json:"role"`     // owner, annotator or admin
	Assigned  int    `json:"assigned"` // the caller's assignments
	Finished  int    `json:"finished"` // of which done, skipped or flagged
}

// StudyList is GET /api/v1/studies.
type StudyList struct {
	Items []StudyListItem `json:"items"`
}

// StudyProgress counts assignments by status.
type StudyProgress struct {
	Assigned int `json:"assigned"`
	Done     int `json:"done"`
	Skipped  int `json:"skipped"`
	Flagged  int `json:"flagged"`
	Finished int `json:"finished"` // done, skipped and flagged
}

// StudyOverview is GET /api/v1/studies/{id}: the study with the whole
// study's progress, its annotators and judges for managers; for an annotator
// the settings and their own progress.
type StudyOverview struct {
	Study      Study            `json:"study"`
	OwnerName  string           `json:"owner_name"`
	Role       string           `json:"role"`
	CanManage  bool             `json:"can_manage"`
	Progress   StudyProgress    `json:"progress"`
	Annotators []StudyAnnotator `json:"annotators"`
	Judges     []StudyJudgeRun  `json:"judges"`
}

// StudyAnnotator is an invited annotator with their progress.
type StudyAnnotator struct {
	UserID      int64         `json:"user_id"`
	Name        string        `json:"name"`
	Email       string        `json:"email"`
	Progress    StudyProgress `json:"progress"`
	TimeSpentMS int64         `json:"time_spent_ms"`
}

// StudyJudgeRun is what one judge configuration has judged.
type StudyJudgeRun struct {
	models.StudyJudge
	Judged    int     `json:"judged"`
	Errors    int     `json:"errors"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	Cost      float64 `json:"cost"`
}

// StudyQueue is the caller's own queue in a study
// (GET /api/v1/studies/{id}/queue).
type StudyQueue struct {
	Study    Study             `json:"study"`
	Entries  []StudyQueueEntry `json:"entries"`
	Progress StudyProgress     `json:"progress"`
	// NextItemID is the first pending item, 0 when none is left.
	NextItemID int64 `json:"next_item_id"`
}

// StudyQueueEntry is one assignment in the queue.
type StudyQueueEntry struct {
	ItemID      int64      `json:"item_id"`
	Position    int        `json:"position"`
	Status      string     `json:"status"` // pending, done, skipped or flagged
	Reason      string     `json:"reason"`
	TaskIntent  string     `json:"task_intent"`
	TimeSpentMS int64      `json:"time_spent_ms"`
	SubmittedAt *time.Time `json:"submitted_at"`
	URL         string     `json:"url"`
	APIURL      string     `json:"api_url"`
}

// StudyItem is one item as the annotation page shows it. For an
// annotator of a blind study the timeline has no evaluation, the attempt no
// outcome or score, the run no success counts, and reveal is null.
type StudyItem struct {
	Study      Study            `json:"study"`
	Item       StudyItemRef     `json:"item"`
	Role       string           `json:"role"`
	Assignment *StudyAssignment `json:"assignment"` // the caller's own; null for a manager without one
	Timeline   Timeline         `json:"timeline"`
	// RubricItems are the task's rubric items when the study asks rubric
	// labels; answer them under "rubric:<id>".
	RubricItems []StudyRubricItem `json:"rubric_items"`
	Reveal      *StudyReveal      `json:"reveal"`
	Position    int               `json:"position"` // in the caller's queue (managers: in the sample)
	Total       int               `json:"total"`
	PrevItemID  int64             `json:"prev_item_id"` // 0 at the start
	NextItemID  int64             `json:"next_item_id"` // 0 at the end
}

// StudyItemRef names a sampled attempt.
type StudyItemRef struct {
	ID        int64  `json:"id"`
	AttemptID int64  `json:"attempt_id"`
	Position  int    `json:"position"`
	Stratum   string `json:"stratum"`
	URL       string `json:"url"`
}

// StudyRubricItem is one rubric item of the item's task.
type StudyRubricItem struct {
	ID           int64   `json:"id"`
	Key          string  `json:"key"`
	LabelKey     string  `json:"label_key"` // the labels key of its answer: rubric:<id>
	Requirement  string  `json:"requirement"`
	Verification string  `json:"verification"`
	Weight       float64 `json:"weight"`
}

// StudyAssignment is the caller's labels for one item.
type StudyAssignment struct {
	ItemID      int64             `json:"item_id"`
	Position    int               `json:"position"`
	Status      string            `json:"status"`
	Reason      string            `json:"reason"`
	Labels      map[string]string `json:"labels"`
	TimeSpentMS int64             `json:"time_spent_ms"`
	SubmittedAt *time.Time        `json:"submitted_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// StudyReveal is what a blind study keeps from its annotators.
type StudyReveal struct {
	Evaluations []Evaluation           `json:"evaluations"`
	Verdicts    []StudyVerdict         `json:"verdicts"`
	Labels      []StudyAnnotatorLabels `json:"labels"`
}

// StudyAnnotatorLabels is one annotator's labels for an item.
type StudyAnnotatorLabels struct {
	Annotator string            `json:"annotator"`
	Status    string            `json:"status"`
	Reason    string            `json:"reason"`
	Labels    map[string]string `json:"labels"`
}

// StudyVerdict is one judge's labels for one item.
type StudyVerdict struct {
	ItemID        int64             `json:"item_id"`
	Judge         string            `json:"judge"`
	Imported      bool              `json:"imported"`
	Labels        map[string]string `json:"labels"`
	Rationale     string            `json:"rationale"`
	Error         string            `json:"error"` // why the judge gave no verdict
	PromptVersion string            `json:"prompt_version"`
	PromptSHA256  string            `json:"prompt_sha256"`
	TokensIn      int64             `json:"tokens_in"`
	TokensOut     int64             `json:"tokens_out"`
	Cost          float64           `json:"cost"`
	LatencyMS     int64             `json:"latency_ms"`
	CreatedAt     time.Time         `json:"created_at"`
}

// StudyVerdictList is GET /api/v1/studies/{id}/verdicts.
type StudyVerdictList struct {
	Items []StudyVerdict `json:"items"`
}
