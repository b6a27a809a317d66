package service_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// moderationFixture is fixture with a queued run of team lab and the
// moderation service.
type moderationFixture struct {
	*fixture
	mod *service.Moderation
	run *models.Run
}

func newModerationFixture(t *testing.T, db *storage.DB) *moderationFixture {
	t.Helper()
	f := &moderationFixture{fixture: newFixture(t, db), mod: service.NewModeration(db)}
	runs, _ := f.fixture.runs(t, 0)
	run, err := runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
	require.NoError(t, err)
	f.run = run
	return f
}

// complete dispatches the run and marks it completed.
func (f *moderationFixture) complete(t *testing.T) {
	t.Helper()
	require.NoError(t, f.db.DispatchRun(f.system, f.run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
	require.NoError(t, f.db.Gorm().Model(&models.Run{}).Where("id = ?", f.run.ID).Update("status", models.RunCompleted).Error)
}

// moderationEvents lists a run's change log in order.
func moderationEvents(t *testing.T, db *storage.DB, runID int64) []models.LeaderboardEvent {
	t.Helper()
	var out []models.LeaderboardEvent
	require.NoError(t, db.Gorm().Where("run_id = ?", runID).Order("id").Find(&out).Error)
	return out
}

func eventKinds(evs []models.LeaderboardEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func TestModeration_PublishRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newModerationFixture(t, db)
		mod := f.mod

		t.Run("NotCompleted", func(t *testing.T) {
			for _, act := range []func(context.Context, int64) (*models.RunModeration, error){mod.PublishRun, mod.WithdrawRun} {
				_, err := act(f.member, f.run.ID)
				require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
				require.Contains(t, models.ErrorMessage(err), "has not completed (it is queued)")
			}
		})
		f.complete(t)

		t.Run("Permissions", func(t *testing.T) {
			for name, ctx := range map[string]context.Context{"anonymous": f.anon, "outsider": f.other} {
				_, err := mod.PublishRun(ctx, f.run.ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
			}
			_, err := mod.PublishRun(f.member, 999999)
			require.Equal(t, models.ENOTFOUND, models.ErrorCode(err))
			require.Empty(t, moderationEvents(t, db, f.run.ID), "refused actions log nothing")
		})

		m, err := mod.PublishRun(f.member, f.run.ID)
		require.NoError(t, err)
		require.True(t, m.Published)
		require.True(t, m.OnLeaderboard())
		require.True(t, m.CanPublish)
		require.False(t, m.CanModerate)
		evs := moderationEvents(t, db, f.run.ID)
		require.Equal(t, []string{models.EventAdded}, eventKinds(evs))
		require.Equal(t, models.ActorRoleTeam, evs[0].ActorRole)
		require.Equal(t, models.SubsetFull, evs[0].SubsetName)
		require.NotNil(t, evs[0].ActorID)
		require.Equal(t, int64(1), countRows(t, db, "audit_events", "action = ?", "run.published"))

		_, err = mod.PublishRun(f.member, f.run.ID)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "already published")

		t.Run("PublishedRunStillTeamOnly", func(t *testing.T) {
			_, err := mod.WithdrawRun(f.anon, f.run.ID)
			require.Equal(t, models.EUNAUTHORIZED, models.ErrorCode(err))
			_, err = mod.WithdrawRun(f.other, f.run.ID)
			require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
			require.Equal(t, "Only members of this team may do this.", models.ErrorMessage(err))
			m, err := mod.RunModeration(f.other, f.run.ID)
			require.NoError(t, err)
			require.False(t, m.CanPublish)
		})

		m, err = mod.WithdrawRun(f.member, f.run.ID)
		require.NoError(t, err)
		require.False(t, m.Published)
		_, err = mod.WithdrawRun(f.member, f.run.ID)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		require.Contains(t, models.ErrorMessage(err), "not published")
		_, err = mod.RunModeration(f.anon, f.run.ID)
		require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "a withdrawn run is private again")

		// An administrator outside the team publishes in its place: the log
		// says the administrators did.
		_, err = mod.PublishRun(f.admin, f.run.ID)
		require.NoError(t, err)
		evs = moderationEvents(t, db, f.run.ID)
		require.Equal(t, []string{models.EventAdded, models.EventWithdrawn, models.EventAdded}, eventKinds(evs))
		require.Equal(t, models.ActorRoleAdmin, evs[2].ActorRole)

		// The system acts as itself.
		_, err = mod.WithdrawRun(f.system, f.run.ID)
		require.NoError(t, err)
		evs = moderationEvents(t, db, f.run.ID)
		require.Equal(t, models.ActorRoleSystem, evs[3].ActorRole)
	})
}

// TestModeration_IsAtomic: the change and its log line are written in one
// transaction, so a log that cannot be written leaves the run unchanged.
func TestModeration_IsAtomic(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newModerationFixture(t, db)
		f.complete(t)
		require.NoError(t, db.Gorm().Exec("DROP TABLE leaderboard_events").Error)

		_, err := f.mod.PublishRun(f.member, f.run.ID)
		require.Error(t, err)
		var run models.Run
		require.NoError(t, db.Gorm().First(&run, f.run.ID).Error)
		require.False(t, run.Published, "the run is not published without its log line")
		require.Zero(t, countRows(t, db, "audit_events", "action = ?", "run.published"))
	})
}

