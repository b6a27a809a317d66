// Package servicetest builds application services for tests: over a real
// database, with job queues that insert nothing, so that fixtures create
// runs by the same rules as the product without a worker picking them up.
package servicetest

import (
	"context"
	"database/sql"

	"proctor/models"
	"proctor/service"
	"proctor/storage"
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

// Studies is the study service over db, judging through jobs (nil: a
// process without a queue).
func Studies(db *storage.DB, jobs service.StudyJobs) *service.Studies {
	return service.NewStudies(db, jobs)
}
