package models

import "time"

// WorkerLease is held by each process that works jobs and renewed by its
// heartbeat. Its ID is also the process's River client id, so the jobs the
// process runs name it.
type WorkerLease struct {
	ID   string
	Host string
	PID  int `gorm:"column:pid"`
	// EpisodeSlots and HiddenSlots are the episodes and hidden-test jobs
	// the process runs at once.
	EpisodeSlots int
	HiddenSlots  int
	StartedAt    time.Time
	HeartbeatAt  time.Time
}

// SupersededTry is the artifact folder of a try that a newer try of its
// attempt replaced; housekeeping removes the folder, then the row.
type SupersededTry struct {
	ID        int64
	Prefix    string
	CreatedAt time.Time
}
