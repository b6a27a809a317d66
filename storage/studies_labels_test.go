package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// openStudy creates a study with mod applied, opens it and returns it with
// each annotator's queue (by annotator index).
func (f *studyFixture) openStudy(t *testing.T, mod func(*models.StudyRequest)) (*models.Study, [][]models.StudyQueueEntry) {
	t.Helper()
	st := f.create(t, mod)
	require.NoError(t, f.db.OpenStudy(f.member, st.ID))
	var queues [][]models.StudyQueueEntry
	for _, ctx := range f.ann {
		q, err := f.db.StudyQueue(ctx, st.ID)
		if models.ErrorCode(err) == models.ENOTFOUND {
			queues = append(queues, nil) // not invited
			continue
		}
		require.NoError(t, err)
		queues = append(queues, q.Entries)
	}
	return st, queues
}

func TestStore_OpenStudy(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)

		t.Run("NeedsAnnotators", func(t *testing.T) {
			st := f.create(t, func(r *models.StudyRequest) { r.Annotators = nil })
			requireField(t, "annotators", "Invite at least one annotator", db.OpenStudy(f.member, st.ID))
			st = f.create(t, func(r *models.StudyRequest) { r.OverlapFraction, r.OverlapAnnotators = 0.5, 3 })
			requireField(t, "annotators", "Overlapping items go to 3 annotators each, but the study has 2", db.OpenStudy(f.member, st.ID))
			require.EqualValues(t, 0, countRows(t, db, "study_assignments", "study_id = ?", st.ID))
		})

		t.Run("Overlap", func(t *testing.T) {
			mod := func(r *models.StudyRequest) {
				r.OverlapFraction = 0.5
				r.Annotators = []string{"ann1@study.test", "ann2@study.test", "ann3@study.test"}
			}
			st, queues := f.openStudy(t, mod)
			perItem := map[int64]int{}
			for _, q := range queues {
				require.Len(t, q, 4, "12 assignments over three annotators")
				for i, e := range q {
					require.Equal(t, i+1, e.Position)
					require.Equal(t, models.AssignmentPending, e.Status)
					perItem[e.ItemID]++
				}
			}
			require.Len(t, perItem, 8)
			twice := 0
			for _, n := range perItem {
				if n == 2 {
					twice++
				}
			}
			require.Equal(t, 4, twice, "half of the 8 items go to two annotators")

			// The same request opens to the same queues (by attempt).
			again, queues2 := f.openStudy(t, mod)
			attemptOf := func(studyID int64) map[int64]int64 {
				out := map[int64]int64{}
				for _, it := range f.items(t, studyID) {
					out[it.ID] = it.AttemptID
				}
				return out
			}
			a, b := attemptOf(st.ID), attemptOf(again.ID)
			for i := range queues {
				for j := range queues[i] {
					require.Equal(t, a[queues[i][j].ItemID], b[queues2[i][j].ItemID])
				}
			}
			view, err := db.StudyOverview(f.member, st.ID)
			require.NoError(t, err)
			require.Equal(t, 12, view.Progress.Assigned)
			for _, an := range view.Annotators {
				require.Equal(t, 4, an.Progress.Assigned)
			}
		})
	})
}

