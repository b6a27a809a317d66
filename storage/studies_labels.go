package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"proctor/models"
)

// PublicJudgeFailed is why a judge gave no verdict, as everyone but
// administrators reads it (an evaluation's failure reads the same).
const PublicJudgeFailed = publicJudgeFailed

// assignmentColumns reads a study assignment; imported labels have no user
// (user_id NULL), which models.StudyAssignment holds as 0.
const assignmentColumns = `sa.id, sa.study_id, sa.study_item_id, COALESCE(sa.user_id, 0) AS user_id, sa.annotator_name,
	sa.position, sa.status, sa.reason, sa.labels, sa.time_spent_ms, sa.submitted_at, sa.created_at, sa.updated_at`

// ownAssignment is the user's assignment of an item, nil when they have none.
func ownAssignment(q *gorm.DB, itemID, userID int64) (*models.StudyAssignment, error) {
	if userID == 0 {
		return nil, nil
	}
	var rows []models.StudyAssignment
	if err := q.Table("study_assignments sa").Select(assignmentColumns).
		Where("sa.study_item_id = ? AND sa.user_id = ?", itemID, userID).Limit(1).Scan(&rows).Error; err != nil {
		return nil, wrap(err, "study assignment")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

// studyItemOf loads an item of a study: ENOTFOUND naming it otherwise.
func studyItemOf(q *gorm.DB, studyID, itemID int64) (*models.StudyItem, error) {
	var items []models.StudyItem
	if err := q.Where("id = ? AND study_id = ?", itemID, studyID).Limit(1).Find(&items).Error; err != nil {
		return nil, wrap(err, "study item")
	}
	if len(items) == 0 {
		return nil, models.Errorf(models.ENOTFOUND, "Item %d not found in study %d.", itemID, studyID)
	}
	return &items[0], nil
}

func notAssigned(itemID int64) error {
	return models.Errorf(models.EFORBIDDEN, "Item %d is not assigned to you.", itemID)
}

// StudyQueue is the actor's own queue in a study, in order, with their
// progress and the next pending item. Managers who annotate nothing get an
// empty queue. The gate's error when it refuses the actor.
func (db *DB) StudyQueue(ctx context.Context, gate models.StudyGate, studyID int64) (*models.StudyQueue, error) {
	q := db.q(ctx)
	acc, err := db.loadStudyAccess(q, studyID, studyUnlocked, gate)
	if err != nil {
		return nil, err
	}
	out := &models.StudyQueue{Study: *acc.Study}
	if acc.UserID == 0 {
		return out, nil
	}
	err = q.Table("study_assignments sa").
		Select(`sa.study_item_id AS item_id, sa.position, sa.status, sa.reason, t.intent AS task_intent,
			sa.time_spent_ms, sa.submitted_at`).
		Joins("JOIN study_items si ON si.id = sa.study_item_id").
		Joins("JOIN attempts a ON a.id = si.attempt_id").
		Joins("JOIN tasks t ON t.id = a.task_id").
		Where("sa.study_id = ? AND sa.user_id = ?", studyID, acc.UserID).
		Order("sa.position, sa.id").Scan(&out.Entries).Error
	if err != nil {
		return nil, wrap(err, "study queue")
	}
	for _, e := range out.Entries {
		(&progressRow{Status: e.Status, N: 1}).addTo(&out.Progress)
		if out.Next == 0 && e.Status == models.AssignmentPending {
			out.Next = e.ItemID
		}
	}
	return out, nil
}

// studyTimeline is an attempt's timeline as a study shows it: AttemptTimeline
// without the run's visibility check (being in the study is the permission),
// evaluation details in full when fullDetails (administrators), else in
// their public view.
func studyTimeline(q *gorm.DB, attemptID int64, fullDetails bool) (*models.Timeline, error) {
	tl := &models.Timeline{}
	if err := q.Where("id = ?", attemptID).Take(&tl.Attempt).Error; err != nil {
		return nil, wrap(err, fmt.Sprintf("attempt %d", attemptID))
	}
	if err := runListFrom(q).Select(runListColumns).Where("r.id = ?", tl.Attempt.RunID).Take(&tl.Run).Error; err != nil {
		return nil, wrap(err, "run")
	}
	tasks := []models.Task{}
	if err := q.Table("tasks t").Select(publicTaskColumns).Where("t.id = ?", tl.Attempt.TaskID).Find(&tasks).Error; err != nil {
		return nil, wrap(err, "task")
	}
	if len(tasks) != 1 {
		return nil, models.Errorf(models.ENOTFOUND, "The task of attempt %d not found.", attemptID)
	}
	tasks[0].HideSecrets()
	if err := loadRubrics(q, tasks); err != nil {
		return nil, err
	}
	tl.Task = tasks[0]
	var steps []models.Step
	if err := q.Where("attempt_id = ?", attemptID).Order("step_index").Find(&steps).Error; err != nil {
		return nil, wrap(err, "steps")
	}
	tl.Steps = make([]models.TimelineStep, len(steps))
	for i, s := range steps {
		ts := models.TimelineStep{Step: s, Action: models.DecodeAction(s.Action)}
		if s.BlockedRequests != "" {
			_ = json.Unmarshal([]byte(s.BlockedRequests), &ts.Blocked)
		}
		tl.Steps[i] = ts
	}
	tl.FinalAction = models.DecodeAction(tl.Attempt.FinalAnswer)
	var evs []models.Evaluation
	if err := q.Preload("RubricJudgments").Where("attempt_id = ?", attemptID).Order("created_at DESC, id DESC").Find(&evs).Error; err != nil {
		return nil, wrap(err, "evaluations")
	}
	for i := range evs {
		if !fullDetails {
			evs[i].Details = publicEvaluationDetails(evs[i].Kind, evs[i].Details)
		}
	}
	for i := range evs {
		if evs[i].IsPrimary {
			tl.Evaluation = &evs[i]
			break
		}
	}
	tl.Evaluations = evs
	return tl, nil
}

// annotatorLabels lists every assignment's labels of an item (imported ones
// included), annotators by name (managers: the email when a user has no
// name).
func annotatorLabels(q *gorm.DB, itemID int64, manage bool) ([]models.StudyAnnotatorLabels, error) {
	var rows []struct {
		AnnotatorName, Name, Email, Status, Reason string
		UserID                                     int64
		Labels                                     models.StudyLabels
	}
	if err := q.Table("study_assignments sa").Joins("LEFT JOIN users u ON u.id = sa.user_id").
		Select("sa.annotator_name, COALESCE(u.name, '') AS name, COALESCE(u.email, '') AS email, COALESCE(sa.user_id, 0) AS user_id, sa.status, sa.reason, sa.labels").
		Where("sa.study_item_id = ?", itemID).Order("sa.user_id IS NULL, sa.id").Scan(&rows).Error; err != nil {
		return nil, wrap(err, "study labels")
	}
	out := make([]models.StudyAnnotatorLabels, len(rows))
	for i, r := range rows {
		out[i] = models.StudyAnnotatorLabels{Annotator: annotatorName(r.UserID, r.Name, r.Email, r.AnnotatorName, manage),
			Status: r.Status, Reason: r.Reason, Labels: r.Labels}
	}
	return out, nil
}

// annotatorName names an annotator: an imported file's name, else the user's
// name, else (for managers) their email or (for annotators, who do not see
// each other's emails) their user number.
func annotatorName(userID int64, name, email, imported string, manage bool) string {
	switch {
	case userID == 0:
		return imported
	case name != "":
		return name
	case manage:
		return email
	}
	return "annotator " + strconv.FormatInt(userID, 10)
}

// itemVerdicts lists the judges' verdicts on an item by judge, errors in
// their public wording for everyone but administrators.
func itemVerdicts(ctx context.Context, q *gorm.DB, itemID int64) ([]models.StudyVerdict, error) {
	var out []models.StudyVerdict
	if err := q.Where("study_item_id = ?", itemID).Order("judge").Find(&out).Error; err != nil {
		return nil, wrap(err, "study verdicts")
	}
	return out, nil
}

// StudyItem is one item for the annotation page. Annotators may open only the
// items assigned to them (EFORBIDDEN naming the item otherwise); managers any.
// Reveal holds the current evaluations, the judges' verdicts and every
// annotator's labels; the study
// service withholds them, with the attempt's results, from the annotators of
// a blind study. Navigation follows the viewer's queue when the item is
// assigned to them, else the sample. Evaluation details are shown in full
// when fullDetails (the study service sets it for administrators), else in
// their public view. The gate's error when it refuses the caller; ENOTFOUND
// for an unknown item.
func (db *DB) StudyItem(ctx context.Context, gate models.StudyGate, studyID, itemID int64, fullDetails bool) (*models.StudyItemView, error) {
	q := db.q(ctx)
	acc, err := db.loadStudyAccess(q, studyID, studyUnlocked, gate)
	if err != nil {
		return nil, err
	}
	item, err := studyItemOf(q, studyID, itemID)
	if err != nil {
		return nil, err
	}
	own, err := ownAssignment(q, itemID, acc.UserID)
	if err != nil {
		return nil, err
	}
	if own == nil && !acc.Manage {
		return nil, notAssigned(itemID)
	}
	tl, err := studyTimeline(q, item.AttemptID, fullDetails)
	if err != nil {
		return nil, err
	}
	v := &models.StudyItemView{Study: *acc.Study, Item: *item, Role: acc.Role, Assignment: own}
	if acc.Study.Asks(models.StudyLabelRubric) {
		v.RubricItems = tl.Task.RubricItems
	}
	var order []int64
	nav := q.Table("study_items").Where("study_id = ?", studyID).Order("position")
	if own != nil {
		nav = q.Table("study_assignments").Where("study_id = ? AND user_id = ?", studyID, acc.UserID).Order("position")
	}
	col := "id"
	if own != nil {
		col = "study_item_id"
	}
	if err := nav.Pluck(col, &order).Error; err != nil {
		return nil, wrap(err, "study items")
	}
	v.Total = len(order)
	if i := slices.Index(order, itemID); i >= 0 {
		v.Position = i + 1
		if i > 0 {
			v.PrevID = order[i-1]
		}
		if i+1 < len(order) {
			v.NextID = order[i+1]
		}
	}
	reveal := &models.StudyReveal{}
	for _, ev := range tl.Evaluations {
		if ev.IsCurrent {
			reveal.Evaluations = append(reveal.Evaluations, ev)
		}
	}
	if reveal.Verdicts, err = itemVerdicts(ctx, q, itemID); err != nil {
		return nil, err
	}
	if reveal.Labels, err = annotatorLabels(q, itemID, acc.Manage); err != nil {
		return nil, err
	}
	if !acc.Manage {
		tl.CanManage = false
	}
	v.Timeline = *tl
	v.Reveal = reveal
	return v, nil
}

// taskRubric lists the rubric items of an attempt's task, in order.
func taskRubric(q *gorm.DB, attemptID int64) ([]models.RubricItem, error) {
	var items []models.RubricItem
	err := q.Where("task_id = (SELECT task_id FROM attempts WHERE id = ?)", attemptID).Order("position, id").Find(&items).Error
	return items, wrap(err, "rubric items")
}

// SaveStudyLabels changes the actor's assignment of an item while the study
// is open: apply (the study service's rules) sets its labels, status, reason
// and time spent from the study, the saved assignment, the task's rubric and
// the time now, and the assignment is written in the same transaction.
// EUNAUTHORIZED, ENOTFOUND as StudyItem; ECONFLICT unless the study is open;
// EFORBIDDEN naming the item when it is not assigned to the actor; whatever
// apply returns.
func (db *DB) SaveStudyLabels(ctx context.Context, gate models.StudyGate, studyID, itemID int64,
	apply func(st *models.Study, as *models.StudyAssignment, rubric []models.RubricItem, now time.Time) error) (*models.StudyAssignment, error) {
	var out *models.StudyAssignment
	err := db.tx(ctx, func(tx *gorm.DB) error {
		// Shared: a close (which locks the study for update) either waits for
		// this save to commit or makes it wait and then read the study closed,
		// so no label is saved after the study's closing time.
		acc, err := db.loadStudyAccess(tx, studyID, studyShared, gate)
		if err != nil {
			return err
		}
		item, err := studyItemOf(tx, studyID, itemID)
		if err != nil {
			return err
		}
		var rows []models.StudyAssignment
		if acc.UserID != 0 {
			if err := lockRow(tx.Table("study_assignments sa"), db.dialect).Select(assignmentColumns).
				Where("sa.study_item_id = ? AND sa.user_id = ?", itemID, acc.UserID).Limit(1).Scan(&rows).Error; err != nil {
				return wrap(err, "study assignment")
			}
		}
		if len(rows) == 0 {
			return notAssigned(itemID)
		}
		as := &rows[0]
		rubric, err := taskRubric(tx, item.AttemptID)
		if err != nil {
			return err
		}
		now := db.now()
		if err := apply(acc.Study, as, rubric, now); err != nil {
			return err
		}
		as.UpdatedAt = now
		err = tx.Model(&models.StudyAssignment{}).Where("id = ?", as.ID).Updates(map[string]any{
			"status": as.Status, "reason": as.Reason, "labels": as.Labels, "time_spent_ms": as.TimeSpentMS,
			"submitted_at": as.SubmittedAt, "updated_at": now,
		}).Error
		if err != nil {
			return wrap(err, "study assignment")
		}
		out = as
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StudyVerdicts lists the judges' verdicts on a study's items, in sample order
// and by judge, to whom the gate lets in.
func (db *DB) StudyVerdicts(ctx context.Context, gate models.StudyGate, studyID int64) ([]models.StudyVerdict, error) {
	q := db.q(ctx)
	if _, err := db.loadStudyAccess(q, studyID, studyUnlocked, gate); err != nil {
		return nil, err
	}
	var out []models.StudyVerdict
	if err := q.Table("study_verdicts v").Select("v.*").Joins("JOIN study_items si ON si.id = v.study_item_id").
		Where("v.study_id = ?", studyID).Order("si.position, v.judge").Scan(&out).Error; err != nil {
		return nil, wrap(err, "study verdicts")
	}
	return out, nil
}
