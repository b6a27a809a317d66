package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStudies_InvitationsByTeam: administrators (and the system) may invite
// any user; other owners only users who share a team with them, and for
// them an unknown email and the email of a user outside their teams are
// refused alike, so inviting cannot tell which emails have accounts. An
// invitation records who made it; the system invites on the owner's behalf.
func TestStudies_InvitationsByTeam(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudiesAuthzFixture(t, db)
		stranger := models.ActorFrom(f.other).Email // of the other team only
		const unknown = "nobody@runs.test"
		// sameRefusal checks two refusals say the same thing, but for the email.
		sameRefusal := func(t *testing.T, existing, missing error) {
			t.Helper()
			require.Equal(t, models.EINVALID, models.ErrorCode(existing))
			require.Equal(t, models.EINVALID, models.ErrorCode(missing))
			require.Equal(t, models.ErrorField(existing), models.ErrorField(missing))
			require.Equal(t, strings.ReplaceAll(models.ErrorMessage(existing), stranger, "X"), strings.ReplaceAll(models.ErrorMessage(missing), unknown, "X"))
			require.Contains(t, models.ErrorMessage(existing), "No member of your teams has the email "+stranger+"; an administrator can invite anyone.")
		}
		draft := func(t *testing.T) *models.Study {
			t.Helper()
			st, err := f.studies.CreateStudy(f.member, f.request())
			require.NoError(t, err)
			return st
		}
		invitedBy := func(t *testing.T, studyID int64, email string) int64 {
			t.Helper()
			var by []int64
			require.NoError(t, db.Gorm().Table("study_annotators sa").Joins("JOIN users u ON u.id = sa.user_id").
				Where("sa.study_id = ? AND u.email = ?", studyID, email).Pluck("sa.invited_by", &by).Error)
			require.Len(t, by, 1)
			return by[0]
		}

		t.Run("Member", func(t *testing.T) {
			st := draft(t)
			require.NoError(t, f.studies.InviteAnnotator(f.member, st.ID, f.teammate), "a teammate")
			require.Equal(t, models.ActorFrom(f.member).UserID, invitedBy(t, st.ID, f.teammate))
			sameRefusal(t, f.studies.InviteAnnotator(f.member, st.ID, stranger), f.studies.InviteAnnotator(f.member, st.ID, unknown))
			require.Equal(t, "email", models.ErrorField(f.studies.InviteAnnotator(f.member, st.ID, unknown)))
			err := f.studies.InviteAnnotator(f.member, st.ID, strings.ToUpper(f.teammate))
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Equal(t, "email", models.ErrorField(err))
			require.Equal(t, f.teammate+" is already an annotator of this study.", models.ErrorMessage(err))
			err = f.studies.InviteAnnotator(f.member, st.ID, "ghost")
			require.Equal(t, "email", models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), "not a valid email")
		})
		t.Run("Admin", func(t *testing.T) {
			st := draft(t)
			require.NoError(t, f.studies.InviteAnnotator(f.admin, st.ID, stranger), "administrators invite anyone")
			require.Equal(t, f.adminID.ID, invitedBy(t, st.ID, stranger))
			err := f.studies.InviteAnnotator(f.admin, st.ID, unknown)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
			require.Equal(t, "email", models.ErrorField(err))
			require.Equal(t, "No user has the email "+unknown+".", models.ErrorMessage(err))
		})
		t.Run("System", func(t *testing.T) {
			st := draft(t)
			require.NoError(t, f.studies.InviteAnnotator(f.system, st.ID, stranger), "the system invites anyone")
			require.Equal(t, st.OwnerID, invitedBy(t, st.ID, stranger), "on the owner's behalf")
			err := f.studies.InviteAnnotator(f.system, st.ID, unknown)
			require.Equal(t, "No user has the email "+unknown+".", models.ErrorMessage(err))
		})
		t.Run("Create", func(t *testing.T) {
			invite := func(email string) models.StudyRequest {
				req := f.request()
				req.Annotators = []string{f.teammate, email}
				return req
			}
			_, existing := f.studies.CreateStudy(f.member, invite(stranger))
			_, missing := f.studies.CreateStudy(f.member, invite(unknown))
			sameRefusal(t, existing, missing)
			require.Equal(t, "annotators", models.ErrorField(existing))
			_, err := f.studies.CreateStudy(f.admin, invite(unknown))
			require.Equal(t, "No user has the email "+unknown+".", models.ErrorMessage(err))
			require.Equal(t, "annotators", models.ErrorField(err))
			st, err := f.studies.CreateStudy(f.admin, invite(stranger))
			require.NoError(t, err, "administrators invite anyone")
			for _, email := range []string{f.teammate, stranger} {
				require.Equal(t, f.adminID.ID, invitedBy(t, st.ID, email))
			}
			_, err = f.studies.CreateStudy(f.system, invite(stranger))
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err), "studies are owned by users")
		})
	})
}

// TestStudies_ItemEvaluationDetails: a study's item shows its evaluations'
// details in full to administrators and in their public view to everyone
// else, its owner included.
func TestStudies_ItemEvaluationDetails(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudiesAuthzFixture(t, db)
		st, items := f.study(t, false)
		const full = `{"model":"judge-1","endpoint":"http://judge.internal/v1"}`
		require.NoError(t, db.Gorm().Omit("RubricJudgments").Create(&models.Evaluation{AttemptID: items[0].AttemptID, Evaluator: "llm-judge",
			Kind: models.EvaluationJudge, IsPrimary: true, IsCurrent: true, Verdict: models.OutcomeSuccess, Details: full}).Error)
		for who, tc := range map[string]struct {
			ctx  context.Context
			full bool
		}{"admin": {f.admin, true}, "system": {f.system, true}, "owner": {f.member, false}} {
			v, err := f.studies.StudyItem(tc.ctx, st.ID, items[0].ID)
			require.NoError(t, err, who)
			require.Len(t, v.Timeline.Evaluations, 1, who)
			require.Len(t, v.Reveal.Evaluations, 1, who)
			for _, got := range []string{v.Timeline.Evaluations[0].Details, v.Reveal.Evaluations[0].Details} {
				if tc.full {
					require.Equal(t, full, got, who)
					continue
				}
				require.Contains(t, got, `"judge-1"`, who)
				require.NotContains(t, got, "judge.internal", who)
			}
		}
	})
}
