package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"proctor/models"
)

// studyDataItems lists a study's items in sample order with what reports
// group and key them by, and each task's rubric: three queries whatever the
// study's size.
func studyDataItems(q *gorm.DB, studyID int64) ([]models.StudyDataItem, error) {
	var rows []struct {
		ItemID, AttemptID, RunID, TaskRowID                         int64
		Position                                                    int
		Benchmark, Agent, TaskID, Intent, Site, Difficulty, Outcome string
	}
	err := q.Table("study_items si").
		Select(`si.id AS item_id, si.attempt_id, a.run_id, si.position, b.slug AS benchmark, ag.name AS agent,
			t.external_id AS task_id, t.intent, t.site_key AS site, t.difficulty, a.outcome, t.id AS task_row_id`).
		Joins("JOIN attempts a ON a.id = si.attempt_id").
		Joins("JOIN runs r ON r.id = a.run_id").
		Joins("JOIN agents ag ON ag.id = r.agent_id").
		Joins("JOIN tasks t ON t.id = a.task_id").
		Joins("JOIN benchmark_versions v ON v.id = t.version_id").
		Joins("JOIN benchmarks b ON b.id = v.benchmark_id").
		Where("si.study_id = ?", studyID).Order("si.position").Scan(&rows).Error
	if err != nil {
		return nil, wrap(err, "study items")
	}
	// The model a run used is in its agent snapshot, not in a column.
	var snapshots []struct {
		ID            int64
		AgentSnapshot string
	}
	if err := q.Table("runs").Select("id, agent_snapshot").
		Where("id IN (SELECT a.run_id FROM study_items si JOIN attempts a ON a.id = si.attempt_id WHERE si.study_id = ?)", studyID).
		Scan(&snapshots).Error; err != nil {
		return nil, wrap(err, "runs")
	}
	modelOf := make(map[int64]string, len(snapshots))
	for _, s := range snapshots {
		var snap struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal([]byte(s.AgentSnapshot), &snap) // an unreadable snapshot names no model
		modelOf[s.ID] = snap.Model
	}
	var rubric []models.RubricItem
	if err := q.Where("task_id IN (SELECT a.task_id FROM study_items si JOIN attempts a ON a.id = si.attempt_id WHERE si.study_id = ?)", studyID).
		Order("task_id, position, id").Find(&rubric).Error; err != nil {
		return nil, wrap(err, "rubric items")
	}
	byTask := map[int64][]models.RubricItem{}
	for _, it := range rubric {
		byTask[it.TaskID] = append(byTask[it.TaskID], it)
	}
	out := make([]models.StudyDataItem, len(rows))
	for i, r := range rows {
		out[i] = models.StudyDataItem{ItemID: r.ItemID, AttemptID: r.AttemptID, RunID: r.RunID, Position: r.Position,
			Benchmark: r.Benchmark, Agent: r.Agent, Model: modelOf[r.RunID], TaskID: r.TaskID, Intent: r.Intent,
			Site: r.Site, Difficulty: r.Difficulty, Outcome: r.Outcome, Rubric: byTask[r.TaskRowID]}
	}
	return out, nil
}

