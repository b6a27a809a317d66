package models

import "time"

// Study statuses.
const (
	StudyDraft  = "draft"
	StudyOpen   = "open"
	StudyClosed = "closed"
)

// Study is a human-vs-LLM-judge agreement study over a sample of attempts.
type Study struct {
	ID              int64
	OwnerID         int64
	Name            string
	Description     string
	Status          string
	Sources         string // JSON: runs or benchmarks sampled from
	Sampling        string // JSON: random or stratified, by what
	Seed            int64
	SampleSize      int
	OverlapFraction float64
	Blind           bool
	LabelSchema     string // JSON: which labels are collected
	JudgeConfigs    string // JSON: the judge configurations compared
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// StudyItem is one sampled attempt in a study.
type StudyItem struct {
	ID        int64
	StudyID   int64
	AttemptID int64
	Position  int
	Stratum   string
}

// StudyAnnotator is a user invited to annotate a study.
type StudyAnnotator struct {
	ID         int64
	StudyID    int64
	UserID     int64
	InvitedAt  time.Time
	AcceptedAt *time.Time
}

// Assignment statuses.
const (
	AssignmentPending = "pending"
	AssignmentDone    = "done"
	AssignmentSkipped = "skipped"
	AssignmentFlagged = "flagged"
)

// Assignment gives one study item to one annotator.
type Assignment struct {
	ID          int64
	StudyItemID int64
	UserID      int64
	Status      string
	Reason      string
	AssignedAt  time.Time
	UpdatedAt   time.Time
}

// Annotation holds an annotator's labels for an assignment.
type Annotation struct {
	ID           int64
	AssignmentID int64
	Success      string // successful | unsuccessful | unsure
	Score        *int   // 1–5
	SideEffect   string // yes | no | unsure
	Looping      string // yes | no
	Optimality   *int   // 1 complete failure … 4 completely optimal
	RubricLabels string // JSON: rubric item id -> pass | fail
	TimeSpentMS  int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}
