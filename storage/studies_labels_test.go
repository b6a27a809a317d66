package storage_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/migrations"
	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// openStudy creates a study with mod applied, opens it and returns it with
// each annotator's queue (by annotator index).
func (f *studyFixture) openStudy(t *testing.T, mod func(*models.StudyRequest)) (*models.Study, [][]models.StudyQueueEntry) {
	t.Helper()
	st := f.create(t, mod)
	require.NoError(t, servicetest.Studies(f.db, nil).OpenStudy(f.member, st.ID))
	var queues [][]models.StudyQueueEntry
	for _, ctx := range f.ann {
		q, err := servicetest.Studies(f.db, nil).StudyQueue(ctx, st.ID)
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
			requireField(t, "annotators", "Invite at least one annotator", servicetest.Studies(db, nil).OpenStudy(f.member, st.ID))
			st = f.create(t, func(r *models.StudyRequest) { r.OverlapFraction, r.OverlapAnnotators = 0.5, 3 })
			requireField(t, "annotators", "Overlapping items go to 3 annotators each, but the study has 2", servicetest.Studies(db, nil).OpenStudy(f.member, st.ID))
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
			view, err := servicetest.Studies(db, nil).StudyOverview(f.member, st.ID)
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
		view, err := servicetest.Studies(db, nil).StudyItem(f.ann[0], st.ID, mine)
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
			return servicetest.Studies(db, nil).SaveStudyLabels(ctx, st.ID, item, in)
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
			_, err = servicetest.Studies(db, nil).StudyItem(f.ann[0], st.ID, theirs)
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
			q, err := servicetest.Studies(db, nil).StudyQueue(f.ann[0], st.ID)
			require.NoError(t, err)
			require.Equal(t, models.StudyProgress{Assigned: 4, Flagged: 1}, q.Progress)
			require.Equal(t, "the screenshots are blank", q.Entries[1].Reason)
			require.Equal(t, mine, q.Next)
		})

		t.Run("DraftAndClosed", func(t *testing.T) {
			draft := f.create(t, nil)
			_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], draft.ID, f.items(t, draft.ID)[0].ID, models.StudyLabelInput{})
			requireCode(t, models.ECONFLICT, err)
			require.Contains(t, models.ErrorMessage(err), "not open yet")

			require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			_, err = save(f.ann[0], mine, models.StudyLabelInput{Labels: map[string]string{"success": "successful"}})
			requireCode(t, models.ECONFLICT, err)
			require.Equal(t, "The study is closed; labels can no longer be changed.", models.ErrorMessage(err))
		})
	})
}

// TestStore_SaveStudyLabelsWhileClosing: labels saved while the study closes
// are either saved before its closing time or refused as closed.
func TestStore_SaveStudyLabelsWhileClosing(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		success := models.StudyLabelInput{Labels: map[string]string{models.StudyLabelSuccess: "successful"}}

		t.Run("RacingSaves", func(t *testing.T) {
			st, queues := f.openStudy(t, nil)
			var saved atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for who := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						item := queues[who][i%len(queues[who])].ItemID
						if _, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[who], st.ID, item, success); err != nil {
							errs <- err
							return
						}
						saved.Add(1)
					}
				}()
			}
			require.Eventually(t, func() bool { return saved.Load() >= 10 }, 30*time.Second, time.Millisecond)
			require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			wg.Wait()
			close(errs)
			for err := range errs {
				requireCode(t, models.ECONFLICT, err)
			}
			var closed models.Study
			require.NoError(t, db.Gorm().First(&closed, st.ID).Error)
			var assignments []models.StudyAssignment
			require.NoError(t, db.Gorm().Where("study_id = ?", st.ID).Find(&assignments).Error)
			for _, as := range assignments {
				require.False(t, as.UpdatedAt.After(*closed.ClosedAt), "assignment %d saved at %s, after the close at %s", as.ID, as.UpdatedAt, *closed.ClosedAt)
			}
		})

		if db.Dialect() != migrations.Postgres {
			// SQLite runs one write transaction at a time: a save cannot
			// overlap a close, so there is nothing to wait for.
			return
		}
		t.Run("SaveWaitsForClose", func(t *testing.T) {
			st, queues := f.openStudy(t, nil)
			item := queues[0][0].ItemID
			// A close in progress: the study row locked for update, as
			// CloseStudy locks it, by a transaction that has not committed.
			closing := db.Gorm().Begin()
			defer closing.Rollback()
			var pid int64
			require.NoError(t, closing.Raw("SELECT pg_backend_pid()").Scan(&pid).Error)
			require.NoError(t, closing.Exec("SELECT id FROM studies WHERE id = ? FOR UPDATE", st.ID).Error)

			done := make(chan error, 1)
			go func() {
				_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], st.ID, item, success)
				done <- err
			}()
			var result error
			finished := false
			require.Eventually(t, func() bool {
				select {
				case result = <-done:
					finished = true
					return true
				default:
				}
				var waiting int64
				require.NoError(t, db.Gorm().Raw("SELECT COUNT(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", pid).Scan(&waiting).Error)
				return waiting > 0
			}, 30*time.Second, time.Millisecond, "the save neither finished nor waited for the close")

			now := time.Now().UTC()
			require.NoError(t, closing.Exec("UPDATE studies SET status = ?, closed_at = ?, updated_at = ? WHERE id = ?", models.StudyClosed, now, now, st.ID).Error)
			require.NoError(t, closing.Commit().Error)
			if !finished {
				result = <-done
			}
			requireCode(t, models.ECONFLICT, result)
			var as models.StudyAssignment
			require.NoError(t, db.Gorm().Where("study_item_id = ? AND user_id = ?", item, f.annUsers[0].ID).First(&as).Error)
			require.Empty(t, as.Labels, "nothing saved into the closed study")
		})
	})
}
