package store

import (
	"context"
	"time"
)

// TimingStore decides when a job may run beyond being queued: its time
// and the jobs it runs after (a SCHEDULED job), and the queue's limit on
// jobs running at once. Every backend implements it.
//
// A job created with NewJob.RunAfter in the future or NewJob.After set
// starts SCHEDULED (storekit.NewJobRecord), and so does a failed attempt
// retried after a backoff (storekit.Completed). PromoteScheduled makes it
// QUEUED. Dequeue leases no SCHEDULED job before its time or while a job
// it runs after has not succeeded; a backend whose lease may come before
// the promotion's write (an SQS message sent first, AWS) may lease a job
// due and waiting on nothing straight from SCHEDULED.
type TimingStore interface {
	// PromoteScheduled makes QUEUED every SCHEDULED job whose run_after
	// is unset or not after now and whose after jobs all succeeded, and
	// CANCELLED (storekit.AfterFailed says with what result) every
	// SCHEDULED job one of whose after jobs failed or was cancelled, or
	// no longer exists. Every server calls it about once a second and at
	// the next due time it returned, so it must be cheap when nothing is
	// due: backends find the due jobs through an index, not a scan. It is
	// safe to call from several servers at once: each job is moved once.
	PromoteScheduled(ctx context.Context, now time.Time) (Promoted, error)
	// SetQueueMaxRunning sets how many of a queue's jobs may run at once,
	// for every server (0: no limit). Dequeue leases no job of the queue
	// while that many (or more, after the limit was lowered) run; running
	// jobs are left alone. Setting it on a queue no job names yet is
	// allowed, and QueueStats lists such a queue.
	SetQueueMaxRunning(ctx context.Context, name string, max int32) error
}

// Promoted is what a PromoteScheduled call did.
type Promoted struct {
	// Jobs made QUEUED and CANCELLED.
	Queued, Cancelled int
	// Next is the earliest run_after of the SCHEDULED jobs left that wait
	// only for their time, when the backend knows it cheaply (zero:
	// none, or unknown). The caller calls again then, or sooner.
	Next time.Time
}

// Limits on the new fields of a job, which every store can hold.
const (
	// MaxAfter is the most jobs one job may run after.
	MaxAfter = 100
	// MaxFollowers is how many followers a job keeps listed, the newest
	// (a job may have more: each still runs after it).
	MaxFollowers = 100
	// MaxNotify is the most webhook URLs one job has.
	MaxNotify = 5
	// MaxDeliveries is how many deliveries a job keeps, the newest.
	MaxDeliveries = 50
	// MaxQueueRunning bounds a queue's max_running.
	MaxQueueRunning = 10000
	// DefaultPriority is a job's priority when it asked for none;
	// priorities run from HighestPriority to LowestPriority.
	DefaultPriority = 2
	HighestPriority = 1
	LowestPriority  = 4
)
