package storage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_StudyBlind: an annotator of a blind study never gets a verdict,
// score, outcome or other annotators' labels, from the item view or the
// verdicts; the owner and administrators get everything, and annotators of a
// study that is not blind get the reveal.
func TestStore_StudyBlind(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st, queues := f.openStudy(t, func(r *models.StudyRequest) { r.OverlapFraction, r.SampleSize = 1, 12 })
		items := f.items(t, st.ID)
		for _, it := range items {
			require.NoError(t, db.SaveStudyVerdict(f.system, &models.StudyVerdict{StudyID: st.ID, StudyItemID: it.ID, Judge: "gpt judge",
				Labels: models.StudyLabels{"success": "success"}, Rationale: "looks done"}, service.CanonicalVerdictLabels))
		}
		first := queues[1][0].ItemID
		_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[1], st.ID, first, models.StudyLabelInput{Labels: map[string]string{"success": "unsuccessful"}})
		require.NoError(t, err)

		t.Run("AnnotatorSeesNoVerdict", func(t *testing.T) {
			errored := false
			for _, e := range queues[0] {
				v, err := servicetest.Studies(db, nil).StudyItem(f.ann[0], st.ID, e.ItemID)
				require.NoError(t, err)
				require.Equal(t, models.StudyRoleAnnotator, v.Role)
				require.Nil(t, v.Reveal)
				require.Nil(t, v.Timeline.Evaluation)
				require.Nil(t, v.Timeline.Evaluations)
				require.Empty(t, v.Timeline.Attempt.Outcome)
				require.Nil(t, v.Timeline.Attempt.Score)
				require.Empty(t, v.Timeline.Attempt.ErrorClass)
				require.Empty(t, v.Timeline.Attempt.ErrorMessage)
				require.Zero(t, v.Timeline.Run.Successes)
				require.Zero(t, v.Timeline.Run.Errors)
				require.False(t, v.Timeline.CanManage)
				require.NotEmpty(t, v.Timeline.Task.Intent)
				require.NotNil(t, v.Assignment)
				var a models.Attempt
				require.NoError(t, db.Gorm().First(&a, v.Item.AttemptID).Error)
				errored = errored || a.ErrorClass != ""
			}
			require.True(t, errored, "the queue holds an attempt that ended in an agent error")
			_, err := servicetest.Studies(db, nil).StudyVerdicts(f.ann[0], st.ID)
			requireCode(t, models.EFORBIDDEN, err)
			require.Equal(t, "This study is blind: its judges' verdicts are hidden from its annotators.", models.ErrorMessage(err))
		})

		t.Run("ManagersSeeEverything", func(t *testing.T) {
			for _, ctx := range []struct {
				name string
				role string
			}{{"owner", models.StudyRoleOwner}, {"admin", models.StudyRoleAdmin}} {
				actor := f.member
				if ctx.name == "admin" {
					actor = f.admin
				}
				v, err := servicetest.Studies(db, nil).StudyItem(actor, st.ID, first)
				require.NoError(t, err)
				require.Equal(t, ctx.role, v.Role)
				require.Nil(t, v.Assignment, "managers annotate nothing here")
				require.NotNil(t, v.Timeline.Evaluation)
				require.NotEmpty(t, v.Timeline.Attempt.Outcome)
				require.NotNil(t, v.Reveal)
				require.NotEmpty(t, v.Reveal.Evaluations)
				require.Len(t, v.Reveal.Verdicts, 1)
				require.Equal(t, "successful", v.Reveal.Verdicts[0].Labels["success"])
				require.Len(t, v.Reveal.Labels, 2, "both annotators of the overlapping item")
				require.Equal(t, 12, v.Total, "managers move through the sample")
				require.Equal(t, v.Item.Position, v.Position)
				verdicts, err := servicetest.Studies(db, nil).StudyVerdicts(actor, st.ID)
				require.NoError(t, err)
				require.Len(t, verdicts, 12)
			}
		})

		t.Run("BlindAttempt", func(t *testing.T) {
			mine := f.items(t, st.ID)
			attemptOf := map[int64]int64{}
			for _, it := range mine {
				attemptOf[it.ID] = it.AttemptID
			}
			pending := attemptOf[queues[0][0].ItemID]
			blind, err := blindAttempt(f.ann[0], db, pending)
			require.NoError(t, err)
			require.True(t, blind)
			for name, ctx := range map[string]context.Context{"owner": f.member, "admin": f.admin, "anonymous": f.anon, "stranger": f.outsider, "other annotator": f.ann[2]} {
				blind, err := blindAttempt(ctx, db, pending)
				require.NoError(t, err)
				require.False(t, blind, name)
			}
			// The run's attempt list is kept from the annotator alike; it is
			// published, so only the study keeps it from them.
			var attempt models.Attempt
			require.NoError(t, db.Gorm().First(&attempt, pending).Error)
			f.publish(t, attempt.RunID, true)
			defer f.publish(t, attempt.RunID, false)
			runAttempts := func() error {
				_, _, err := servicetest.Runs(db, 0).RunAttempts(f.ann[0], attempt.RunID, 1, 10)
				return err
			}
			requireCode(t, models.EFORBIDDEN, runAttempts())
			require.Equal(t, service.BlindRunMessage, models.ErrorMessage(runAttempts()))

			// Finished assignments stay blind while the study is open: their
			// labels may still be edited, so a verdict read after skipping or
			// submitting could still change them.
			for _, in := range []models.StudyLabelInput{
				{Action: models.LabelActionSkip, Reason: "unsure"},
				{Action: models.LabelActionFlag, Reason: "blank screenshots"},
				{Action: models.LabelActionSubmit, Labels: f.allLabels(t, st.ID, queues[0][0].ItemID)},
			} {
				as, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[0], st.ID, queues[0][0].ItemID, in)
				require.NoError(t, err)
				require.NotEqual(t, models.AssignmentPending, as.Status)
				blind, err = blindAttempt(f.ann[0], db, pending)
				require.NoError(t, err)
				require.True(t, blind, "%s: still blind while the study is open", as.Status)
				requireCode(t, models.EFORBIDDEN, runAttempts())
			}
			require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			for _, it := range queues[0] {
				blind, err = blindAttempt(f.ann[0], db, attemptOf[it.ItemID])
				require.NoError(t, err)
				require.False(t, blind, "closed studies keep nothing")
			}
			require.NoError(t, runAttempts(), "closed studies keep nothing")
		})

		t.Run("NoStratum", func(t *testing.T) {
			// Stratified by outcome, an item's stratum is its attempt's outcome.
			strat, queues := f.openStudy(t, func(r *models.StudyRequest) {
				r.Sampling, r.StratifyBy, r.SampleSize = models.SampleStratified, models.StratumOutcome, 6
			})
			for _, e := range queues[0] {
				v, err := servicetest.Studies(db, nil).StudyItem(f.ann[0], strat.ID, e.ItemID)
				require.NoError(t, err)
				require.Empty(t, v.Item.Stratum, "item %d", e.ItemID)
				owner, err := servicetest.Studies(db, nil).StudyItem(f.member, strat.ID, e.ItemID)
				require.NoError(t, err)
				require.Contains(t, []string{models.OutcomeSuccess, models.OutcomeFailure, models.OutcomeError}, owner.Item.Stratum)
			}
			require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, strat.ID), "closed, it blinds no attempt of the tests that follow")
		})

		t.Run("NotBlind", func(t *testing.T) {
			open, queues := f.openStudy(t, func(r *models.StudyRequest) { r.Blind, r.OverlapFraction = false, 1 })
			item := queues[0][0].ItemID
			_, err := servicetest.Studies(db, nil).SaveStudyLabels(f.ann[1], open.ID, item, models.StudyLabelInput{Labels: map[string]string{"success": "successful"}})
			require.NoError(t, err)
			v, err := servicetest.Studies(db, nil).StudyItem(f.ann[0], open.ID, item)
			require.NoError(t, err)
			require.NotNil(t, v.Timeline.Evaluation)
			require.NotEmpty(t, v.Timeline.Attempt.Outcome)
			require.NotNil(t, v.Reveal)
			require.NotEmpty(t, v.Reveal.Evaluations)
			require.Len(t, v.Reveal.Labels, 2)
			names := []string{v.Reveal.Labels[0].Annotator, v.Reveal.Labels[1].Annotator}
			require.ElementsMatch(t, []string{"ann1", "ann2"}, names)
			require.Equal(t, 1, v.Position)
			require.Equal(t, 8, v.Total, "annotators move through their queue")
			require.Equal(t, queues[0][1].ItemID, v.NextID)
			require.Zero(t, v.PrevID)
			_, err = servicetest.Studies(db, nil).StudyVerdicts(f.ann[0], open.ID)
			require.NoError(t, err)
			blind, err := blindAttempt(f.ann[0], db, v.Item.AttemptID)
			require.NoError(t, err)
			require.False(t, blind)
		})
	})
}

// blindAttempt reports whether the blind-study rule (service.Access) keeps
// the attempt from the context's actor.
func blindAttempt(ctx context.Context, db *storage.DB, attemptID int64) (bool, error) {
	err := service.NewAccess(db).ReadAttempt(ctx, attemptID)
	if models.ErrorCode(err) == models.EFORBIDDEN {
		return true, nil
	}
	return false, err
}
