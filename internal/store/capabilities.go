package store

import (
	"context"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// Capabilities are the features a backend may offer beyond JobStore, each
// the store itself where it offers it and nil where it does not. Every
// backend declares them (JobStore.Capabilities), so what a store can do is
// said in one place and asked for by name, and the conformance suite can
// say which features a backend runs without.
type Capabilities struct {
	// Finisher stores an attempt's last events and its result in one
	// write.
	Finisher Finisher
	// LeaseGracer gives running jobs' leases time after no server ran.
	LeaseGracer LeaseGracer
	// WatchSharer tells the servers sharing the store who follows which
	// job.
	WatchSharer WatchSharer
	// SpaceReclaimer gives the space of deleted jobs back to the file
	// system.
	SpaceReclaimer SpaceReclaimer
	// PausedLeaser leases nothing from a paused queue, and orders pauses
	// and leases itself.
	PausedLeaser PausedLeaser
	// Pinger says whether the store's database or services answer now.
	Pinger Pinger
	// RetryReporter tells of the requests the backend ran again, and the
	// throttling it met, inside its calls.
	RetryReporter RetryReporter
	// PollerSharer tells the servers sharing the store which workers
	// poll which queues.
	PollerSharer PollerSharer
}

// Missing names the features c lacks, for people.
func (c Capabilities) Missing() []string {
	var out []string
	for _, f := range []struct {
		name    string
		offered bool
	}{
		{"Finisher", c.Finisher != nil},
		{"LeaseGracer", c.LeaseGracer != nil},
		{"WatchSharer", c.WatchSharer != nil},
		{"SpaceReclaimer", c.SpaceReclaimer != nil},
		{"PausedLeaser", c.PausedLeaser != nil},
		{"Pinger", c.Pinger != nil},
		{"RetryReporter", c.RetryReporter != nil},
		{"PollerSharer", c.PollerSharer != nil},
	} {
		if !f.offered {
			out = append(out, f.name)
		}
	}
	return out
}

// Finisher records an attempt's last events and its result in one write:
// what a short job's completion carries. Without it, the core appends,
// then completes, in two.
type Finisher interface {
	// Finish is Append of evs, then Complete of res, atomically: both or
	// neither. A repeat of a completion already recorded returns the job
	// unchanged.
	Finish(ctx context.Context, l LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error)
}

// PollerSharer is offered by stores that several servers share: a worker
// polls one server, and every server's `spool queues` should count it.
// Without it, a server counts the workers that poll it (all of them, where
// one server is all there is).
type PollerSharer interface {
	// SharePollers records the workers that polled this server lately, by
	// queue, in place of what this server recorded before.
	SharePollers(ctx context.Context, polls map[string][]string) error
	// SharedPollers returns the workers, by queue, of every server's
	// record written since since (this server's too).
	SharedPollers(ctx context.Context, since time.Time) (map[string][]string, error)
}

// PausedLeaser is offered by stores that keep a queue's pause in the lease
// itself, where servers share the store (PostgreSQL): asking whether the
// queue is paused before a lease and again after it (to hand back what a
// pause raced) cost every lease two more round trips, as long as the
// lease's own. Without it, the core asks the store around each lease.
type PausedLeaser interface {
	// DequeueUnpaused is Dequeue that leases nothing while r.Queue is
	// paused (a long poll then waits, and a resume wakes it). Once
	// SetQueuePaused(paused) has returned, no lease of the queue is
	// committed after it, on any server.
	DequeueUnpaused(ctx context.Context, r DequeueRequest) ([]Lease, error)
}

// LeaseGracer is offered by stores whose leases only run while a spool
// server runs (SQLite, memory, and PostgreSQL, whose leases run on the
// servers' clocks): a server coming back after an outage gives running
// jobs' leases until `until`, so their workers, which kept the jobs running
// and their output on disk, can reconnect instead of having the work
// redone. (With SQS the lease is SQS's visibility timeout, which runs
// whether or not a server is up, so that store does not offer it.) An
// outage of the store while servers run is ExpireLeases' to deal with (see
// Sweep); this covers the first start after an upgrade too, when no sweep
// has been recorded yet.
type LeaseGracer interface {
	GraceLeases(ctx context.Context, until time.Time) (int, error)
}

// WatchSharer is offered by stores that several servers share and that
// can carry messages between them (PostgreSQL's LISTEN/NOTIFY). Through it
// every server knows which jobs someone follows on any server, so a worker
// that publishes through one server flushes promptly for a follower on
// another. Stores without it leave the signal to each server alone.
type WatchSharer interface {
	// ShareWatch says whether this server now has followers of jobID. It
	// does not wait for the other servers to hear it.
	ShareWatch(jobID string, watched bool)
	// WatchedElsewhere reports whether another server has followers of
	// jobID.
	WatchedElsewhere(jobID string) bool
	// OnWatchChange sets fn, called when WatchedElsewhere(jobID) may have
	// changed.
	OnWatchChange(fn func(jobID string))
}

// SpaceReclaimer is offered by stores whose files keep the space of
// deleted rows until told to give it back (SQLite). The retention sweeper
// calls it after a round that deleted something.
type SpaceReclaimer interface {
	// ReclaimSpace returns free pages to the file system, a bounded amount
	// per call so it never holds the store for long.
	ReclaimSpace(ctx context.Context) error
}

// Pinger is offered by stores that talk to a database or a service that
// can be away (SQLite's file on a disk, PostgreSQL, AWS): a server's
// readiness probe asks it, so that a load balancer or Kubernetes sends no
// calls to a server whose store does not answer. A store that lives in
// the server's memory has nothing to ask.
type Pinger interface {
	// Ping makes the cheapest round trip the store has, and returns its
	// error.
	Ping(ctx context.Context) error
}

// RetryReporter is offered by stores that run some requests again inside
// one call (a PostgreSQL transaction that lost a serialization race, an
// AWS request throttled or failed by the service): the caller sees one
// call, slower, and only the reporter shows how often it happens.
type RetryReporter interface {
	// ReportRetries sets o, told of every retry and throttle from then on
	// (nil: none). Set it once, before the store is used.
	ReportRetries(o RetryObserver)
}

// RetryObserver hears of what a RetryReporter absorbs. It must be cheap
// and safe for concurrent use. operation names the backend's own request
// (an AWS API call such as "SQS.ReceiveMessage", or "transaction" for a
// PostgreSQL write), not the JobStore method that made it: a backend does
// not always know that.
type RetryObserver interface {
	// Retried: a request was run again; reason says why (throttled,
	// serialization, deadlock, transient).
	Retried(operation, reason string)
	// Throttled: the service refused a request for its rate (every refusal,
	// retried or not).
	Throttled(operation string)
}
