package storage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/agreement"
	"proctor/models"
	"proctor/service"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_StudyPermissions: who may do what to a draft study (the owner,
// administrators, an invited annotator, a signed-in stranger, an anonymous
// visitor) and to an open one.
func TestStore_StudyPermissions(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, nil)
		items := f.items(t, st.ID)
		judges := []models.StudyJudge{{Name: "other", Prompt: models.StudyPromptTrajectoryV2}}
		data, err := servicetest.Studies(db, nil).StudyData(f.member, st.ID)
		require.NoError(t, err)
		key := agreement.StudyKeys(data.Items)[data.Items[0].ItemID]
		row := []models.StudyImportRow{{Benchmark: key.Benchmark, Model: key.Model, TaskID: key.TaskID, Who: "x", Line: 2,
			Labels: models.StudyLabels{"success": "Unsure"}}}

		const (
			ok        = ""
			anonymous = models.EUNAUTHORIZED
			hidden    = models.ENOTFOUND
			forbidden = models.EFORBIDDEN
		)
		type want struct{ anon, stranger, annotator, owner, admin string }
		read := want{anonymous, hidden, ok, ok, ok}
		manage := want{anonymous, hidden, forbidden, ok, ok}
		for name, tc := range map[string]struct {
			call func(ctx context.Context) error
			want want
		}{
			"StudyOverview": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).StudyOverview(ctx, st.ID)
				return err
			}, read},
			"StudyQueue": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).StudyQueue(ctx, st.ID)
				return err
			}, read},
			// Nothing is assigned in a draft: annotators may open no item yet.
			"StudyItem": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).StudyItem(ctx, st.ID, items[0].ID)
				return err
			}, manage},
			"StudyVerdicts": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).StudyVerdicts(ctx, st.ID)
				return err
			}, manage},
			"StudyData": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).StudyData(ctx, st.ID)
				return err
			}, manage},
			"SetStudyJudges": {func(ctx context.Context) error {
				return servicetest.Studies(db, nil).SetStudyJudges(ctx, st.ID, judges)
			}, manage},
			"ImportStudyLabels": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).ImportStudyLabels(ctx, st.ID, row)
				return err
			}, manage},
			"ImportStudyVerdicts": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).ImportStudyVerdicts(ctx, st.ID, row)
				return err
			}, manage},
			// A removal the caller may make of someone never invited says so.
			"RemoveAnnotator": {func(ctx context.Context) error {
				return servicetest.Studies(db, nil).RemoveAnnotator(ctx, st.ID, f.annUsers[2].ID)
			},
				want{anonymous, hidden, forbidden, hidden, hidden}},
			"SaveStudyLabels": {func(ctx context.Context) error {
				_, err := servicetest.Studies(db, nil).SaveStudyLabels(ctx, st.ID, items[0].ID, models.StudyLabelInput{Action: models.LabelActionSave})
				return err
			}, want{anonymous, hidden, models.ECONFLICT, models.ECONFLICT, models.ECONFLICT}},
		} {
			t.Run(name, func(t *testing.T) {
				for who, ctx := range map[string]context.Context{"anonymous": f.anon, "stranger": f.outsider, "annotator": f.ann[0], "owner": f.member, "admin": f.admin} {
					expect := map[string]string{"anonymous": tc.want.anon, "stranger": tc.want.stranger, "annotator": tc.want.annotator,
						"owner": tc.want.owner, "admin": tc.want.admin}[who]
					require.Equal(t, expect, models.ErrorCode(tc.call(ctx)), "%s", who)
				}
			})
		}
		t.Run("UninvitedUserSeesNothing", func(t *testing.T) {
			_, err := servicetest.Studies(db, nil).StudyOverview(f.ann[2], st.ID)
			requireCode(t, models.ENOTFOUND, err)
			require.Equal(t, "Study "+itoa(int(st.ID))+" not found.", models.ErrorMessage(err))
			_, err = servicetest.Studies(db, nil).StudyOverview(f.member, st.ID+1000)
			requireCode(t, models.ENOTFOUND, err)
		})
		t.Run("Roles", func(t *testing.T) {
			for ctx, role := range map[context.Context]string{f.member: models.StudyRoleOwner, f.admin: models.StudyRoleAdmin, f.ann[0]: models.StudyRoleAnnotator} {
				v, err := servicetest.Studies(db, nil).StudyOverview(ctx, st.ID)
				require.NoError(t, err)
				require.Equal(t, role, v.Role)
				require.Equal(t, role != models.StudyRoleAnnotator, v.CanManage)
				require.Equal(t, "member", v.OwnerName)
				if role == models.StudyRoleAnnotator {
					require.Empty(t, v.Annotators, "annotators see only their own progress")
					require.Empty(t, v.Judges)
				} else {
					require.Len(t, v.Annotators, 2)
				}
			}
		})
		t.Run("Invitations", func(t *testing.T) {
			require.NoError(t, servicetest.Studies(db, nil).InviteAnnotator(f.member, st.ID, " ANN3@study.test "))
			err := servicetest.Studies(db, nil).InviteAnnotator(f.admin, st.ID, "ann3@study.test")
			requireCode(t, models.ECONFLICT, err)
			require.Equal(t, "email", models.ErrorField(err))
			require.Contains(t, models.ErrorMessage(err), "already an annotator")
			// Who may invite whom: service.TestStudies_InvitationsByTeam.
			requireField(t, "email", "not a valid email", servicetest.Studies(db, nil).InviteAnnotator(f.member, st.ID, "ghost"))
			requireCode(t, models.EFORBIDDEN, servicetest.Studies(db, nil).InviteAnnotator(f.ann[0], st.ID, "admin@runs.test"))
			requireCode(t, models.ENOTFOUND, servicetest.Studies(db, nil).InviteAnnotator(f.outsider, st.ID, "admin@runs.test"))

			_, err = servicetest.Studies(db, nil).StudyOverview(f.ann[2], st.ID)
			require.NoError(t, err, "invited: the study exists for them now")
			require.NoError(t, servicetest.Studies(db, nil).RemoveAnnotator(f.admin, st.ID, f.annUsers[2].ID))
			_, err = servicetest.Studies(db, nil).StudyOverview(f.ann[2], st.ID)
			requireCode(t, models.ENOTFOUND, err)
		})
		t.Run("SystemJobsOnly", func(t *testing.T) {
			for _, ctx := range []context.Context{f.member, f.admin, f.ann[0]} {
				_, err := db.StudyJudgeWork(ctx, st.ID, "gpt judge")
				requireCode(t, models.EFORBIDDEN, err)
				requireCode(t, models.EFORBIDDEN, db.SaveStudyVerdict(ctx, &models.StudyVerdict{StudyID: st.ID, StudyItemID: items[0].ID, Judge: "gpt judge"}, service.CanonicalVerdictLabels))
			}
		})
		t.Run("Lifecycle", func(t *testing.T) {
			requireCode(t, models.EFORBIDDEN, servicetest.Studies(db, nil).OpenStudy(f.ann[0], st.ID))
			requireCode(t, models.ENOTFOUND, servicetest.Studies(db, nil).OpenStudy(f.outsider, st.ID))
			requireCode(t, models.EUNAUTHORIZED, servicetest.Studies(db, nil).OpenStudy(f.anon, st.ID))
			requireCode(t, models.ECONFLICT, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			require.NoError(t, servicetest.Studies(db, nil).OpenStudy(f.admin, st.ID))
			err := servicetest.Studies(db, nil).OpenStudy(f.member, st.ID)
			requireCode(t, models.ECONFLICT, err)
			require.Equal(t, "The study is already open.", models.ErrorMessage(err))
			err = servicetest.Studies(db, nil).InviteAnnotator(f.member, st.ID, "ann3@study.test")
			requireCode(t, models.ECONFLICT, err)
			require.Contains(t, models.ErrorMessage(err), "only while it is a draft")
			requireCode(t, models.ECONFLICT, servicetest.Studies(db, nil).RemoveAnnotator(f.member, st.ID, f.annUsers[1].ID))
			require.NoError(t, servicetest.Studies(db, nil).SetStudyJudges(f.member, st.ID, judges), "judges may change while open")
			requireCode(t, models.EFORBIDDEN, servicetest.Studies(db, nil).CloseStudy(f.ann[0], st.ID))
			require.NoError(t, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			requireCode(t, models.ECONFLICT, servicetest.Studies(db, nil).CloseStudy(f.member, st.ID))
			requireCode(t, models.ECONFLICT, servicetest.Studies(db, nil).SetStudyJudges(f.member, st.ID, judges))

			var got models.Study
			require.NoError(t, db.Gorm().First(&got, st.ID).Error)
			require.Equal(t, models.StudyClosed, got.Status)
			require.NotNil(t, got.OpenedAt)
			require.NotNil(t, got.ClosedAt)
			require.Equal(t, "other", got.Judges[0].Name)
		})
	})
}

