package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestCandidates_Authorization drives every read and write of the candidate
// service as an anonymous visitor, a member of team lab, a member of another
// team, an administrator and a blind annotator (a user of no team who
// annotates the candidate run's first attempt in an open blind study), on
// the lab's unpublished candidate run and, once it is published, again. A
// code is the error the caller gets ("" for none); check, when set, looks at
// what an allowed caller was shown: the candidates' restart and health
// hooks only to the run's team and administrators.
func TestCandidates_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCandidateFixture(t, db)
		candidates := f.candidates(0)
		run, err := f.submit(f.member, goodCandidates(), 0)
		require.NoError(t, err)
		var attempt int64
		require.NoError(t, db.Gorm().Model(&models.Attempt{}).Where("run_id = ?", run.ID).Order("id").Limit(1).Pluck("id", &attempt).Error)
		annotatorUser := agentTestUser(t, db, "annotator@candidates.test", false)
		annotator := actorCtx(annotatorUser)
		var adminID int64
		require.NoError(t, db.Gorm().Model(&models.User{}).Where("email = ?", "admin@agents.test").Pluck("id", &adminID).Error)
		now := time.Now().UTC()
		study := &models.Study{OwnerID: adminID, Name: "Blind", Status: models.StudyOpen, Blind: true,
			Sampling: models.SampleRandom, SampleSize: 1, ItemCount: 1, OverlapAnnotators: 1,
			CreatedAt: now, UpdatedAt: now, OpenedAt: &now}
		require.NoError(t, db.Gorm().Create(study).Error)
		item := &models.StudyItem{StudyID: study.ID, AttemptID: attempt, Position: 1}
		require.NoError(t, db.Gorm().Create(item).Error)
		require.NoError(t, db.Gorm().Create(&models.StudyAssignment{StudyID: study.ID, StudyItemID: item.ID, UserID: annotatorUser.ID,
			Position: 1, Status: models.AssignmentPending, CreatedAt: now, UpdatedAt: now}).Error)

		ok := outcome{}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		forbidden := outcome{code: models.EFORBIDDEN}
		notFound := outcome{code: models.ENOTFOUND}
		hooksShown := func(want bool) outcome {
			return outcome{check: func(t *testing.T, got any) {
				var list []models.HiddenCandidate
				switch v := got.(type) {
				case []models.HiddenCandidate:
					list = v
				case *models.HiddenCandidate:
					list = []models.HiddenCandidate{*v}
				}
				require.NotEmpty(t, list)
				hooks := false
				for _, c := range list {
					require.NotEmpty(t, c.BaseURL)
					hooks = hooks || c.RestartURL != "" || c.HealthURL != ""
				}
				require.Equal(t, want, hooks, "restart and health hooks shown")
			}}
		}
		ops := []authzOp{
			{"CandidateTasks", func(ctx context.Context) (any, error) { return candidates.CandidateTasks(ctx, "rebuilds", "pair") },
				callerOutcomes{unauthorized, ok, ok, ok, ok}},
			{"SubmitCandidates", func(ctx context.Context) (any, error) { return candidates.SubmitCandidates(ctx, goodCandidates()) },
				callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}},
			{"HiddenCandidates (unpublished)", func(ctx context.Context) (any, error) { return candidates.HiddenCandidates(ctx, run.ID) },
				callerOutcomes{notFound, hooksShown(true), notFound, hooksShown(true), notFound}},
			{"HiddenCandidate (unpublished)", func(ctx context.Context) (any, error) { return candidates.HiddenCandidate(ctx, attempt) },
				callerOutcomes{notFound, hooksShown(true), notFound, hooksShown(true), notFound}},
			{"publish", func(ctx context.Context) (any, error) {
				return nil, db.Gorm().Model(&models.Run{}).Where("id = ?", run.ID).Update("published", true).Error
			}, callerOutcomes{ok, ok, ok, ok, ok}},
			{"HiddenCandidates (published)", func(ctx context.Context) (any, error) { return candidates.HiddenCandidates(ctx, run.ID) },
				callerOutcomes{hooksShown(false), hooksShown(true), hooksShown(false), hooksShown(true), hooksShown(false)}},
			{"HiddenCandidate (published)", func(ctx context.Context) (any, error) { return candidates.HiddenCandidate(ctx, attempt) },
				callerOutcomes{hooksShown(false), hooksShown(true), hooksShown(false), hooksShown(true), hooksShown(false)}},
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.stranger, admin: f.admin, blind: annotator}, nil)
	})
}
