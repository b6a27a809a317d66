package runner

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"proctor/models"
)

// DefaultLeaseTTL is how long a worker process's lease lasts unrenewed
// before its episodes are taken over by the others: with a renewal every
// sixth of it, a dead process's work is released within about a minute.
const DefaultLeaseTTL = 45 * time.Second

// newLease names this process's lease, which is also its River client's id:
// host name, process id and a random suffix (a restarted process with the
// same pid gets a new lease). Its Host is where process ids mean the same
// (processSpace): only there is a process found dead by its id.
func newLease() (models.WorkerLease, error) {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "unknown-host"
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return models.WorkerLease{}, fmt.Errorf("lease id: %w", err)
	}
	pid := os.Getpid()
	suffix := fmt.Sprintf("-%d-%s", pid, hex.EncodeToString(b))
	if len(name)+len(suffix) > 100 { // River's limit for a client id
		name = name[:100-len(suffix)]
	}
	return models.WorkerLease{ID: name + suffix, Host: processSpace(name), PID: pid}, nil
}

// processSpace names the space process ids are counted in: the host name,
// the machine's boot and the process-id namespace. Two containers with the
// same host name (host networking, a name set by hand) count their process
// ids apart, so neither may judge the other's process dead by its id; they
// wait for its lease to lapse. Without /proc it is the host name alone.
func processSpace(hostname string) string {
	space := hostname
	if boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		space += " boot:" + strings.TrimSpace(string(boot))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		space += " " + ns
	}
	return space
}

// claimant is this process claiming attempts.
func (q *Queue) claimant() models.Claimant {
	return models.Claimant{Lease: q.lease, TTL: q.opts.LeaseTTL, TeamEpisodes: q.opts.TeamEpisodes, TeamHiddenJobs: q.opts.TeamHiddenJobs}
}

// keepLease renews this process's lease every sixth of its period and,
// after each renewal, has the work of dead processes released (on a
// goroutine of its own: a release waiting on a frozen process's locks never
// holds up this process's own renewals). A process judges another's lease
// lapsed only once its own renewals have succeeded for a whole period:
// after an outage of the database (PostgreSQL restarted), every process
// renews before any is judged.
func (q *Queue) keepLease(ctx context.Context) {
	every := max(q.opts.LeaseTTL/6, 200*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	judge := make(chan bool, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		q.releaseOnRenewal(ctx, judge)
	}()
	defer wg.Wait()
	var healthySince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		renewed, err := q.db.RenewLease(ctx, q.lease.ID)
		if err == nil && !renewed {
			// Another process found this one lapsed (cut off from the
			// database for a whole period) and handed its work back: register
			// again; the superseded tries stop at their next step.
			q.log.Warn("this worker's lease was released by another process; registering again", "lease", q.lease.ID)
			err = q.db.RegisterLease(ctx, q.lease)
		}
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("renewing this worker's lease failed", "lease", q.lease.ID, "error", err.Error())
			}
			healthySince = time.Time{}
			continue
		}
		if healthySince.IsZero() {
			healthySince = time.Now()
		}
		select {
		case judge <- time.Since(healthySince) >= q.opts.LeaseTTL:
		default: // the previous release is still at work
		}
	}
}

// releaseOnRenewal releases the work of dead processes, and the work this
// one lost track of, each time a renewal says so (judging lapses or not).
func (q *Queue) releaseOnRenewal(ctx context.Context, judge <-chan bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case judgeLapses := <-judge:
			if err := q.releaseDead(ctx, judgeLapses); err != nil && ctx.Err() == nil {
				q.log.Warn("releasing the work of dead workers failed", "error", err.Error())
			}
			if err := q.releaseLost(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("releasing the work this process lost failed", "error", err.Error())
			}
		}
	}
}