func TestStore_Studies(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		first := f.create(t, nil)
		second := f.create(t, func(r *models.StudyRequest) { r.Name, r.Annotators = "Second", []string{"ann2@study.test"} })
		theirs, err := servicetest.Studies(db, nil).CreateStudy(f.admin, f.request(func(r *models.StudyRequest) { r.Name, r.Annotators = "Admin's", nil }))
		require.NoError(t, err)
		require.NoError(t, servicetest.Studies(db, nil).OpenStudy(f.member, second.ID))

		ids := func(list []models.StudyListItem) []int64 {
			out := []int64{}
			for _, s := range list {
				out = append(out, s.ID)
			}
			return out
		}
		list, err := servicetest.Studies(db, nil).Studies(f.member)
		require.NoError(t, err)
		require.Equal(t, []int64{second.ID, first.ID}, ids(list), "newest first")
		require.Equal(t, models.StudyRoleOwner, list[0].Role)
		require.Zero(t, list[0].Assigned)

		list, err = servicetest.Studies(db, nil).Studies(f.ann[1])
		require.NoError(t, err)
		require.Equal(t, []int64{second.ID, first.ID}, ids(list))
		require.Equal(t, models.StudyRoleAnnotator, list[0].Role)
		require.Equal(t, 8, list[0].Assigned, "the only annotator of the second study")
		require.Zero(t, list[0].Finished)
		require.Equal(t, models.StudyOpen, list[0].Status)

		list, err = servicetest.Studies(db, nil).Studies(f.admin)
		require.NoError(t, err)
		require.Equal(t, []int64{theirs.ID, second.ID, first.ID}, ids(list))
		require.Equal(t, models.StudyRoleOwner, list[0].Role)
		require.Equal(t, models.StudyRoleAdmin, list[1].Role)
		require.Equal(t, "member", list[1].OwnerName)

		list, err = servicetest.Studies(db, nil).Studies(f.outsider)
		require.NoError(t, err)
		require.Empty(t, list)
		_, err = servicetest.Studies(db, nil).Studies(f.anon)
		requireCode(t, models.EUNAUTHORIZED, err)
	})
}

// TestStore_StudyOwnerName: an owner without a name is named by email to the
// study's managers only; annotators never see another user's email.
func TestStore_StudyOwnerName(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newStudyFixture(t, db)
		st := f.create(t, nil)
		owner := models.ActorFrom(f.member).UserID
		require.NoError(t, db.Gorm().Model(&models.User{}).Where("id = ?", owner).Update("name", "").Error)
		var email string
		require.NoError(t, db.Gorm().Model(&models.User{}).Where("id = ?", owner).Pluck("email", &email).Error)
		require.NotEmpty(t, email)

		for who, tc := range map[string]struct {
			ctx  context.Context
			want string
		}{
			"owner":     {f.member, email},
			"admin":     {f.admin, email},
			"annotator": {f.ann[0], "the study's owner"},
		} {
			view, err := servicetest.Studies(db, nil).StudyOverview(tc.ctx, st.ID)
			require.NoError(t, err)
			require.Equal(t, tc.want, view.OwnerName, "%s: overview", who)
			list, err := servicetest.Studies(db, nil).Studies(tc.ctx)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, tc.want, list[0].OwnerName, "%s: list", who)
		}
	})
}
