// Package servicetest builds application services for tests: over a real
// database, with job queues that insert nothing, so that fixtures create
// runs by the same rules as the product without a worker picking them up.
package servicetest

import (
	"context"
	"database/sql"

	"proctor/internal/evaltest"
	"proctor/models"
	"proctor/netguard"
	"proctor/service"
	"proctor/storage"
	"proctor/storage/artifact"
)

// NoJobs is a service.RunJobs that enqueues nothing.
type NoJobs struct{}

// DispatchRun enqueues nothing.
func (NoJobs) DispatchRun(context.Context, *sql.Tx, int64) error { return nil }

// RunEpisodes enqueues nothing.
func (NoJobs) RunEpisodes(context.Context, *sql.Tx, *models.Run, []int64) error { return nil }

// Rescore enqueues nothing.
func (NoJobs) Rescore(context.Context, *sql.Tx, []int64, string) error { return nil }

// Runs is the run service over db with the daily quota given, enqueuing nothing.
func Runs(db *storage.DB, dailyQuota int) *service.Runs {
	return service.NewRuns(db, NoJobs{}, service.RunOptions{DailyRunQuota: dailyQuota})
}

// QueueRun queues a run for the context's actor through the run service,
// with no quota and no job: the fixture's run stays queued.
func QueueRun(ctx context.Context, db *storage.DB, req models.RunRequest) (*models.Run, error) {
	return Runs(db, 0).QueueRun(ctx, req)
}

// NoQueue is the run service of a process without a job queue: it reads
// runs and answers EUNAVAILABLE to queuing.
func NoQueue(db *storage.DB) *service.Runs {
	return service.NewRuns(db, nil, service.RunOptions{})
}

// Benchmarks is the benchmark service over db.
func Benchmarks(db *storage.DB) *service.Benchmarks {
	return service.NewBenchmarks(db, evaltest.Registry())
}

// Submissions is the submission service of a process without a job queue:
// it lists submissions and answers EUNAVAILABLE to the rest.
func Submissions(db *storage.DB) *service.Submissions {
	return service.NewSubmissions(db, nil, nil, service.SubmissionOptions{})
}

// ValidateSubmission enqueues nothing.
func (NoJobs) ValidateSubmission(context.Context, *sql.Tx, int64) error { return nil }

// IngestSubmission enqueues nothing.
func (NoJobs) IngestSubmission(context.Context, *sql.Tx, int64) error { return nil }

// SubmissionsOver is the submission service over db and files with opts,
// enqueuing nothing: a fixture's submissions wait for jobs that never run.
func SubmissionsOver(db *storage.DB, files artifact.Store, opts service.SubmissionOptions) *service.Submissions {
	return service.NewSubmissions(db, files, NoJobs{}, opts)
}

// AllowHosts is a host guard that accepts every URL: fixtures register
// agents and candidates at whatever address their test serves.
type AllowHosts struct{}

// CheckURL accepts every URL.
func (AllowHosts) CheckURL(context.Context, string) error { return nil }

// HiddenTestsFunc is a service.CandidateJobs that calls itself.
type HiddenTestsFunc func(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error

// HiddenTests calls f.
func (f HiddenTestsFunc) HiddenTests(ctx context.Context, tx *sql.Tx, run *models.Run, attemptIDs []int64) error {
	return f(ctx, tx, run, attemptIDs)
}

// Teams is the team service over db with the SSRF guard of a server that
// allows no internal host (IP literals only: no DNS).
func Teams(db *storage.DB) *service.Teams {
	return service.NewTeams(db, netguard.New(nil, nil))
}

// CreateTeam creates a team owned by the context's user through the team
// service.
func CreateTeam(db *storage.DB, ctx context.Context, name, slug, description string) (*models.Team, error) {
	return Teams(db).CreateTeam(ctx, name, slug, description)
}

// CreateAgent registers an agent in a team for the context's actor through
// the team service, accepting any endpoint address.
func CreateAgent(db *storage.DB, ctx context.Context, teamSlug string, a *models.Agent, secrets map[string]string) error {
	return service.NewTeams(db, AllowHosts{}).CreateAgent(ctx, teamSlug, a, secrets)
}

// Candidates is the candidate service over db enqueuing through jobs (nil:
// a process without a queue), with the guard of Teams and no quota.
func Candidates(db *storage.DB, jobs service.CandidateJobs) *service.Candidates {
	return service.NewCandidates(db, jobs, netguard.New(nil, nil), service.CandidateOptions{})
}

// Studies is the study service over db, judging through jobs (nil: a
// process without a queue).
func Studies(db *storage.DB, jobs service.StudyJobs) *service.Studies {
	return service.NewStudies(db, jobs)
}

// Accounts is the account service over db.
func Accounts(db *storage.DB) *service.Accounts {
	return service.NewAccounts(db)
}

// Moderation is the moderation service over db.
func Moderation(db *storage.DB) *service.Moderation {
	return service.NewModeration(db)
}
