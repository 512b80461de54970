package spool

import "time"

// Queue is one queue and its jobs now. A queue exists as soon as a job
// names it.
type Queue struct {
	Name string
	// Paused: workers take none of its jobs; PausedAt says since when.
	Paused   bool
	PausedAt time.Time
	// Scheduled counts the jobs waiting for their time (a delay, a
	// retry's backoff) or for other jobs; Queued those waiting for a
	// worker; Running those leased.
	Scheduled int
	Queued    int
	Running   int
	// MaxRunning is the most of its jobs that run at once, across every
	// worker and server (0: no limit).
	MaxRunning int
	// Succeeded, Failed and Cancelled count the jobs that ended within the
	// recent window the listing names.
	Succeeded int
	Failed    int
	Cancelled int
	// OldestQueuedAt is when the oldest waiting job was enqueued (zero when
	// none waits).
	OldestQueuedAt time.Time
	// Workers counts the workers that asked for its jobs in the last
	// minute, of any server sharing the store (another server's are
	// counted within about 15 s of their first poll).
	Workers int
	// EndedPerMinute, only when the listing asked for it
	// (client.QueuesEndedPerMinute; the web UI's queues page), holds the jobs that ended in each of the last 60
	// minutes, oldest first, the last being the minute under way; it is
	// empty when none ended in the hour.
	EndedPerMinute []EndedMinute
}

// EndedMinute is how many of a queue's jobs ended in one minute, by final
// state: a cancelled job counts neither as succeeded nor as failed.
type EndedMinute struct {
	// Minute is the minute's start.
	Minute                       time.Time
	Succeeded, Failed, Cancelled int
}
