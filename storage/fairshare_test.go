package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/service/servicetest"
	"proctor/storage"
	"proctor/storage/storagetest"
)

// TestStore_FairShare: while another team's work waits, a team runs at most
// its share of episodes and of hidden-test jobs at once — by default half of
// the live workers' slots — counted across all its runs; a team alone uses
// every slot.
func TestStore_FairShare(t *testing.T) {
	t.Parallel()
	storagetest.ForEachDriver(t, func(t *testing.T, db *storage.DB) {
		f := newCandidateFixture(t, db)
		require.NoError(t, db.SetRevealReferences(f.system, "mini", true))
		require.NoError(t, servicetest.CreateAgent(db, f.member, "lab", &models.Agent{Name: "Walker", Kind: models.AgentReplay}, nil))
		require.NoError(t, servicetest.CreateAgent(db, f.stranger, "other", &models.Agent{Name: "Runner", Kind: models.AgentReplay}, nil))
		dispatch := func(ctx context.Context, team, agent string) []int64 {
			run, err := servicetest.QueueRun(ctx, db, models.RunRequest{TeamSlug: team, AgentSlug: agent, BenchmarkSlug: "mini", Parallelism: 4})
			require.NoError(t, err)
			require.NoError(t, db.DispatchRun(f.system, run.ID, func(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }))
			return episodes0(t, db, run.ID)
		}
		// Two workers of 2 episode slots each are live: a team's share is 2.
		w1 := models.Claimant{Lease: models.WorkerLease{ID: "w1", Host: "h1", PID: 1, EpisodeSlots: 2, HiddenSlots: 1}, TTL: time.Minute}
		w2 := models.Claimant{Lease: models.WorkerLease{ID: "w2", Host: "h2", PID: 1, EpisodeSlots: 2, HiddenSlots: 1}, TTL: time.Minute}
		require.NoError(t, db.RegisterLease(f.system, w1.Lease))
		require.NoError(t, db.RegisterLease(f.system, w2.Lease))
		claim := func(by models.Claimant, id int64) string {
			status, _, err := db.ClaimAttempt(f.system, id, by)
			require.NoError(t, err)
			return status
		}

		lab := dispatch(f.member, "lab", "walker")
		require.Equal(t, models.ClaimOK, claim(w1, lab[0]))
		require.Equal(t, models.ClaimOK, claim(w1, lab[1]))
		require.Equal(t, models.ClaimOK, claim(w2, lab[2]), "no other team waits: the lab uses every slot")

		other := dispatch(f.stranger, "other", "runner")
		require.Equal(t, models.ClaimWait, claim(w2, lab[3]), "the other team waits: the lab runs 3 of its share of 2")
		require.Equal(t, models.ClaimOK, claim(w2, other[0]))
		otherRun := db.Gorm().Model(&models.Run{}).Where("id = (SELECT run_id FROM attempts WHERE id = ?)", other[0])
		require.NoError(t, otherRun.Update("parallelism", 1).Error)
		require.Equal(t, models.ClaimOK, claim(w2, lab[3]), "the other team's run is at its parallelism: none of it can start, so it does not wait")
		require.NoError(t, db.ReleaseAttempt(f.system, lab[3], 1))
		require.NoError(t, db.Gorm().Model(&models.Run{}).Where("id = (SELECT run_id FROM attempts WHERE id = ?)", other[0]).Update("parallelism", 4).Error)
		require.Equal(t, models.ClaimWait, claim(w2, lab[3]), "room again in the other team's run: it waits")
		require.NoError(t, db.ReleaseAttempt(f.system, lab[0], 1))
		require.NoError(t, db.ReleaseAttempt(f.system, lab[1], 1))
		require.Equal(t, models.ClaimOK, claim(w1, lab[3]), "below its share again, the lab claims")

		// A configured share holds whatever the slots.
		capped := w1
		capped.TeamEpisodes = 3
		require.Equal(t, models.ClaimOK, claim(capped, lab[0]))
		require.Equal(t, models.ClaimWait, claim(capped, lab[1]))

		// Hidden-test jobs have a share of their own: half of 2 slots is 1.
		var hidden [][]int64
		for _, ctx := range []context.Context{f.member, f.stranger} {
			req := goodCandidates()
			if ctx == f.stranger {
				req.TeamSlug, req.AgentSlug = "other", "theirs"
			}
			_, err := submitCandidates(ctx, db, req, func(_ context.Context, _ *sql.Tx, _ *models.Run, ids []int64) error {
				hidden = append(hidden, ids)
				return nil
			})
			require.NoError(t, err)
		}
		start := func(id int64) string {
			_, status, err := db.StartHiddenAttempt(f.system, id, w1)
			require.NoError(t, err)
			return status
		}
		require.Equal(t, models.ClaimOK, start(hidden[0][0]), "the lab's episodes do not count against its hidden-test share")
		require.Equal(t, models.ClaimWait, start(hidden[0][1]), "the other team's hidden tests wait")
		require.Equal(t, models.ClaimOK, start(hidden[1][0]))
		_, _, err := db.StartHiddenAttempt(f.member, hidden[0][1], w1)
		require.Equal(t, models.EFORBIDDEN, models.ErrorCode(err))
	})
}