// TestModeration_LeaderboardChangesPages: page bounds are checked before the
// log is read.
func TestModeration_LeaderboardChangesPages(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		mod := service.NewModeration(db)
		for _, f := range []models.ChangeFilter{{Page: 0, PerPage: 10}, {Page: 1, PerPage: 0}} {
			_, err := mod.LeaderboardChanges(context.Background(), "unknown", f)
			require.Equal(t, models.EINVALID, models.ErrorCode(err))
		}
	})
}

func TestModeration_ModerateRun(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newModerationFixture(t, db)
		mod := f.mod
		f.complete(t)

		t.Run("AdminsOnly", func(t *testing.T) {
			for name, act := range map[string]func(context.Context, int64) (*models.RunModeration, error){
				"verify":    mod.VerifyRun,
				"unhide":    mod.UnhideRun,
				"reproduce": mod.MarkRunReproduced,
				"hide": func(ctx context.Context, id int64) (*models.RunModeration, error) {
					return mod.HideRun(ctx, id, "reason")
				},
			} {
				_, err := act(f.member, f.run.ID)
				require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err), name)
				_, err = act(f.other, f.run.ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), "%s: a private run does not exist for outsiders", name)
				_, err = act(f.anon, f.run.ID)
				require.Equal(t, models.ENOTFOUND, models.ErrorCode(err), name)
			}
		})

		t.Run("PrivateRunChangesAreNotLogged", func(t *testing.T) {
			m, err := mod.VerifyRun(f.admin, f.run.ID)
			require.NoError(t, err)
			require.True(t, m.Verified)
			require.True(t, m.CanModerate)
			require.Empty(t, moderationEvents(t, db, f.run.ID), "the log is public: a private run stays out of it")
			_, err = mod.VerifyRun(f.admin, f.run.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		})

		_, err := mod.PublishRun(f.member, f.run.ID)
		require.NoError(t, err)

		t.Run("HideReason", func(t *testing.T) {
			for _, reason := range []string{"", "   ", strings.Repeat("é", models.MaxHideReasonLength+1)} {
				_, err := mod.HideRun(f.admin, f.run.ID, reason)
				require.Equal(t, models.EINVALID, models.ErrorCode(err))
				require.Equal(t, "reason", models.ErrorField(err))
			}
		})

		m, err := mod.HideRun(f.admin, f.run.ID, "  The agent read the answers from a leaked file.  ")
		require.NoError(t, err)
		require.True(t, m.Hidden())
		require.False(t, m.OnLeaderboard())
		require.Equal(t, "The agent read the answers from a leaked file.", m.HiddenReason)
		_, err = mod.HideRun(f.admin, f.run.ID, "again")
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))

		// A hidden run the team withdraws and publishes again stays off the
		// boards: no "added" until the administrators show it again.
		_, err = mod.WithdrawRun(f.member, f.run.ID)
		require.NoError(t, err)
		m, err = mod.PublishRun(f.member, f.run.ID)
		require.NoError(t, err)
		require.False(t, m.OnLeaderboard())

		m, err = mod.UnhideRun(f.admin, f.run.ID)
		require.NoError(t, err)
		require.False(t, m.Hidden())
		require.Empty(t, m.HiddenReason)
		require.True(t, m.OnLeaderboard())
		_, err = mod.UnhideRun(f.admin, f.run.ID)
		require.Equal(t, models.ECONFLICT, models.ErrorCode(err))

		t.Run("Reproduced", func(t *testing.T) {
			_, err := mod.MarkRunReproduced(f.admin, f.run.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
			require.Contains(t, models.ErrorMessage(err), "executed by Proctor")
			require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = ?", f.run.ID).Update("origin", models.OriginUploaded).Error)
			_, err = mod.VerifyRun(f.admin, f.run.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err), "an uploaded run is never verified before it is reproduced")
			require.Equal(t, fmt.Sprintf("Run %d was uploaded: reproduce it before verifying.", f.run.ID), models.ErrorMessage(err))
			m, err := mod.MarkRunReproduced(f.admin, f.run.ID)
			require.NoError(t, err)
			require.Equal(t, models.OriginReproduced, m.Origin)
			_, err = mod.MarkRunReproduced(f.admin, f.run.ID)
			require.Equal(t, models.ECONFLICT, models.ErrorCode(err))
		})

		evs := moderationEvents(t, db, f.run.ID)
		require.Equal(t, []string{models.EventAdded, models.EventHidden, models.EventWithdrawn, models.EventUnhidden, models.EventReproduced}, eventKinds(evs))
		require.Equal(t, "The agent read the answers from a leaked file.", evs[1].Reason)
		require.Equal(t, models.ActorRoleAdmin, evs[1].ActorRole)
		require.Equal(t, int64(1), countRows(t, db, "audit_events", "action = ? AND details = ?", "run.hidden", "The agent read the answers from a leaked file."))

		t.Run("NotCompleted", func(t *testing.T) {
			runs, _ := f.fixture.runs(t, 0)
			queued, err := runs.QueueRun(f.member, models.RunRequest{TeamSlug: "lab", AgentSlug: "walker", BenchmarkSlug: "mini"})
			require.NoError(t, err)
			for name, act := range map[string]func(context.Context, int64) (*models.RunModeration, error){"verify": mod.VerifyRun, "reproduce": mod.MarkRunReproduced} {
				_, err := act(f.admin, queued.ID)
				require.Equal(t, models.ECONFLICT, models.ErrorCode(err), name)
				require.Contains(t, models.ErrorMessage(err), "has not completed", name)
			}
		})
	})
}