// StudyData is everything a study's agreement report reads: the items, the
// submitted and imported human labels, the judges' verdicts and the items'
// current evaluations (the automatic judges), in a fixed number of queries.
// The gate's error when it refuses the actor.
func (db *DB) StudyData(ctx context.Context, gate models.StudyGate, studyID int64) (*models.StudyData, error) {
	q := db.q(ctx)
	acc, err := db.loadStudyAccess(q, studyID, studyUnlocked, gate)
	if err != nil {
		return nil, err
	}
	d := &models.StudyData{Study: *acc.Study}
	if d.Items, err = studyDataItems(q, studyID); err != nil {
		return nil, err
	}
	var humans []struct {
		ItemID, UserID             int64
		AnnotatorName, Name, Email string
		Labels                     models.StudyLabels
		TimeSpentMS                int64
	}
	if err := q.Table("study_assignments sa").Joins("JOIN study_items si ON si.id = sa.study_item_id").
		Joins("LEFT JOIN users u ON u.id = sa.user_id").
		Select(`sa.study_item_id AS item_id, COALESCE(sa.user_id, 0) AS user_id, sa.annotator_name,
			COALESCE(u.name, '') AS name, COALESCE(u.email, '') AS email, sa.labels, sa.time_spent_ms`).
		Where("sa.study_id = ? AND (sa.status = ? OR sa.user_id IS NULL)", studyID, models.AssignmentDone).
		Order("si.position, sa.user_id IS NULL, sa.user_id, sa.annotator_name").Scan(&humans).Error; err != nil {
		return nil, wrap(err, "study labels")
	}
	d.Human = make([]models.StudyHumanLabel, len(humans))
	for i, h := range humans {
		d.Human[i] = models.StudyHumanLabel{ItemID: h.ItemID, UserID: h.UserID, Labels: h.Labels, TimeSpentMS: h.TimeSpentMS,
			Annotator: annotatorName(h.UserID, h.Name, h.Email, h.AnnotatorName, true)}
	}
	if err := q.Table("study_verdicts v").Select("v.*").Joins("JOIN study_items si ON si.id = v.study_item_id").
		Where("v.study_id = ?", studyID).Order("si.position, v.judge").Scan(&d.Verdicts).Error; err != nil {
		return nil, wrap(err, "study verdicts")
	}
	var evs []struct {
		ID, ItemID               int64
		Kind, Evaluator, Verdict string
		JudgeScore               *int
		Cost                     float64
	}
	const current = "JOIN study_items si ON si.attempt_id = e.attempt_id"
	if err := q.Table("evaluations e").Joins(current).
		Select("e.id, si.id AS item_id, e.kind, e.evaluator, e.verdict, e.judge_score, e.cost").
		Where("si.study_id = ? AND e.is_current = ?", studyID, true).Order("si.position, e.kind, e.id").Scan(&evs).Error; err != nil {
		return nil, wrap(err, "evaluations")
	}
	var judgments []struct {
		EvaluationID, RubricItemID int64
		Passed                     bool
	}
	if err := q.Table("rubric_judgments rj").Joins("JOIN evaluations e ON e.id = rj.evaluation_id").Joins(current).
		Select("rj.evaluation_id, rj.rubric_item_id, rj.passed").
		Where("si.study_id = ? AND e.is_current = ? AND e.kind = ?", studyID, true, models.EvaluationRubric).
		Scan(&judgments).Error; err != nil {
		return nil, wrap(err, "rubric judgments")
	}
	rubrics := map[int64]map[int64]bool{}
	for _, j := range judgments {
		if rubrics[j.EvaluationID] == nil {
			rubrics[j.EvaluationID] = map[int64]bool{}
		}
		rubrics[j.EvaluationID][j.RubricItemID] = j.Passed
	}
	d.Evaluations = make([]models.StudyEvaluation, len(evs))
	for i, e := range evs {
		d.Evaluations[i] = models.StudyEvaluation{ItemID: e.ItemID, Kind: e.Kind, Evaluator: e.Evaluator, Verdict: e.Verdict,
			JudgeScore: e.JudgeScore, Cost: e.Cost, Rubric: rubrics[e.ID]}
	}
	return d, nil
}

// StudyImportMatch is an import row matched to a study item, with its labels
// in canonical spelling.
type StudyImportMatch struct {
	Item   models.StudyDataItem
	Who    string
	Labels models.StudyLabels
}

// StudyImportMatcher matches a file's rows to a study's items (the study
// service's rules), given the names of the annotators or judges the study
// already holds from files: the matches, the result listing unmatched rows,
// or EINVALID.
type StudyImportMatcher func(st *models.Study, items []models.StudyDataItem, stored []string) ([]StudyImportMatch, *models.StudyImportResult, error)

// importTarget loads a study for an import: managers only.
func (db *DB) importTarget(ctx context.Context, tx *gorm.DB, studyID int64, gate models.StudyGate) (*studyAccess, []models.StudyDataItem, error) {
	acc, err := db.loadStudyAccess(tx, studyID, studyExclusive, gate)
	if err != nil {
		return nil, nil, err
	}
	items, err := studyDataItems(tx, studyID)
	return acc, items, err
}

