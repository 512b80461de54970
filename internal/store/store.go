// Package store is the seam between spool's service core and its storage:
// JobStore, the queue + job records + event log that every backend
// implements, the types it speaks in, and the semantics every backend keeps.
//
// Around it, by role:
//
//   - store/storekit: the rules and helpers backends share (appends,
//     cursors, life-cycle rules, the live Feed);
//   - store/backends: the implementations (memstore, sqlitestore,
//     pgstore, awsstore) and Open, which picks one from the configuration;
//   - store/conformance: the suite every backend must pass.
//
// What a backend may offer beyond JobStore it declares in its
// Capabilities (capabilities.go); API keys are a seam of their own,
// KeyStore (keys.go), that every backend implements beside the jobs.
//
// Jobs and events are the API's protobuf messages. Messages a store returns
// may be shared with other readers (the live feed hands the same event to
// every watcher): treat them as read-only and clone before changing one.
package store

import (
	"context"
	"iter"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
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
	// there is none). A page may hold fewer jobs than the limit, even none,
	// and still have a next page: a backend may bound the work of one call,
	// and a filter that few jobs match then takes several calls. A malformed
	// cursor is spool.ErrInvalidArgument.
	List(ctx context.Context, f ListFilter) (jobs []*spoolv1.Job, next string, err error)
	// Cancel cancels a queued or scheduled job at once and marks a running one
	// (cancel_requested, with the reason kept for its result); a finished
	// job is returned unchanged.
	Cancel(ctx context.Context, jobID, reason string) (*spoolv1.Job, error)
	// AddNote adds a note to a job's notes (storekit.AddNote), whatever its
	// state.
	AddNote(ctx context.Context, jobID, note string) (*spoolv1.Job, error)
	// AddRerun records on a job that rerunID runs it again (storekit.AddRerun:
	// once per id, the newest MaxReruns kept), whatever its state.
	AddRerun(ctx context.Context, jobID, rerunID string) (*spoolv1.Job, error)
	// JobSecrets returns the sealed secrets a job was created with
	// (NewJob.Secrets; nil when it has none), or ErrNotFound. They are kept
	// beside the job, never in it: no other method returns them, and
	// DeleteJob deletes them with the job.
	JobSecrets(ctx context.Context, jobID string) ([]byte, error)

	// Dequeue leases up to r.Max ready jobs of r.Queue, highest priority
	// first, then oldest first, waiting up to r.Wait for one, and no more
	// than the queue's max_running allows (TimingStore). A job is ready
	// when queued (storekit.Ready). Each lease starts a new attempt and sets the job's
	// started_at. A running job whose lease ran out is not ready: only
	// ExpireLeases settles it, so that its rule for outages comes first.
	Dequeue(ctx context.Context, r DequeueRequest) ([]Lease, error)
	// Heartbeat extends a lease to now+d and reports whether the job was
	// cancelled. A lease that is no longer the job's current one is
	// spool.ErrStaleLease.
	Heartbeat(ctx context.Context, l LeaseRef, d time.Duration) (expires time.Time, cancelRequested bool, err error)
	// Complete records the attempt's result as storekit.Completed decides:
	// the job is final, or queued again for a retry. Repeating it for the
	// same attempt returns the job unchanged; any other attempt is
	// spool.ErrStaleLease.
	Complete(ctx context.Context, l LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error)
	// Release ends a current lease early as storekit.Released decides: the
	// job is queued again at once (or cancelled or failed).
	Release(ctx context.Context, l LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error)
	// ExpireLeases settles the running jobs whose lease ran out
	// (storekit.Expired: queued again, failed, or cancelled), after giving
	// grace to those an outage kept from their heartbeats (see Sweep), and
	// says how many of each it found.
	ExpireLeases(ctx context.Context, r Sweep) (Swept, error)

	// Append adds events to a job's log under a lease: see
	// storekit.PlanAppend for the rules, which every store applies
	// atomically with storekit.CheckAppend. Events published encoded are
	// stored as they came when they carry their attempt and line numbers.
	Append(ctx context.Context, l LeaseRef, evs []events.Published) (Head, error)
	// ReadStored yields the stored items of a job's log in sequence order,
	// starting with the item that contains r.FromSequence (or, with
	// r.FromLine, the first item holding anything after line
	// r.FromLine-1), each decoded only as far as its header
	// (events.Stored). It seeks straight to that item and yields every item
	// it fetched, untrimmed: callers trim (see Trim). Batches carry their
	// first_line. storekit.Read yields the same items decoded.
	ReadStored(ctx context.Context, r ReadRequest) iter.Seq2[*events.Stored, error]
	// Watch returns a channel closed at the next change to the job's log or
	// state after the call. Callers take it before reading, so a change
	// between the read and the wait is never missed. The watch lasts until
	// ctx ends, and the store keeps nothing for it after that: scope ctx to
	// the one wait.
	Watch(ctx context.Context, jobID string) <-chan struct{}

	// Limits says what the backend can store.
	Limits() Limits
	// Capabilities says which optional features the backend offers.
	Capabilities() Capabilities
	// Close releases the store's resources.
	Close() error

	KeyStore
	SpentStore
	ScatterStore
	IngestStore
	QueueStore
	RemovalStore
	TimingStore
	ScheduleStore
	NotifyStore
}

