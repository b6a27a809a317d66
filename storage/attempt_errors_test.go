package storage_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_PlatformErrorsHideServerPaths shows a platform error recorded
// with its server paths replaced wherever teams and the public read it (the
// run's attempt list, the timeline), and in full on the
// timeline for administrators only; a restarted try clears both.
func TestStore_PlatformErrorsHideServerPaths(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newReadFixture(t, db)
		ids := f.dispatch(t, f.run.ID)
		full := "save screenshot: open /var/lib/proctor/data/artifacts/runs/7/a/step-1.png: no space left on device" +
			" (spooled in data/tmp/proctor-episode-123/har.json, page http://shop.test/products/42 kept)"
		public := "save screenshot: open [server path]: no space left on device" +
			" (spooled in [server path], page http://shop.test/products/42 kept)"
		f.finish(t, ids[0], models.EpisodeOutcome{Steps: 1, ErrorClass: models.ErrorClassPlatform, ErrorMessage: full},
			&models.Evaluation{Evaluator: "check", Verdict: models.OutcomeError})
		f.publish(t, f.run.ID, true)

		for name, ctx := range map[string]context.Context{"member": f.member, "outsider": f.outsider, "anonymous": f.anon} {
			tl, err := db.AttemptTimeline(ctx, runScope(ctx), ids[0])
			require.NoError(t, err, name)
			require.Equal(t, public, tl.Attempt.ErrorMessage, name)
			require.Empty(t, tl.ErrorDetail, name)
			items, _, err := servicetest.Runs(db, 0).RunAttempts(ctx, f.run.ID, 1, 10)
			require.NoError(t, err, name)
			for _, it := range items {
				require.NotContains(t, it.ErrorMessage, "/var/lib", name)
			}
		}
		tl, err := db.AttemptTimeline(f.admin, runScope(f.admin), ids[0])
		require.NoError(t, err)
		require.Equal(t, public, tl.Attempt.ErrorMessage)
		require.Equal(t, full, tl.ErrorDetail, "administrators see the error in full")

		// No read of an attempt row carries the full text, whoever reads it.
		var a models.Attempt
		require.NoError(t, db.Gorm().First(&a, ids[0]).Error)
		require.Empty(t, a.ErrorDetail)

		// Retrying the errored attempt clears both texts.
		n, err := db.ResetErroredAttempts(f.member, runScope(f.member), f.run.ID, refuseOutsiders, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil })
		require.NoError(t, err)
		require.Equal(t, 1, n)
		var texts []struct{ ErrorMessage, ErrorDetail string }
		require.NoError(t, db.Gorm().Table("attempts").Select("error_message, error_detail").Where("id = ?", ids[0]).Scan(&texts).Error)
		require.Equal(t, []struct{ ErrorMessage, ErrorDetail string }{{"", ""}}, texts)
	})
}
