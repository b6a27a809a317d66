package runner

// Job kinds and queues. Every job is idempotent: a redelivered job (a worker
// died, a retry) finds the rows it already wrote and does nothing twice.
const (
	QueueDispatch     = "dispatch"
	QueueEpisode      = "episode"
	QueueEvaluate     = "evaluate"
	QueueHousekeeping = "housekeeping"
	QueueMetrics      = "metrics"
	QueueSubmissions  = "submissions"
	QueueStudies      = "studies"
	QueueHiddenTests  = "hidden_tests"
)

// DispatchArgs creates a run's attempts and enqueues their episodes.
type DispatchArgs struct {
	RunID int64 `json:"run_id"`
}

// Kind names the job in the queue.
func (DispatchArgs) Kind() string { return "dispatch_run" }

// EpisodeArgs runs one attempt in the browser. MaxSeconds is the run's episode
// budget: the job's timeout derives from it, so that a job whose worker died is
// rescued once it has clearly outlived its budget.
type EpisodeArgs struct {
	AttemptID  int64 `json:"attempt_id"`
	RunID      int64 `json:"run_id"`
	MaxSeconds int   `json:"max_seconds"`
}

// Kind names the job in the queue.
func (EpisodeArgs) Kind() string { return "episode" }

// EvaluateArgs evaluates one attempt's try. RescoreID names the re-scoring
// request when the attempt is already done and graded again.
type EvaluateArgs struct {
	AttemptID int64  `json:"attempt_id"`
	RescoreID string `json:"rescore_id,omitempty"`
}

// Kind names the job in the queue.
func (EvaluateArgs) Kind() string { return "evaluate" }

// MetricsArgs recomputes a run's metrics and leaderboard rows. Many
// evaluations finishing together collapse into one waiting job per run.
type MetricsArgs struct {
	RunID int64 `json:"run_id"`
}

// Kind names the job in the queue.
func (MetricsArgs) Kind() string { return "run_metrics" }

// HousekeepingArgs removes expired sessions and other leftovers.
type HousekeepingArgs struct{}

// Kind names the job in the queue.
func (HousekeepingArgs) Kind() string { return "housekeeping" }

// ValidateSubmissionArgs checks an assembled submission bundle: its SHA-256,
// every limit and file, and its tasks against the benchmark. A redelivered
// job validates again from the start; one that finds the submission past
// validation does nothing.
type ValidateSubmissionArgs struct {
	SubmissionID int64 `json:"submission_id"`
}

// Kind names the job in the queue.
func (ValidateSubmissionArgs) Kind() string { return "validate_submission" }

// IngestSubmissionArgs stores a validated bundle's screenshots and network
// logs and creates its run. A redelivered job removes what an interrupted one
// stored and starts over; one that finds the run made does nothing.
type IngestSubmissionArgs struct {
	SubmissionID int64 `json:"submission_id"`
}

// Kind names the job in the queue.
func (IngestSubmissionArgs) Kind() string { return "ingest_submission" }

// ExpireUploadsArgs discards uploads abandoned for longer than the portal
// keeps them, deleting their parts.
type ExpireUploadsArgs struct{}

// Kind names the job in the queue.
func (ExpireUploadsArgs) Kind() string { return "expire_uploads" }

// StudyJudgeArgs runs one judge configuration of an agreement study over the
// study's items it has not judged yet, saving each verdict as it goes: a
// redelivered job carries on where the last one stopped.
type StudyJudgeArgs struct {
	StudyID int64  `json:"study_id"`
	Judge   string `json:"judge"` // the configuration's name (models.StudyJudge.Name)
}

// Kind names the job in the queue.
func (StudyJudgeArgs) Kind() string { return "study_judge" }

// HiddenTestsArgs runs one hidden-tests attempt's suite against its
// candidate website. A redelivered job runs the suite again from the start
// and replaces what an interrupted one stored; one that finds the attempt
// done does nothing.
type HiddenTestsArgs struct {
	AttemptID int64 `json:"attempt_id"`
	RunID     int64 `json:"run_id"`
}

// Kind names the job in the queue.
func (HiddenTestsArgs) Kind() string { return "hidden_tests" }
