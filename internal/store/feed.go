package store

import (
	"context"
	"iter"
	"slices"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// FeedRequest says which of a job's events a Feed yields.
type FeedRequest struct {
	JobID string
	// Start at this sequence (0 or 1: the beginning)...
	FromSequence int64
	// ...or, when set, at this output line: events after line FromLine-1.
	FromLine int64
	// Skip events (and lines) written before this time.
	FromTime time.Time
	// Only these event types; OUTPUT_DATA and OUTPUT_BATCH both mean output.
	Types []spoolv1.EventType
	// Keep going with new events until the job is final.
	Follow bool
}

// Feed yields a job's events: everything stored from the requested point,
// then, when following, each new event as it is stored, until the job is
// final and every event has been yielded.
//
// It reads the store and waits for Watch between reads, so the stored part
// and the live part meet without a gap or a repeat (the next read starts
// after the last event yielded), a slow consumer only slows its own reads
// (nothing is buffered for it, nothing is dropped), and memory per feed is
// one page of items.
type Feed struct {
	s        JobStore
	r        FeedRequest
	finished *spoolv1.Job
}

// NewFeed returns a feed over s.
func NewFeed(s JobStore, r FeedRequest) *Feed {
	return &Feed{s: s, r: r}
}

// Finished returns the job as it was when the feed ended because the job
// was final and fully read (nil if the feed ended for another reason).
func (f *Feed) Finished() *spoolv1.Job { return f.finished }

// Events yields events in sequence order. Batches are yielded as batches,
// trimmed to the requested start; see events.Unpack for one line per event.
// A missing job is an ErrNotFound error.
func (f *Feed) Events(ctx context.Context) iter.Seq2[*spoolv1.JobEvent, error] {
	return func(yield func(*spoolv1.JobEvent, error) bool) {
		next := max(1, f.r.FromSequence)
		line := f.r.FromLine // while > 0, seek by line: nothing yielded yet
		for {
			changed := f.s.Watch(f.r.JobID)
			job, err := f.s.Get(ctx, f.r.JobID)
			if err != nil {
				yield(nil, err)
				return
			}
			// The job was read before the log: if it was final then, the
			// read below sees every event it will ever have.
			final := IsFinal(job.GetState())
			if line > 0 || job.GetLastSequence() >= next {
				req := ReadRequest{JobID: f.r.JobID, FromSequence: next, FromLine: line}
				for ev, err := range f.s.Read(ctx, req) {
					if err != nil {
						yield(nil, err)
						return
					}
					if line > 0 {
						ev = events.TrimBeforeLine(ev, line)
					} else {
						ev = events.TrimBefore(ev, next)
					}
					if ev == nil {
						continue
					}
					next, line = events.EndSequence(ev)+1, 0
					if ev = f.filter(ev); ev == nil {
						continue
					}
					if !yield(ev, nil) {
						return
					}
				}
			}
			if final {
				f.finished = job
				return
			}
			if !f.r.Follow {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

// filter applies the time and type filters.
func (f *Feed) filter(ev *spoolv1.JobEvent) *spoolv1.JobEvent {
	if len(f.r.Types) > 0 && !wantsType(f.r.Types, ev.GetEventType()) {
		return nil
	}
	if !f.r.FromTime.IsZero() {
		return events.TrimBeforeTime(ev, f.r.FromTime)
	}
	return ev
}

func wantsType(types []spoolv1.EventType, t spoolv1.EventType) bool {
	if events.IsOutput(t) {
		return slices.ContainsFunc(types, events.IsOutput)
	}
	return slices.Contains(types, t)
}