// releaseDead releases the work of every process found dead: on this host,
// one whose process is gone (a restarted server or worker releases its
// predecessor's claims at once); anywhere, with judgeLapses, one whose lease
// was not renewed for a whole period; and holders of running attempts that
// have no lease at all.
func (q *Queue) releaseDead(ctx context.Context, judgeLapses bool) error {
	ctx = models.WithActor(ctx, models.SystemActor())
	leases, err := q.db.Leases(ctx)
	if err != nil {
		return err
	}
	lapsedBefore := time.Now().UTC().Add(-q.opts.LeaseTTL)
	var dead []models.DeadWorker
	known := map[string]bool{}
	for _, l := range leases {
		known[l.ID] = true
		switch {
		case l.ID == q.lease.ID:
		case goneFromThisHost(q.lease, l):
			dead = append(dead, models.DeadWorker{ID: l.ID, Why: "its process is gone from this host"})
		case judgeLapses && l.HeartbeatAt.Before(lapsedBefore):
			dead = append(dead, models.DeadWorker{ID: l.ID, LapsedBefore: &lapsedBefore,
				Why: fmt.Sprintf("its lease was last renewed %s ago", time.Since(l.HeartbeatAt).Round(time.Second))})
		}
	}
	orphans, err := q.db.OrphanHolders(ctx)
	if err != nil {
		return err
	}
	for _, id := range orphans {
		if !known[id] && id != q.lease.ID {
			dead = append(dead, models.DeadWorker{ID: id, Orphan: true, Why: "it holds no lease"})
		}
	}
	var errs []error
	for _, d := range dead {
		attempts, ok, err := q.db.ReleaseWorker(ctx, d, q.reofferJobsOf(d.ID, nil))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			q.log.Warn("released the work of a dead worker", "worker", d.ID, "why", d.Why, "attempts", attempts)
		}
	}
	return errors.Join(errs...)
}

// goneFromThisHost reports whether the process holding lease l ran on this
// process's host (self's) and is gone: no process has its id, or this very
// process has it (a restarted container's first process) and l was last
// renewed before this process began.
func goneFromThisHost(self, l models.WorkerLease) bool {
	if l.Host != self.Host || l.ID == self.ID {
		return false
	}
	if l.PID == self.PID {
		return startedAfter(l.HeartbeatAt)
	}
	return !processAlive(l.PID)
}

// startedAfter reports whether this process began after t (false when its
// start time cannot be read).
func startedAfter(t time.Time) bool {
	start, ok := processStart()
	return ok && t.Before(start)
}

// processStart reads when this process began from /proc (Linux): field 22
// of /proc/self/stat counts clock ticks from boot, and /proc/stat's btime
// is the boot time.
func processStart() (time.Time, bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command name (field 2) may hold spaces: count from its closing ")".
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	if end < 0 || len(fields) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	boot, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(boot), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			const clockTicks = 100 // USER_HZ on every Linux architecture Proctor runs on
			return time.Unix(btime, 0).Add(time.Duration(ticks) * time.Second / clockTicks), true
		}
	}
	return time.Time{}, false
}

// processAlive reports whether a process with this id runs on this host.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// reofferJobsOf offers again, inside a release's transaction, the jobs a
// worker was running that pick selects (every one when pick is nil): each
// is marked canceled (River finalises it when it rescues it, and never runs
// it again) and an identical job is inserted, which the next free worker
// takes at once. Every job is safe to run again: each checks its
// attempt's or item's state first.
func (q *Queue) reofferJobsOf(workerID string, pick func(*rivertype.JobRow) bool) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		res, err := q.inserter.JobListTx(ctx, tx, river.NewJobListParams().States(rivertype.JobStateRunning).First(10_000))
		if err != nil {
			return fmt.Errorf("list running jobs: %w", err)
		}
		var again []river.InsertManyParams
		for _, job := range res.Jobs {
			if len(job.AttemptedBy) == 0 || job.AttemptedBy[len(job.AttemptedBy)-1] != workerID || cancelAttempted(job) ||
				(pick != nil && !pick(job)) {
				continue
			}
			if _, err := q.inserter.JobCancelTx(ctx, tx, job.ID); err != nil {
				return fmt.Errorf("cancel job %d: %w", job.ID, err)
			}
			again = append(again, river.InsertManyParams{
				Args: reofferedJob{kind: job.Kind, args: job.EncodedArgs},
				InsertOpts: &river.InsertOpts{Queue: job.Queue, Priority: job.Priority, MaxAttempts: job.MaxAttempts,
					Tags: slices.Clone(job.Tags)},
			})
		}
		if len(again) == 0 {
			return nil
		}
		_, err = q.inserter.InsertManyTx(ctx, tx, again)
		return err
	}
}

