package storage

import (
	"context"

	"proctor/models"
)

// Placeholders until the studies store lands; each answers EINTERNAL.

func notYet() error { return models.Errorf(models.EINTERNAL, "studies are not built yet") }

func (db *DB) CreateStudy(ctx context.Context, req models.StudyRequest) (*models.Study, error) {
	return nil, notYet()
}
func (db *DB) Studies(ctx context.Context) ([]models.StudyListItem, error) { return nil, notYet() }
func (db *DB) StudyOverview(ctx context.Context, id int64) (*models.StudyView, error) {
	return nil, notYet()
}
func (db *DB) InviteAnnotator(ctx context.Context, studyID int64, email string) error {
	return notYet()
}
func (db *DB) RemoveAnnotator(ctx context.Context, studyID, userID int64) error { return notYet() }
func (db *DB) SetStudyJudges(ctx context.Context, studyID int64, judges []models.StudyJudge) error {
	return notYet()
}
func (db *DB) OpenStudy(ctx context.Context, id int64) error  { return notYet() }
func (db *DB) CloseStudy(ctx context.Context, id int64) error { return notYet() }
func (db *DB) StudyQueue(ctx context.Context, studyID int64) (*models.StudyQueue, error) {
	return nil, notYet()
}
func (db *DB) StudyItem(ctx context.Context, studyID, itemID int64) (*models.StudyItemView, error) {
	return nil, notYet()
}
func (db *DB) SaveStudyLabels(ctx context.Context, studyID, itemID int64, in models.StudyLabelInput) (*models.StudyAssignment, error) {
	return nil, notYet()
}
func (db *DB) StudyVerdicts(ctx context.Context, studyID int64) ([]models.StudyVerdict, error) {
	return nil, notYet()
}
func (db *DB) StudyData(ctx context.Context, studyID int64) (*models.StudyData, error) {
	return nil, notYet()
}
func (db *DB) ImportStudyLabels(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error) {
	return nil, notYet()
}
func (db *DB) ImportStudyVerdicts(ctx context.Context, studyID int64, rows []models.StudyImportRow) (*models.StudyImportResult, error) {
	return nil, notYet()
}
func (db *DB) BlindAttempt(ctx context.Context, attemptID int64) (bool, error) { return false, nil }

// Used by the study judge job (runner), System actor only.

// StudyJudgeWork lists the items of a study a judge configuration has not
// judged yet, with the attempt each one is.
func (db *DB) StudyJudgeWork(ctx context.Context, studyID int64, judge string) ([]models.StudyItem, error) {
	return nil, notYet()
}

// SaveStudyVerdict stores a judge configuration's verdict on an item,
// replacing an earlier one (a redelivered job judges again harmlessly).
func (db *DB) SaveStudyVerdict(ctx context.Context, v *models.StudyVerdict) error { return notYet() }