// DefaultQueue is the queue used when a request names none.
const DefaultQueue = "default"

// NewJob is what Enqueue needs to create a job.
type NewJob struct {
	// ID is the job's id; empty: a new UUIDv7. A scatter names its jobs
	// after itself, so each batch has one job id on every try.
	ID          string
	Queue       string
	RequestID   string
	Params      *spoolv1.JobParams
	Execution   *spoolv1.ExecutionConfig
	MaxAttempts int32
	Retries     int32
	// RerunOf, when set, is the job this one runs again: stored as the
	// job's rerun_of.
	RerunOf string
	// RejectReason, when set, makes the job failed from the start, with
	// this as its error: it is kept and listed but never leased.
	RejectReason string
	// Secrets are the job's secrets as the service sealed them (package
	// seal), stored as they are beside the job and read back only by
	// JobSecrets.
	Secrets []byte
	// RunAfter, when after the enqueue's time, makes the job SCHEDULED
	// until then (see TimingStore).
	RunAfter time.Time
	// Priority is the job's priority, HighestPriority to LowestPriority
	// (0: DefaultPriority). Dequeue hands out a queue's jobs by priority,
	// then oldest first.
	Priority int32
	// After names the jobs this one runs after (at most MaxAfter): the
	// job is SCHEDULED until they all succeeded. Enqueue adds the new
	// job's id to each one's followers (storekit.AddFollower), in the
	// same write or, where a store cannot, right after; a job in After
	// that does not exist is spool.ErrInvalidArgument.
	After []string
	// Notify are the URLs told when the job ends (see NotifyStore).
	Notify []string
	// Schedule is the schedule whose tick made the job.
	Schedule string
}

// ListFilter selects and pages jobs for List.
type ListFilter struct {
	Queue string
	// Source, when set, keeps only the external jobs of that source.
	Source string
	States []spoolv1.JobState
	Limit  int
	Cursor string
}

// DequeueRequest asks for leases.
type DequeueRequest struct {
	Queue string
	Max   int
	// LeaseDuration is how long each lease lasts unless a heartbeat extends
	// it (SQS calls it the visibility timeout).
	LeaseDuration time.Duration
	// Wait is how long to wait for a job when none is ready.
	Wait     time.Duration
	WorkerID string
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
	// Session, when set, is shared by the reads of one pass over a log
	// (a feed's pages): a store may keep in it what it read to bound the
	// first read (the committed head), and read only events after that.
	// Such reads see the log as far as it was committed at the first; the
	// caller starts a new session to see further.
	Session *ReadSession
}

// ReadSession is what the reads of one pass over a log share (see
// ReadRequest.Session). Only the store uses what it holds.
type ReadSession struct {
	// Store is the store's own, for the next read of the same job.
	Store any
}

// ReadStats counts stored items fetched by a read.
type ReadStats struct {
	ItemsRead int
}

// Check refuses a NewJob a store cannot create. The service fills defaults
// and validates user input before; this guards the store's own invariants.
func (nj NewJob) Check() error {
	switch {
	case nj.Queue == "":
		return apierr.Errorf(spool.ErrInvalidArgument, "job has no queue")
	case nj.Params == nil:
		return apierr.Errorf(spool.ErrInvalidArgument, "job has no params")
	case nj.Execution.GetBatching() == nil:
		return apierr.Errorf(spool.ErrInvalidArgument, "job has no execution config")
	case nj.MaxAttempts < 1:
		return apierr.Errorf(spool.ErrInvalidArgument, "max_attempts must be at least 1, got %d", nj.MaxAttempts)
	case nj.Retries < 0:
		return apierr.Errorf(spool.ErrInvalidArgument, "retries must not be negative, got %d", nj.Retries)
	case nj.Priority != 0 && (nj.Priority < HighestPriority || nj.Priority > LowestPriority):
		return apierr.Errorf(spool.ErrInvalidArgument, "priority must be %d to %d, got %d", HighestPriority, LowestPriority, nj.Priority)
	case len(nj.After) > MaxAfter:
		return apierr.Errorf(spool.ErrInvalidArgument, "a job runs after at most %d jobs, got %d", MaxAfter, len(nj.After))
	case len(nj.Notify) > MaxNotify:
		return apierr.Errorf(spool.ErrInvalidArgument, "a job notifies at most %d URLs, got %d", MaxNotify, len(nj.Notify))
	}
	return nil
}

// Limits says what a backend can hold in one stored item, and how it
// writes one.
type Limits struct {
	// MaxItemBytes is the largest encoded event item the backend stores.
	MaxItemBytes int
	// Codec compresses the items the backend writes (the zero value is
	// events.S2, what workers send). Payloads sent in another are
	// recoded; every codec is read back.
	Codec events.Codec
	// FeedGrowth is how many times larger each page a feed reads is than
	// the one before (0: twice). A backend that bills or waits per request
	// more than per item (DynamoDB charges a whole read unit for a query
	// of one small item) grows faster, so a long read takes fewer.
	FeedGrowth int
}