// inFlight is what this process is running now: River jobs (recorded by a
// middleware around every job) and the attempts their tries hold.
type inFlight struct {
	mu       sync.Mutex
	jobs     map[int64]int
	attempts map[int64]int
}

func newInFlight() *inFlight {
	return &inFlight{jobs: map[int64]int{}, attempts: map[int64]int{}}
}

// enter counts id in set until the returned function is called.
func (f *inFlight) enter(set map[int64]int, id int64) func() {
	f.mu.Lock()
	set[id]++
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if set[id]--; set[id] <= 0 {
			delete(set, id)
		}
		f.mu.Unlock()
	}
}

// holdAttempt records that this process runs a try of the attempt until
// the returned function is called.
func (q *Queue) holdAttempt(attemptID int64) func() {
	return q.inflight.enter(q.inflight.attempts, attemptID)
}

// trackJob is River middleware recording every job this process runs.
func (q *Queue) trackJob(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	defer q.inflight.enter(q.inflight.jobs, job.ID)()
	return doInner(ctx)
}

// running reports whether this process runs the job or holds the attempt.
func (f *inFlight) running(set map[int64]int, id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return set[id] > 0
}

// releaseLost hands back what this live process holds but no longer runs:
// a job whose end River could not record while the database was down stays
// "running" in the queue, and its attempt held, although nothing runs it.
// Only what started more than half a lease period ago is judged, so a job
// just fetched or an attempt just claimed is never taken for lost.
func (q *Queue) releaseLost(ctx context.Context) error {
	ctx = models.WithActor(ctx, models.SystemActor())
	before := time.Now().UTC().Add(-max(q.opts.LeaseTTL/2, time.Second))
	held, err := q.db.HeldAttempts(ctx, q.lease.ID, before)
	if err != nil {
		return err
	}
	var lostAttempts []int64
	for _, id := range held {
		if !q.inflight.running(q.inflight.attempts, id) {
			lostAttempts = append(lostAttempts, id)
		}
	}
	var lostJobs []int64
	pick := func(job *rivertype.JobRow) bool {
		lost := job.AttemptedAt != nil && job.AttemptedAt.Before(before) && !q.inflight.running(q.inflight.jobs, job.ID)
		if lost {
			lostJobs = append(lostJobs, job.ID)
		}
		return lost
	}
	released, err := q.db.ReleaseLost(ctx, q.lease.ID, lostAttempts, q.reofferJobsOf(q.lease.ID, pick))
	if err != nil {
		return err
	}
	if len(released) > 0 || len(lostJobs) > 0 {
		q.log.Warn("released work this process no longer runs", "attempts", released, "jobs", lostJobs)
	}
	return nil
}

// cancelAttempted reports whether a job was already marked canceled.
func cancelAttempted(job *rivertype.JobRow) bool {
	var meta struct {
		CancelAttemptedAt *time.Time `json:"cancel_attempted_at"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	return meta.CancelAttemptedAt != nil
}

// reofferedJob is a job inserted again with its kind and encoded arguments
// as they were.
type reofferedJob struct {
	kind string
	args []byte
}

func (j reofferedJob) Kind() string                 { return j.kind }
func (j reofferedJob) MarshalJSON() ([]byte, error) { return j.args, nil }
