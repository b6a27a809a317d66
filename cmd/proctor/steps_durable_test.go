package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
	"proctor/storage"
)

// TestFault_WorkerKilledKeepsCommittedSteps: a step's artifacts and row are
// stored beside the agent's next step, so a worker killed with SIGKILL at
// any moment of an episode must leave every committed step row with its
// screenshot, thumbnail and accessibility text stored, the rows numbered
// without gaps, and at most one step (the one in flight) with artifacts but
// no row. The worker is killed in a few rounds, each at whatever moment
// the episode is at, and a fresh worker takes the run over after each.
func TestFault_WorkerKilledKeepsCommittedSteps(t *testing.T) {
	t.Parallel()
	for name, env := range faultEnvs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rig := newFaultRig(t, env(t))
			runID := rig.queueRun(t, faultSubset, 2)
			for round := range 3 {
				worker := rig.env.start(t, "worker --browsers 2")
				if !rig.waitStepOf(t, runID, worker) {
					break // the run finished before this round's worker got under way
				}
				held := rig.heldTries(t, runID, worker)
				worker.kill9(t)
				for id, try := range held {
					rig.checkCommittedSteps(t, runID, id, try, round)
				}
			}
			rig.env.start(t, "worker --browsers 2")
			rig.waitFinished(t, runID, 4*time.Minute)
			require.Zero(t, rig.checkIntegrity(t, runID), "no attempt ends in a platform error")
		})
	}
}

// waitStepOf waits until an episode the process runs has a step committed,
// and reports false if the run finished first.
func (r *faultRig) waitStepOf(t testing.TB, runID int64, p *proctorProcess) bool {
	t.Helper()
	under := false
	require.Eventually(t, func() bool {
		var run models.Run
		require.NoError(t, r.app.DB.Gorm().First(&run, runID).Error)
		if run.Finished() {
			return true
		}
		for id := range r.heldTries(t, runID, p) {
			var n int64
			require.NoError(t, r.app.DB.Gorm().Model(&models.Step{}).Where("attempt_id = ?", id).Count(&n).Error)
			if n > 0 {
				under = true
				return true
			}
		}
		return false
	}, 3*time.Minute, 20*time.Millisecond, "no episode of the process got under way")
	return under
}

// heldTries returns the attempts a process runs with their current tries.
func (r *faultRig) heldTries(t testing.TB, runID int64, p *proctorProcess) map[int64]int {
	t.Helper()
	var rows []attemptState
	require.NoError(t, r.app.DB.Gorm().Model(&models.Attempt{}).
		Where("run_id = ? AND status = ? AND worker_id LIKE ?", runID, models.AttemptRunning, fmt.Sprintf("%%-%d-%%", p.cmd.Process.Pid)).
		Select("id, status, tries").Scan(&rows).Error)
	out := map[int64]int{}
	for _, a := range rows {
		out[a.ID] = a.Tries
	}
	return out
}

// checkCommittedSteps checks one try of an attempt whose worker was killed:
// its rows are 0…k-1, each with its three artifacts under the try, and no
// step after k has any artifact stored (step k, in flight, may have some).
func (r *faultRig) checkCommittedSteps(t testing.TB, runID, attemptID int64, try, round int) {
	t.Helper()
	ctx := context.Background()
	prefix := storage.TryPrefix(runID, attemptID, try) + "/"
	var steps []models.Step
	require.NoError(t, r.app.DB.Gorm().Where("attempt_id = ?", attemptID).Order("step_index").Find(&steps).Error)
	for i, s := range steps {
		require.Equal(t, i, s.Index, "round %d, attempt %d: rows numbered without gaps", round, attemptID)
		for what, key := range map[string]string{"screenshot": s.ScreenshotKey, "thumbnail": s.ThumbnailKey, "accessibility text": s.AXTreeKey} {
			require.True(t, strings.HasPrefix(key, prefix), "round %d, attempt %d: step %d's %s %s is under try %d", round, attemptID, i, what, key, try)
			_, err := r.app.Artifacts.Stat(ctx, key)
			require.NoError(t, err, "round %d, attempt %d: committed step %d's %s %s is stored", round, attemptID, i, what, key)
		}
	}
	stored, err := r.app.Artifacts.List(ctx, prefix+"steps/")
	require.NoError(t, err)
	last := -1
	for _, a := range stored {
		name := strings.TrimPrefix(a.Key, prefix+"steps/")
		n, err := strconv.Atoi(name[:min(3, len(name))])
		require.NoError(t, err, "artifact %s", a.Key)
		last = max(last, n)
	}
	require.LessOrEqual(t, last, len(steps), "round %d, attempt %d: %d rows committed, artifacts up to step %d: at most the step in flight is lost", round, attemptID, len(steps), last)
	t.Logf("round %d, attempt %d try %d: %d steps committed, artifacts up to step %d", round, attemptID, try, len(steps), last)
}
