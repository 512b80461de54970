package spool

import "time"

// Queue is one queue and its jobs now. A queue exists as soon as a job
// names it.
type Queue struct {
	Name string
	// Paused: workers take none of its jobs; PausedAt says since when.
	Paused   bool
	PausedAt time.Time
	// Queued counts the jobs waiting, including those waiting out a retry's
	// backoff; Running those leased.
	Queued  int
	Running int
	// Succeeded, Failed and Cancelled count the jobs that ended within the
	// recent window the listing names.
	Succeeded int
	Failed    int
	Cancelled int
	// OldestQueuedAt is when the oldest waiting job was enqueued (zero when
	// none waits).
	OldestQueuedAt time.Time
	// Workers counts the workers that asked the server for its jobs in the
	// last minute.
	Workers int
}
