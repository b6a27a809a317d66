package runner

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// TestProcessSpace: a lease's host names the host, its boot and its
// process-id namespace, so a container sharing the host name (host
// networking) but not the process ids is never judged dead by its id.
func TestProcessSpace(t *testing.T) {
	t.Parallel()
	space := processSpace("worker-node")
	require.True(t, strings.HasPrefix(space, "worker-node boot:"), space)
	ns, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(space, " "+ns), space)
	lease, err := newLease()
	require.NoError(t, err)
	require.Equal(t, processSpace(strings.TrimSuffix(lease.ID, fmt.Sprintf("-%d-%s", lease.PID, lease.ID[len(lease.ID)-8:]))), lease.Host)

	self := models.WorkerLease{ID: "a", Host: space, PID: os.Getpid()}
	otherNamespace := models.WorkerLease{ID: "b", Host: "worker-node boot:x pid:[1]", PID: 999_999_999}
	require.False(t, goneFromThisHost(self, otherNamespace), "same host name, other process ids: left to its lease")
}
