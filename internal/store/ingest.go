package store

import (
	"context"
	"iter"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// IngestStore keeps the logs of programs spool did not start. Each source
// (a CloudWatch log group and stream, a shipper's "source") has at most one
// open job: an external job, born RUNNING on attempt 1 under the lease
// ExternalLease, which never expires, so no worker ever leases it and the
// reaper never settles it. It ends when the service core completes it under
// that lease (an explicit complete, an idle timeout, a cancel); events
// that arrive later open a new job for the source.
//
// The events of a source are stored once each: an event id accepted for
// any kept job of the source is a duplicate, whichever server accepted it
// and however often the sender delivers it again. The log's lines follow
// the order in which events were first accepted, and every accepted event
// is kept as it came (Accepted), so the stored log can always be rebuilt
// from them (storekit.RebuildEvents, ReplaceLog).
type IngestStore interface {
	// Ingest stores r.Events in the log of the open job of r.Source, and
	// creates that job from r.Job first when the source has none open
	// (never had one, or its last job is final). In one atomic step, even
	// when servers sharing the store ingest the same source at once: the
	// events whose ids the source has stored before are dropped, and the
	// rest are laid out by storekit.PlanIngest at the job's head and
	// appended with their accepted records.
	Ingest(ctx context.Context, r IngestRequest) (IngestResult, error)
	// Accepted yields the accepted events of an external job in line
	// order. A job that is not external yields nothing.
	Accepted(ctx context.Context, jobID string) iter.Seq2[Accepted, error]
	// ReplaceLog makes evs (sequences and lines assigned, from
	// storekit.RebuildEvents) the whole stored log of an external job:
	// items that differ are written, items evs do not hold are removed,
	// and the head stays where it is. A job that is not external is
	// spool.ErrInvalidArgument.
	ReplaceLog(ctx context.Context, jobID string, evs []*spoolv1.JobEvent) error
}

// ExternalLease is the lease handle every external job runs under, on
// attempt 1, from its birth until it ends.
const ExternalLease = "external"

// ExternalLeaseRef is the lease an external job runs under: what the core
// completes it with.
func ExternalLeaseRef(job *spoolv1.Job) LeaseRef {
	return LeaseRef{JobID: job.GetJobId(), Queue: job.GetQueue(), Attempt: 1, LeaseID: ExternalLease}
}

// IngestRequest is a call of Ingest.
type IngestRequest struct {
	// Source names the log: not empty.
	Source string
	// Events are the events of this call for Source, each id at most once,
	// in the order they came.
	Events []RawEvent
	// Job creates the source's job when it has none open: a NewJob with
	// Params.External.Source set to Source.
	Job NewJob
}

// RawEvent is one log event from elsewhere, as its sender gave it.
type RawEvent struct {
	// ID is unique within the source: not empty, no control characters
	// (the decoders refuse them).
	ID string
	// Time is the event's, to the millisecond: what senders give, and
	// what every store keeps (a finer time would not rebuild the same).
	Time time.Time
	// Message is the event's text: a line, or lines separated by "\n".
	Message string
}

// IngestResult says what Ingest did.
type IngestResult struct {
	// Job is the job the events went to, as it is after them; nil when
	// every event was a duplicate and the source has no open job (a past
	// delivery sent again reopens nothing).
	Job *spoolv1.Job
	// Created says Job was created by this call.
	Created bool
	// Accepted counts the events stored by this call; the others were
	// duplicates.
	Accepted int
}

// Accepted is an event as stored for an external job: where its lines
// went, and where the call that accepted it began writing, which is what
// makes rebuilding the log give the same batches.
type Accepted struct {
	RawEvent
	// Line is the number of its first line; it has Lines lines (a message
	// with newlines, or longer than a batch may hold, makes several).
	Line, Lines int64
	// Group is the sequence at which the Ingest call that accepted it began
	// storing: the events of one call were laid out together.
	Group int64
}
