package models

import (
	"strconv"
	"time"
)

// SubmissionKey is the artifact key of a submission's assembled bundle.
func SubmissionKey(id int64) string { return SubmissionPrefix(id) + "bundle" }

// SubmissionPrefix is the artifact prefix holding every byte of a submission:
// its bundle and, once ingested, its tasks' screenshots and network logs.
func SubmissionPrefix(id int64) string { return "submissions/" + strconv.FormatInt(id, 10) + "/" }

// UploadedTask is one task of an ingested bundle, its files already in the
// artifact store under the submission's prefix.
type UploadedTask struct {
	ExternalID string
	// NotAttempted marks a task the bundle says the agent did not attempt
	// (an empty .missing marker, an empty result).
	NotAttempted bool
	FinalAnswer  string // the final action as Action JSON, or ""
	HARKey       string
	TokensIn     int64
	TokensOut    int64
	Cost         float64
	// TokensStated, CostStated: the bundle stated them (else unknown).
	TokensStated bool
	CostStated   bool
	DurationMS   int64
	StartedAt    *time.Time
	ErrorMessage string // the agent's own error, when the bundle records one
	Steps        []Step // AttemptID is filled in here
}

// SubmissionIngest is what the ingest job read from a validated bundle.
type SubmissionIngest struct {
	Manifest *BundleManifest
	// Tasks are the bundle's tasks of the submission's subset; the subset's
	// other tasks are absent from the bundle.
	Tasks []UploadedTask
}

// UploadedRunRules build the rows of an uploaded run: the service's rules,
// called inside CreateUploadedRun's transaction with what it read.
type UploadedRunRules struct {
	// Run is the run of submission s, for agent on bench, of tasks tasks,
	// with the manifest m (nil when the bundle has none); its agent
	// snapshot included.
	Run func(s *Submission, agent *Agent, bench *Benchmark, m *BundleManifest, tasks int, now time.Time) (Run, error)
	// Attempt is the attempt of run runID on task taskID: the bundle's task
	// t, or nil when the bundle does not hold it.
	Attempt func(runID, taskID int64, t *UploadedTask, now time.Time) Attempt
}
