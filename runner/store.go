package runner

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"proctor/models"
	"proctor/service"
)

// Store is everything the runner's workers read and write, one small
// interface per kind of job; *storage.DB implements it, and main passes it in.
type Store interface {
	Database
	LeaseStore
	EpisodeStore
	HiddenTestStore
	SubmissionJobStore
	StudyJobStore
	service.MetricsStore
}

// Database is the connection the queue keeps its jobs in (River shares
// it): SQLite has no pgx pool.
type Database interface {
	PgxPool() *pgxpool.Pool
	SQL() *sql.DB
}

// LeaseStore keeps the workers' leases and releases the work of dead ones.
type LeaseStore interface {
	DeleteExpiredSessions(ctx context.Context) (int64, error)
	DropLease(ctx context.Context, id string) error
	ForgetSupersededTry(ctx context.Context, id int64) error
	HeldAttempts(ctx context.Context, worker string, startedBefore time.Time) ([]int64, error)
	Leases(ctx context.Context) ([]models.WorkerLease, error)
	OrphanHolders(ctx context.Context) ([]string, error)
	RegisterLease(ctx context.Context, l models.WorkerLease) error
	ReleaseLost(ctx context.Context, worker string, attemptIDs []int64, reoffer func(ctx context.Context, tx *sql.Tx) error) ([]int64, error)
	ReleaseWorker(ctx context.Context, w models.DeadWorker, reoffer func(ctx context.Context, tx *sql.Tx) error) (attemptIDs []int64, ok bool, err error)
	RenewLease(ctx context.Context, id string) (bool, error)
	SupersededTries(ctx context.Context, before time.Time, limit int) ([]models.SupersededTry, error)
}

// EpisodeStore is what running and grading an episode reads and writes.
type EpisodeStore interface {
	AgentSecrets(ctx context.Context, agentID int64) (map[string]string, error)
	ClaimAttempt(ctx context.Context, attemptID int64, by models.Claimant) (string, *models.EpisodeSpec, error)
	DispatchRun(ctx context.Context, runID int64, enqueue func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error
	EvaluationSpec(ctx context.Context, attemptID int64) (*models.EpisodeSpec, error)
	FinishEpisode(ctx context.Context, attemptID int64, try int, out models.EpisodeOutcome, enqueue func(ctx context.Context, tx *sql.Tx) error, offer func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error
	OfferEpisodes(ctx context.Context, offer func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error) error
	RecordEvaluations(ctx context.Context, attemptID int64, b models.EvaluationBatch, refresh func(ctx context.Context, tx *sql.Tx, runID int64) error) (bool, error)
	RecordStep(ctx context.Context, s *models.Step, try int) error
	ReleaseAttempt(ctx context.Context, attemptID int64, try int) error
	RunStatus(ctx context.Context, runID int64) (string, error)
	ConnectStore
}

// ConnectStore is what running a connecting agent's episode reads and
// writes: the lease its claim holds.
type ConnectStore interface {
	StartEpisodeLease(ctx context.Context, attemptID int64, try int, workerURL string) (*models.EpisodeLease, error)
	EpisodeLease(ctx context.Context, id int64) (*models.EpisodeLease, error)
	EndEpisodeLease(ctx context.Context, id int64, reason string) error
	EndAttemptLeases(ctx context.Context, attemptID int64, upTo int, reason string) error
	ReturnClaimedAttempt(ctx context.Context, attemptID int64, try int) error
}

// HiddenTestStore is what a hidden-tests job reads and writes.
type HiddenTestStore interface {
	HiddenSuite(ctx context.Context, attemptID int64) (string, error)
	HiddenTask(ctx context.Context, attemptID int64) (*models.HiddenTaskSpec, error)
	SaveHiddenResults(ctx context.Context, attemptID int64, out models.HiddenOutcome, refresh func(ctx context.Context, tx *sql.Tx, runID int64) error) (bool, error)
	StartHiddenAttempt(ctx context.Context, attemptID int64, by models.Claimant) (int, string, error)
}

// SubmissionJobStore is what the submission portal's jobs read and write.
type SubmissionJobStore interface {
	AbandonedUploads(ctx context.Context, cutoff time.Time, limit int) ([]models.Submission, error)
	CompleteSubmissionUpload(ctx context.Context, id, size int64, enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error
	CreateUploadedRun(ctx context.Context, id int64, in models.SubmissionIngest, rules models.UploadedRunRules, enqueue func(ctx context.Context, tx *sql.Tx, runID int64, evaluate []int64) error) (*models.Run, error)
	DiscardSubmission(ctx context.Context, id int64) (*models.Submission, error)
	ExpireUpload(ctx context.Context, id int64, cutoff time.Time, reason string) (*models.Submission, error)
	FailSubmission(ctx context.Context, id int64, reason string) error
	FinishSubmissionValidation(ctx context.Context, id int64, report models.SubmissionReport, duplicate func(prev *models.Submission) error) (*models.SubmissionReport, error)
	RecordSubmissionPart(ctx context.Context, id int64, p models.SubmissionPart) error
	RefuseSubmission(ctx context.Context, id int64, reason string) error
	RequestSubmissionIngest(ctx context.Context, id int64, admit func(s, duplicate *models.Submission) error, enqueue func(ctx context.Context, tx *sql.Tx, id int64) error) error
	SetSubmissionUpload(ctx context.Context, id int64, multipartID string) error
	StartSubmissionValidation(ctx context.Context, id int64) (s *models.Submission, ok bool, err error)
	SubmissionByID(ctx context.Context, id, member int64) (*models.SubmissionView, error)
	SubmissionCatalog(ctx context.Context, s *models.Submission) (benchmark string, taskIDs, subsetTaskIDs []string, err error)
	SubmissionForJob(ctx context.Context, id int64) (*models.Submission, error)
	SubmissionProgress(ctx context.Context, id, done, total int64) error
}

// StudyJobStore is what judging an agreement study reads and writes.
type StudyJobStore interface {
	SaveStudyVerdict(ctx context.Context, v *models.StudyVerdict, canon func(labels models.StudyLabels, rubric []models.RubricItem) (models.StudyLabels, error)) error
	StudyJudgeWork(ctx context.Context, studyID int64, judge string) ([]models.StudyItem, error)
	StudyOverview(ctx context.Context, gate models.StudyGate, id int64) (*models.StudyView, error)
	StudyVerdicts(ctx context.Context, gate models.StudyGate, studyID int64) ([]models.StudyVerdict, error)
}
