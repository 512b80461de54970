package store

import (
	"context"
	"time"
)

// QueueStore keeps what spool knows of its queues beside their jobs:
// whether each is paused, and how many of its jobs are where.
type QueueStore interface {
	// QueueStats returns every queue that has a job or has been paused, by
	// name: its jobs queued and running now, the jobs that ended at or
	// after since (by final state), its oldest queued job's created_at and
	// whether it is paused. Counting may read every job that is queued,
	// running or ended since; backends keep it to that.
	QueueStats(ctx context.Context, since time.Time) ([]QueueStats, error)
	// SetQueuePaused pauses a queue (recording at) or resumes it. Pausing
	// a queue no job names yet is allowed; pausing a paused queue keeps its
	// first time.
	SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error
	// QueuePaused reports whether a queue is paused: the service asks it
	// before every lease, so it must be one cheap read.
	QueuePaused(ctx context.Context, name string) (bool, error)
}

// QueueStats is one queue's counts as a store sees them.
type QueueStats struct {
	Name string
	// Paused, and since when (zero while not paused).
	Paused   bool
	PausedAt time.Time
	// Jobs queued (including those waiting out a retry's backoff) and
	// running now.
	Queued, Running int64
	// Jobs that ended (became final) at or after the time asked for.
	Succeeded, Failed, Cancelled int64
	// OldestQueued is the created_at of the oldest queued job (zero when
	// none is queued).
	OldestQueued time.Time
}
