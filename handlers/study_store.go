package handlers

import (
	"context"

	"proctor/agreement"
	"proctor/models"
)

// StudyService is the agreement-study service (service.Studies). Every
// method reads the actor from the context: owners and admins manage a study
// and read its report; invited annotators see the study, their own queue and
// the items assigned to them (without verdicts, scores or other labels when
// the study is blind); everyone else gets ENOTFOUND.
type StudyService interface {
	// CreateStudy validates the request, draws the sample from the sources
	// the actor may see and invites the annotators, in one transaction.
	CreateStudy(ctx context.Context, req models.StudyRequest) (*models.Study, error)
	// Studies lists the studies the actor owns or annotates (admins: all).
	Studies(ctx context.Context) ([]models.StudyListItem, error)
	// StudyOverview is a study's page.
	StudyOverview(ctx context.Context, id int64) (*models.StudyView, error)
	// InviteAnnotator invites a user by email (managers; draft studies only).
	InviteAnnotator(ctx context.Context, studyID int64, email string) error
	// RemoveAnnotator withdraws an invitation (managers; draft studies only).
	RemoveAnnotator(ctx context.Context, studyID, userID int64) error
	// SetStudyJudges replaces the judge configurations (managers; not closed).
	SetStudyJudges(ctx context.Context, studyID int64, judges []models.StudyJudge) error
	// OpenStudy makes the assignments and opens the study (managers; draft).
	OpenStudy(ctx context.Context, id int64) error
	// CloseStudy closes an open study (managers).
	CloseStudy(ctx context.Context, id int64) error
	// StudyQueue is the actor's own queue in a study.
	StudyQueue(ctx context.Context, studyID int64) (*models.StudyQueue, error)
	// StudyItem is one item for the annotation page: annotators only their
	// assigned items, managers any item.
	StudyItem(ctx context.Context, studyID, itemID int64) (*models.StudyItemView, error)
	// SaveStudyLabels saves the actor's labels for an item assigned to them
	// while the study is open.
	SaveStudyLabels(ctx context.Context, studyID, itemID int64, in models.StudyLabelInput) (*models.StudyAssignment, error)
	// StudyVerdicts lists the judges' verdicts: managers always, annotators
	// only of studies that are not blind (EFORBIDDEN otherwise).
	StudyVerdicts(ctx context.Context, studyID int64) ([]models.StudyVerdict, error)
	// StudyData is everything the exports read (managers only).
	StudyData(ctx context.Context, studyID int64) (*models.StudyData, error)
	// StudyReport is the study's data and agreement report, broken down by
	// facets (managers only).
	StudyReport(ctx context.Context, studyID int64, facets []string) (*models.StudyData, *agreement.StudyReport, error)
	// StudyDisagreements is the study's data and a report without intervals
	// or breakdowns, for its disagreements (managers only).
	StudyDisagreements(ctx context.Context, studyID int64) (*models.StudyData, *agreement.StudyReport, error)
	// ImportStudyLabels stores imported human labels (managers).
	ImportStudyLabels(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error)
	// ImportStudyVerdicts stores imported judge verdicts (managers).
	ImportStudyVerdicts(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error)
	// QueueStudyJudges queues the named configurations (all when names is
	// empty) over every item they have not judged yet. Administrators only;
	// EUNAVAILABLE without a queue or an LLM judge.
	QueueStudyJudges(ctx context.Context, studyID int64, names []string) error
	// JudgeAvailable is nil when judges can run, else an EUNAVAILABLE error
	// saying what to do.
	JudgeAvailable() error
}