func TestStore_SaveStudyLabels(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st, queues := f.openStudy(t, func(r *models.StudyRequest) {
			r.Labels = []string{models.StudyLabelSuccess, models.StudyLabelScore, models.StudyLabelOptimality, models.StudyLabelRubric}
		})
		mine := queues[0][0].ItemID
		theirs := queues[1][0].ItemID
		view, err := db.StudyItem(f.ann[0], st.ID, mine)
		require.NoError(t, err)
		require.NotEmpty(t, view.RubricItems)
		rubric := func(v string) map[string]string {
			out := map[string]string{}
			for _, it := range view.RubricItems {
				out[models.RubricLabelKey(it.ID)] = v
			}
			return out
		}
		save := func(ctx context.Context, item int64, in models.StudyLabelInput) (*models.StudyAssignment, error) {
			return db.SaveStudyLabels(ctx, st.ID, item, in)
		}

		t.Run("Invalid", func(t *testing.T) {
			for name, tc := range map[string]struct {
				in       models.StudyLabelInput
				field    string
				contains string
			}{
				"UnknownLabel":    {models.StudyLabelInput{Labels: map[string]string{"mood": "good"}}, "mood", `The study does not ask "mood".`},
				"UnaskedLabel":    {models.StudyLabelInput{Labels: map[string]string{"looping": "yes"}}, "looping", `does not ask "looping"`},
				"BadSuccess":      {models.StudyLabelInput{Labels: map[string]string{"success": "maybe"}}, "success", `"maybe" is not an answer to success (allowed: Successful, Unsuccessful, Unsure).`},
				"ScoreOutOfRange": {models.StudyLabelInput{Labels: map[string]string{"score": "7"}}, "score", "allowed: 1, 2, 3, 4, 5"},
				"NoUnsureOptimality": {models.StudyLabelInput{Labels: map[string]string{"optimality": "unsure"}}, "optimality",
					"allowed: 1. Complete Failure, 2. Suboptimal, 3. Somewhat Optimal, 4. Completely Optimal"},
				"OtherTasksRubricItem": {models.StudyLabelInput{Labels: map[string]string{models.RubricLabelKey(999999): "pass"}},
					models.RubricLabelKey(999999), "not one of this task's"},
				"BadRubricAnswer": {models.StudyLabelInput{Labels: map[string]string{models.RubricLabelKey(view.RubricItems[0].ID): "yes"}},
					models.RubricLabelKey(view.RubricItems[0].ID), "allowed: pass, fail"},
				"UnknownAction":    {models.StudyLabelInput{Action: "publish"}, "action", `not "publish"`},
				"SkipNoReason":     {models.StudyLabelInput{Action: models.LabelActionSkip, Reason: "  "}, "reason", "Say why you skip"},
				"FlagNoReason":     {models.StudyLabelInput{Action: models.LabelActionFlag}, "reason", "Say why you flag"},
				"LongReason":       {models.StudyLabelInput{Action: models.LabelActionFlag, Reason: string(make([]byte, models.MaxStudyReasonLen+1))}, "reason", "at most 1000"},
				"NegativeTime":     {models.StudyLabelInput{TimeSpentMS: -1}, "time_spent_ms", "cannot be negative"},
				"SubmitIncomplete": {models.StudyLabelInput{Action: models.LabelActionSubmit, Labels: map[string]string{"score": "3"}}, "success", "missing: success, optimality, rubric:"},
			} {
				t.Run(name, func(t *testing.T) {
					_, err := save(f.ann[0], mine, tc.in)
					requireField(t, tc.field, tc.contains, err)
				})
			}
			var as models.StudyAssignment
			require.NoError(t, db.Gorm().Where("study_item_id = ? AND user_id = ?", mine, f.annUsers[0].ID).First(&as).Error)
			require.Empty(t, as.Labels, "nothing saved by a refused input")
		})

		t.Run("NotAssigned", func(t *testing.T) {
			_, err := save(f.ann[0], theirs, models.StudyLabelInput{Labels: map[string]string{"success": "yes"}})
			requireCode(t, models.EFORBIDDEN, err)
			require.Equal(t, fmt.Sprintf("Item %d is not assigned to you.", theirs), models.ErrorMessage(err))
			_, err = db.StudyItem(f.ann[0], st.ID, theirs)
			requireCode(t, models.EFORBIDDEN, err)
			_, err = save(f.member, mine, models.StudyLabelInput{})
			requireCode(t, models.EFORBIDDEN, err) // managers label only what is assigned to them
			_, err = save(f.ann[0], mine+100000, models.StudyLabelInput{})
			requireCode(t, models.ENOTFOUND, err)
			_, err = save(f.outsider, mine, models.StudyLabelInput{})
			requireCode(t, models.ENOTFOUND, err)
		})

		t.Run("SaveSubmitEdit", func(t *testing.T) {
			as, err := save(f.ann[0], mine, models.StudyLabelInput{Labels: map[string]string{"success": " Unsure ", "score": "4"}, TimeSpentMS: 1000})
			require.NoError(t, err)
			require.Equal(t, models.AssignmentPending, as.Status, "autosave keeps the status")
			require.Equal(t, models.StudyLabels{"success": "unsure", "score": "4"}, as.Labels)
			require.Equal(t, int64(1000), as.TimeSpentMS)

			labels := rubric("Fail")
			labels["optimality"] = "2. Suboptimal"
			labels["score"] = "" // cleared
			as, err = save(f.ann[0], mine, models.StudyLabelInput{Labels: labels, TimeSpentMS: 10 * 3600 * 1000})
			require.NoError(t, err)
			require.Equal(t, int64(1000+models.MaxStudyTimeDeltaMS), as.TimeSpentMS, "one save adds at most 30 minutes")
			require.Equal(t, "2", as.Labels["optimality"])
			require.NotContains(t, as.Labels, "score")
			require.Equal(t, models.RubricFail, as.Labels[models.RubricLabelKey(view.RubricItems[0].ID)])
			_, err = save(f.ann[0], mine, models.StudyLabelInput{Action: models.LabelActionSubmit})
			requireField(t, "score", "missing: score.", err)

			as, err = save(f.ann[0], mine, models.StudyLabelInput{Action: models.LabelActionSubmit, Labels: map[string]string{"score": "5"}})
			require.NoError(t, err)
			require.Equal(t, models.AssignmentDone, as.Status)
			require.NotNil(t, as.SubmittedAt)

			as, err = save(f.ann[0], mine, models.StudyLabelInput{Action: models.LabelActionSubmit, Labels: map[string]string{"score": "1"}})
			require.NoError(t, err, "a done item may be edited while the study is open")
			require.Equal(t, "1", as.Labels["score"])
			as, err = save(f.ann[0], mine, models.StudyLabelInput{Labels: map[string]string{"score": ""}})
			require.NoError(t, err)
			require.Equal(t, models.AssignmentPending, as.Status, "no longer complete: pending again")
			require.Nil(t, as.SubmittedAt)
		})

		t.Run("SkipAndFlag", func(t *testing.T) {
			second := queues[0][1].ItemID
			as, err := save(f.ann[0], second, models.StudyLabelInput{Action: models.LabelActionSkip, Reason: " no idea "})
			require.NoError(t, err)
			require.Equal(t, models.AssignmentSkipped, as.Status)
			require.Equal(t, "no idea", as.Reason)
			as, err = save(f.ann[0], second, models.StudyLabelInput{Action: models.LabelActionFlag, Reason: "the screenshots are blank"})
			require.NoError(t, err)
			require.Equal(t, models.AssignmentFlagged, as.Status)
			q, err := db.StudyQueue(f.ann[0], st.ID)
			require.NoError(t, err)
			require.Equal(t, models.StudyProgress{Assigned: 4, Flagged: 1}, q.Progress)
			require.Equal(t, "the screenshots are blank", q.Entries[1].Reason)
			require.Equal(t, mine, q.Next)
		})

		t.Run("DraftAndClosed", func(t *testing.T) {
			draft := f.create(t, nil)
			_, err := db.SaveStudyLabels(f.ann[0], draft.ID, f.items(t, draft.ID)[0].ID, models.StudyLabelInput{})
			requireCode(t, models.ECONFLICT, err)
			require.Contains(t, models.ErrorMessage(err), "not open yet")

			require.NoError(t, db.CloseStudy(f.member, st.ID))
			_, err = save(f.ann[0], mine, models.StudyLabelInput{Labels: map[string]string{"success": "successful"}})
			requireCode(t, models.ECONFLICT, err)
			require.Equal(t, "The study is closed; labels can no longer be changed.", models.ErrorMessage(err))
		})
	})
}