// ImportStudyLabels stores human labels from a file as done labels of the
// named annotators (no user), matched to the study's items by benchmark,
// model and task id (agreement.StudyKeys), whatever the study's status:
// files hold labels collected elsewhere, which closing a study does not
// freeze. Importing labels of the same annotator and item again replaces
// them. The gate's error when it refuses the actor; match's error.
func (db *DB) ImportStudyLabels(ctx context.Context, gate models.StudyGate, studyID int64, match StudyImportMatcher) (*models.StudyImportResult, error) {
	var res *models.StudyImportResult
	err := db.tx(ctx, func(tx *gorm.DB) error {
		acc, items, err := db.importTarget(ctx, tx, studyID, gate)
		if err != nil {
			return err
		}
		var existing []struct {
			StudyItemID   int64
			AnnotatorName string
		}
		if err := tx.Table("study_assignments").Select("study_item_id, annotator_name").
			Where("study_id = ? AND user_id IS NULL", studyID).Scan(&existing).Error; err != nil {
			return wrap(err, "study labels")
		}
		had := map[[2]string]bool{}
		var names []string
		for _, e := range existing {
			had[[2]string{fmt.Sprint(e.StudyItemID), e.AnnotatorName}] = true
			if !slices.Contains(names, e.AnnotatorName) {
				names = append(names, e.AnnotatorName)
			}
		}
		matches, r, err := match(acc.Study, items, names)
		if err != nil {
			return err
		}
		res = r
		now := db.now()
		batch := make([]importedAssignment, len(matches))
		for i, m := range matches {
			if had[[2]string{fmt.Sprint(m.Item.ItemID), m.Who}] {
				res.Replaced++
			}
			batch[i] = importedAssignment{StudyID: studyID, StudyItemID: m.Item.ItemID, AnnotatorName: m.Who,
				Status: models.AssignmentDone, Labels: m.Labels, SubmittedAt: &now, CreatedAt: now, UpdatedAt: now}
		}
		err = tx.Clauses(clause.OnConflict{
			Columns:     []clause.Column{{Name: "study_item_id"}, {Name: "annotator_name"}},
			TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "user_id IS NULL"}}},
			DoUpdates:   clause.AssignmentColumns([]string{"labels", "submitted_at", "updated_at"}),
		}).CreateInBatches(&batch, importBatchSize).Error
		if err != nil {
			return wrap(err, "study labels")
		}
		res.Imported = len(batch)
		return db.auditTx(ctx, tx, "study.labels_imported", studySubject(studyID), fmt.Sprintf("%d labels, %d replaced", res.Imported, res.Replaced), nil)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// importedAssignment is a study_assignments row of imported labels: no user.
type importedAssignment struct {
	ID            int64
	StudyID       int64
	StudyItemID   int64
	UserID        *int64
	AnnotatorName string
	Status        string
	Labels        models.StudyLabels
	SubmittedAt   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func (importedAssignment) TableName() string { return "study_assignments" }

// ImportStudyVerdicts stores judge verdicts from a file as imported judges,
// matched to the study's items as ImportStudyLabels does. Importing a judge's
// verdict on an item again replaces it. The gate's error when it refuses the
// actor; match's error.
func (db *DB) ImportStudyVerdicts(ctx context.Context, gate models.StudyGate, studyID int64, match StudyImportMatcher) (*models.StudyImportResult, error) {
	var res *models.StudyImportResult
	err := db.tx(ctx, func(tx *gorm.DB) error {
		acc, items, err := db.importTarget(ctx, tx, studyID, gate)
		if err != nil {
			return err
		}
		var existing []struct {
			StudyItemID int64
			Judge       string
			Imported    bool
		}
		if err := tx.Table("study_verdicts").Select("study_item_id, judge, imported").Where("study_id = ?", studyID).Scan(&existing).Error; err != nil {
			return wrap(err, "study verdicts")
		}
		had := map[[2]string]bool{}
		var names []string
		for _, e := range existing {
			had[[2]string{fmt.Sprint(e.StudyItemID), e.Judge}] = true
			if e.Imported && !slices.Contains(names, e.Judge) {
				names = append(names, e.Judge)
			}
		}
		matches, r, err := match(acc.Study, items, names)
		if err != nil {
			return err
		}
		res = r
		now := db.now()
		batch := make([]models.StudyVerdict, len(matches))
		for i, m := range matches {
			if had[[2]string{fmt.Sprint(m.Item.ItemID), m.Who}] {
				res.Replaced++
			}
			batch[i] = models.StudyVerdict{StudyID: studyID, StudyItemID: m.Item.ItemID, Judge: m.Who, Imported: true, Labels: m.Labels, CreatedAt: now}
		}
		if err := upsertVerdicts(tx, batch); err != nil {
			return err
		}
		res.Imported = len(batch)
		return db.auditTx(ctx, tx, "study.verdicts_imported", studySubject(studyID), fmt.Sprintf("%d verdicts, %d replaced", res.Imported, res.Replaced), nil)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// upsertVerdicts writes verdicts, each replacing the row of its judge and
// item if there is one.
func upsertVerdicts(tx *gorm.DB, verdicts []models.StudyVerdict) error {
	err := tx.Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "study_item_id"}, {Name: "judge"}},
		DoUpdates: clause.AssignmentColumns([]string{"imported", "labels", "rationale", "error", "prompt_version", "prompt_sha256",
			"tokens_in", "tokens_out", "cost", "latency_ms", "created_at"}),
	}).CreateInBatches(&verdicts, importBatchSize).Error
	return wrap(err, "study verdicts")
}

