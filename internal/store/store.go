// Package store defines JobStore, the queue + job records + event log that
// every spool backend implements, and the semantics they share. A backend
// proves it keeps them by passing the conformance suite in storetest.
//
// Jobs and events are the API's protobuf messages. Messages a store returns
// may be shared with other readers (the live feed hands the same event to
// every watcher): treat them as read-only and clone before changing one.
package store

import (
	"context"
	"iter"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// JobStore is spool's storage: a queue of jobs, the jobs' records and each
// job's event log.
type JobStore interface {
	// Enqueue creates a job, or with a RequestID seen before, returns the job
	// that request created (created=false), also when called concurrently.
	Enqueue(ctx context.Context, nj NewJob) (job *spoolv1.Job, created bool, err error)
	// Get returns a job, or ErrNotFound.
	Get(ctx context.Context, jobID string) (*spoolv1.Job, error)
	// List returns jobs newest first and the cursor of the next page ("" when
	// there is none). A malformed cursor is ErrInvalid.
	List(ctx context.Context, f ListFilter) (jobs []*spoolv1.Job, next string, err error)
	// Cancel cancels a queued job at once and marks a running one
	// (cancel_requested); a finished job is returned unchanged.
	Cancel(ctx context.Context, jobID, reason string) (*spoolv1.Job, error)

	// Dequeue leases up to r.Max ready jobs of r.Queue, oldest first, waiting
	// up to r.Wait for one. A job is ready when queued, or running with an
	// expired lease and attempts left. Each lease starts a new attempt.
	Dequeue(ctx context.Context, r DequeueRequest) ([]Lease, error)
	// Heartbeat extends a lease to now+visibility and reports whether the
	// job was cancelled. A lease that is no longer the job's current one is
	// ErrStaleLease.
	Heartbeat(ctx context.Context, l LeaseRef, visibility time.Duration) (expires time.Time, cancelRequested bool, err error)
	// Complete records the attempt's result and makes the job final. Repeating
	// it for the same attempt returns the job unchanged; any other attempt is
	// ErrStaleLease.
	Complete(ctx context.Context, l LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error)
	// ExpireLeases fails the running jobs whose lease ran out with no attempts
	// left, and cancels those whose cancellation was pending, so they show as
	// final without waiting for a worker to poll. It returns how many changed.
	ExpireLeases(ctx context.Context) (int, error)

	// Append adds events to a job's log under a lease: see PlanAppend for the
	// rules, which every store applies atomically with the lease check.
	Append(ctx context.Context, l LeaseRef, evs []*spoolv1.JobEvent) (Head, error)
	// Read yields the stored items of a job's log in sequence order, starting
	// with the item that contains r.FromSequence (or, with r.FromLine, the
	// first item holding anything after line r.FromLine-1). It seeks straight
	// to that item and yields every item it fetched, untrimmed: callers trim
	// (see Trim). Batches carry their first_line.
	Read(ctx context.Context, r ReadRequest) iter.Seq2[*spoolv1.JobEvent, error]
	// Watch returns a channel closed at the next change to the job's log or
	// state after the call. Callers take it before reading, so a change
	// between the read and the wait is never missed.
	Watch(jobID string) <-chan struct{}

	// Limits says what the backend can store.
	Limits() Limits
	// Close releases the store's resources.
	Close() error
}

// DefaultQueue is the queue used when a request names none.
const DefaultQueue = "default"

// NewJob is what Enqueue needs to create a job.
type NewJob struct {
	Queue       string
	RequestID   string
	Params      *spoolv1.JobParams
	Execution   *spoolv1.ExecutionConfig
	MaxAttempts int32
}

// ListFilter selects and pages jobs for List.
type ListFilter struct {
	Queue  string
	States []spoolv1.JobState
	Limit  int
	Cursor string
}

// DequeueRequest asks for leases.
type DequeueRequest struct {
	Queue      string
	Max        int
	Visibility time.Duration
	Wait       time.Duration
	WorkerID   string
}

// LeaseRef names one attempt's hold on a job: what a task token carries.
type LeaseRef struct {
	JobID   string
	Queue   string
	Attempt int32
	// LeaseID is the backend's handle for the lease: a random id for SQL
	// stores, the receipt handle for SQS.
	LeaseID string
}

// Lease is a job handed to a worker.
type Lease struct {
	LeaseRef
	Job       *spoolv1.Job
	ExpiresAt time.Time
	// Head is where the attempt's events continue the log.
	Head Head
}

// Head is the end of a job's log: the next sequence to store and the next
// line number to give. A new attempt starts at its job's head, after
// everything stored before. Line numbers never skip; sequences may skip over
// a range a fenced-off attempt had reserved but never committed (the AWS
// store's fencing), and readers never see anything in such a range.
type Head struct {
	NextSequence int64
	NextLine     int64
}

// NewHead is the head of an empty log.
func NewHead() Head { return Head{NextSequence: 1, NextLine: 1} }

// ReadRequest selects where Read starts. FromLine, when set, wins over
// FromSequence.
type ReadRequest struct {
	JobID        string
	FromSequence int64
	FromLine     int64
	// Limit caps the items yielded (0: no limit).
	Limit int
	// Stats, when set, counts the stored items the read fetched, including
	// any it fetched only to find where to start.
	Stats *ReadStats
}

// ReadStats counts stored items fetched by a read.
type ReadStats struct {
	ItemsRead int
}

// Limits says what a backend can hold in one stored item.
type Limits struct {
	// MaxItemBytes is the largest encoded event item the backend stores.
	MaxItemBytes int
}

// IsFinal reports whether a job in this state is finished for good.
func IsFinal(s spoolv1.JobState) bool {
	switch s {
	case spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED:
		return true
	}
	return false
}

// LeaseGracer is implemented by stores whose leases only run while a spool
// server runs (SQLite, memory): a server coming back after an outage gives
// running jobs' leases until `until`, so their workers, which kept the jobs
// running and their output on disk, can reconnect instead of having the
// work redone. (With SQS the lease is SQS's visibility timeout, which runs
// whether or not a server is up, so that store does not implement it.)
type LeaseGracer interface {
	GraceLeases(ctx context.Context, until time.Time) (int, error)
}
