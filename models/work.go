package models

import (
	"errors"
	"time"
)

// The records the queue's workers hand to storage: what an episode, an
// evaluation or a hidden-tests job found, and who claims an attempt.

// Claim results.
const (
	ClaimOK       = "ok"       // the attempt is ours to run
	ClaimWait     = "wait"     // the run's parallelism, a site's cap or the team's share is full: offered again when room frees
	ClaimHeld     = "held"     // another live worker runs the attempt: try again soon
	ClaimFinished = "finished" // the attempt or run no longer needs an episode
)

// ErrTrySuperseded is returned to a try whose attempt has moved on: it was
// released (its worker presumed dead) and restarted, or it ended.
var ErrTrySuperseded = errors.New("this try of the attempt was superseded: its worker was presumed dead and the attempt restarted")

// EpisodeOutcome is what a finished episode reports.
type EpisodeOutcome struct {
	Steps        int
	TokensIn     int64
	TokensOut    int64
	Cost         float64
	ErrorClass   string
	ErrorMessage string
	FinalAnswer  string // JSON of the final action
	HARKey       string
	PageStateKey string // artifact key of the live-page state read at the end, if any
	Duration     time.Duration
}

// EvaluationBatch is what one evaluation job decided about one attempt: the
// verdict of the benchmark's primary evaluator and the others kept beside it
// (an LLM trajectory judge on a WebArena-Verified task, say).
type EvaluationBatch struct {
	// Primary sets the attempt's outcome and score. Nil means the attempt could
	// not be graded by its primary evaluator (a rubric benchmark with no judge
	// configured): the attempt is "not judged" and keeps no outcome.
	Primary *Evaluation
	Others  []*Evaluation
	// RescoreID names the re-scoring request the batch belongs to ("" for
	// the first evaluation): it is recorded only once per request (a
	// redelivered job finds its rows and stops), and the run is marked rescored.
	RescoreID string
}

// Evaluations lists the batch's evaluations, primary first.
func (b EvaluationBatch) Evaluations() []*Evaluation {
	var out []*Evaluation
	if b.Primary != nil {
		out = append(out, b.Primary)
	}
	return append(out, b.Others...)
}

// DeadWorker is a process found dead, whose work is to be released.
type DeadWorker struct {
	ID string
	// LapsedBefore, when set, is the heartbeat the lease must still be older
	// than when it is released: a lease renewed in the meantime is alive.
	LapsedBefore *time.Time
	// Orphan marks a holder of running attempts that had no lease when it
	// was looked for: it is released only if it still has none (a process
	// registering meanwhile is alive).
	Orphan bool
	// Why says how it was found dead, for the log.
	Why string
}

// Claimant is the process claiming an attempt: its lease, how long a
// holder's lease may go unrenewed before its attempts are taken over, and
// the fair share of each team.
type Claimant struct {
	Lease WorkerLease
	TTL   time.Duration
	// TeamEpisodes and TeamHiddenJobs are how many episodes and hidden-test
	// jobs one team may run at once while another team's wait; 0 means half
	// of the live workers' slots (at least 1). A team alone uses every slot.
	TeamEpisodes, TeamHiddenJobs int
}

// HiddenTaskSpec is what a hidden-tests job needs about an attempt: the
// task's suite (Task.EvalSpec) and reference captures, and the candidate
// website the team submitted. Hidden fields included: system actor only.
type HiddenTaskSpec struct {
	Attempt Attempt
	Run     Run
	Task    Task
	// Candidate is nil when the attempt has no candidate row.
	Candidate *HiddenCandidate
	// Captures are the task's reference captures, by name; not loaded when
	// the attempt is Finished.
	Captures []ReferenceCapture
}

// Finished reports whether there is nothing left to run: the attempt is done
// (a redelivered job) or its run has ended (canceled, say).
func (s *HiddenTaskSpec) Finished() bool {
	return s.Attempt.Status == AttemptDone || s.Run.Finished()
}

// HiddenOutcome is what a hidden-tests job found about an attempt.
type HiddenOutcome struct {
	// Try is the try the results belong to (StartHiddenAttempt's); results
	// of any other try are stale and not recorded.
	Try int
	// Results hold one row per test of the suite, images already stored.
	Results []HiddenTestResult
	// Error, when set, says why no test could run at all (the suite cannot be
	// read, the attempt has no candidate): the attempt ends in error with it.
	Error string
	// InputsChecksum is the SHA-256 of what the tests read (the suite, the
	// captures, the candidate's URLs).
	InputsChecksum string
	Duration       time.Duration
}
