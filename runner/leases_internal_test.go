package runner

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"proctor/models"
)

// TestGoneFromThisHost: a lease of this host names a dead process when no
// process has its id, or when it has this process's id (a restarted
// container's first process) and was last renewed before this process
// began; a live process, another host's lease or one renewed since this
// process began is not judged here (its lease must lapse).
func TestGoneFromThisHost(t *testing.T) {
	t.Parallel()
	self := models.WorkerLease{ID: "h-1-self", Host: "h", PID: os.Getpid()}

	child := exec.Command("sleep", "30")
	require.NoError(t, child.Start())
	alive := models.WorkerLease{ID: "h-live", Host: "h", PID: child.Process.Pid, HeartbeatAt: time.Now()}
	require.False(t, goneFromThisHost(self, alive), "a live process")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.True(t, goneFromThisHost(self, alive), "the same process once killed and reaped")

	elsewhere := alive
	elsewhere.Host = "other"
	require.False(t, goneFromThisHost(self, elsewhere), "another host's process cannot be seen from here")

	start, ok := processStart()
	require.True(t, ok, "/proc tells when this process began")
	require.WithinDuration(t, time.Now(), start, 10*time.Minute)
	predecessor := models.WorkerLease{ID: "h-1-before", Host: "h", PID: self.PID, HeartbeatAt: start.Add(-time.Minute)}
	require.True(t, goneFromThisHost(self, predecessor), "this process id, renewed before this process began")
	sibling := predecessor
	sibling.HeartbeatAt = time.Now()
	require.False(t, goneFromThisHost(self, sibling), "this process id, renewed since: another queue of this process")
	require.False(t, goneFromThisHost(self, self), "this process's own lease")
}