// StudyJudgeWork lists the items of a study, in sample order, that a judge
// configuration has no verdict on yet, or only a failed one (judging them
// again is what a retry is for). System actor only: EFORBIDDEN otherwise;
// ENOTFOUND for an unknown study or a judge it does not configure.
func (db *DB) StudyJudgeWork(ctx context.Context, studyID int64, judge string) ([]models.StudyItem, error) {
	if err := requireQueue(ctx, "judges studies"); err != nil {
		return nil, err
	}
	q := db.q(ctx)
	var studies []models.Study
	if err := q.Where("id = ?", studyID).Limit(1).Find(&studies).Error; err != nil {
		return nil, wrap(err, "study")
	}
	if len(studies) == 0 {
		return nil, models.Errorf(models.ENOTFOUND, "Study %d not found.", studyID)
	}
	if !slices.ContainsFunc(studies[0].Judges, func(j models.StudyJudge) bool { return j.Name == judge }) {
		return nil, models.Errorf(models.ENOTFOUND, "Study %d has no judge configuration %q.", studyID, judge)
	}
	var out []models.StudyItem
	err := q.Where("study_id = ? AND NOT EXISTS (SELECT 1 FROM study_verdicts v WHERE v.study_item_id = study_items.id AND v.judge = ? AND v.error = '')",
		studyID, judge).Order("position").Find(&out).Error
	return out, wrap(err, "study items")
}

// SaveStudyVerdict stores a judge configuration's verdict on an item,
// replacing an earlier one, so a redelivered job judges again harmlessly.
// Labels are stored in canonical spelling. System actor only: EFORBIDDEN
// otherwise; ENOTFOUND when the item is not in the study; EINVALID for a
// verdict without a judge or with a bad label (canon checks the labels against
// the item's rubric and spells them canonically); ECONFLICT when v.Config is set
// and the study's configuration of that name is no longer it (the study row
// is held in share mode, so SetStudyJudges cannot change it meanwhile).
func (db *DB) SaveStudyVerdict(ctx context.Context, v *models.StudyVerdict,
	canon func(labels models.StudyLabels, rubric []models.RubricItem) (models.StudyLabels, error)) error {
	if err := requireQueue(ctx, "records study verdicts"); err != nil {
		return err
	}
	if strings.TrimSpace(v.Judge) == "" {
		return models.FieldError("judge", "The verdict names no judge.")
	}
	return db.tx(ctx, func(tx *gorm.DB) error {
		if v.Config != nil {
			acc, err := db.loadStudyAccess(tx, v.StudyID, studyShared, systemGate())
			if err != nil {
				return err
			}
			if !slices.Contains(acc.Study.Judges, *v.Config) {
				return models.Errorf(models.ECONFLICT, "The study's judge %q changed while it judged: its verdict is dropped.", v.Judge)
			}
		}
		item, err := studyItemOf(tx, v.StudyID, v.StudyItemID)
		if err != nil {
			return err
		}
		rubric, err := taskRubric(tx, item.AttemptID)
		if err != nil {
			return err
		}
		labels, err := canon(v.Labels, rubric)
		if err != nil {
			return err
		}
		row := *v
		row.ID, row.Imported, row.Labels, row.CreatedAt = 0, false, labels, db.now()
		if err := upsertVerdicts(tx, []models.StudyVerdict{row}); err != nil {
			return err
		}
		v.Labels, v.Imported, v.CreatedAt = labels, false, row.CreatedAt
		return nil
	})
}
