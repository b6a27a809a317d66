package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestModeration_Authorization drives every read and write of the moderation
// service as an anonymous visitor, a member of the run's team, a member of
// another team, an administrator and a blind annotator (a user of no team,
// to whom moderation shows no results). Before each call the run is put in
// the state the action needs, so an allowed caller succeeds; a code is the
// error the caller gets ("" for none).
func TestModeration_Authorization(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newAuthzFixture(t, db)
		mod := service.NewModeration(db)
		// Run a is published; run b is made private. Both are completed.
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id IN ?", []int64{f.a.ID, f.b.ID}).
			Update("status", models.RunCompleted).Error)
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.b.ID).Update("published", false).Error)
		set := func(runID int64, cols map[string]any) {
			t.Helper()
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", runID).Updates(cols).Error)
		}

		ok := outcome{}
		notFound := outcome{code: models.ENOTFOUND}
		forbidden := outcome{code: models.EFORBIDDEN}
		unauthorized := outcome{code: models.EUNAUTHORIZED}
		may := func(publish, moderate bool) outcome {
			return outcome{check: func(t *testing.T, got any) {
				m := got.(*models.RunModeration)
				require.Equal(t, publish, m.CanPublish, "CanPublish")
				require.Equal(t, moderate, m.CanModerate, "CanModerate")
			}}
		}
		teamOnly := callerOutcomes{unauthorized, ok, forbidden, ok, forbidden}
		adminsOnly := callerOutcomes{unauthorized, forbidden, forbidden, ok, forbidden}
		private := callerOutcomes{notFound, ok, notFound, ok, notFound}
		ops := []authzOp{
			{"RunModeration", func(ctx context.Context) (any, error) { return mod.RunModeration(ctx, f.a.ID) },
				callerOutcomes{may(false, false), may(true, false), may(false, false), may(true, true), may(false, false)}},
			{"RunModeration of a private run", func(ctx context.Context) (any, error) { return mod.RunModeration(ctx, f.b.ID) }, private},
			{"LeaderboardChanges", func(ctx context.Context) (any, error) {
				return mod.LeaderboardChanges(ctx, "mini", models.ChangeFilter{Page: 1, PerPage: 10})
			}, callerOutcomes{ok, ok, ok, ok, ok}},
			{"PublishRun", func(ctx context.Context) (any, error) {
				set(f.b.ID, map[string]any{"published": false})
				return mod.PublishRun(ctx, f.b.ID)
			}, private},
			{"WithdrawRun", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true})
				return mod.WithdrawRun(ctx, f.a.ID)
			}, teamOnly},
			{"VerifyRun", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true, "verified": false})
				return mod.VerifyRun(ctx, f.a.ID)
			}, adminsOnly},
			{"VerifyRun of a private run", func(ctx context.Context) (any, error) {
				set(f.b.ID, map[string]any{"published": false, "verified": false})
				return mod.VerifyRun(ctx, f.b.ID)
			}, callerOutcomes{notFound, forbidden, notFound, ok, notFound}},
			{"HideRun", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true, "hidden_at": nil, "hidden_reason": ""})
				return mod.HideRun(ctx, f.a.ID, "Leaked answers.")
			}, adminsOnly},
			{"HideRun without a reason", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true, "hidden_at": nil, "hidden_reason": ""})
				return mod.HideRun(ctx, f.a.ID, "")
			}, callerOutcomes{unauthorized, forbidden, forbidden, outcome{code: models.EINVALID}, forbidden}},
			{"UnhideRun", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true, "hidden_at": time.Now().UTC(), "hidden_reason": "Leaked answers."})
				return mod.UnhideRun(ctx, f.a.ID)
			}, adminsOnly},
			{"MarkRunReproduced", func(ctx context.Context) (any, error) {
				set(f.a.ID, map[string]any{"published": true, "origin": models.OriginUploaded})
				return mod.MarkRunReproduced(ctx, f.a.ID)
			}, adminsOnly},
		}
		checkAuthzTable(t, ops, tableCallers{anon: f.anon, member: f.member, other: f.other, admin: f.admin, blind: f.annotator}, nil)

		// Who acted is logged: the team for its member, the administrators
		// for an admin outside the team.
		var roles []string
		require.NoError(t, db.Gorm().Model(&models.LeaderboardEvent{}).Where("run_id = ? AND kind = ?", f.a.ID, models.EventWithdrawn).
			Order("id").Pluck("actor_role", &roles).Error)
		require.Equal(t, []string{models.ActorRoleTeam, models.ActorRoleAdmin}, roles)
	})
}
