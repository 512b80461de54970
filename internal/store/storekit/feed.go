package storekit

import (
	"context"
	"iter"
	"slices"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
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
	// Leave out events (and lines) written after this time (zero: no end).
	// The log is read in the order it was written, so the feed ends at
	// the first event past it; a following feed also ends once the clock
	// is UntilGrace past it, having read what arrived by then.
	UntilTime time.Time
	// UntilGrace is how long after UntilTime a following feed still waits
	// for lines written before it: a worker sends lines some time after
	// they are written (its flush interval at most, when it hears of no
	// reader).
	UntilGrace time.Duration
	// Only these event types; OUTPUT_DATA and OUTPUT_BATCH both mean output.
	Types []spoolv1.EventType
	// Keep going with new events until the job is final.
	Follow bool
	// MaxPage caps the stored items one read fetches (0 or more than
	// MaxFeedPage: MaxFeedPage), for a reader that knows it needs few.
	MaxPage int
	// Job, when set, is the job as the caller read it just before making
	// the feed. When it is final, the feed starts reading its log without
	// reading it again: a final job's log does not change.
	Job *spoolv1.Job
}

// MaxFeedPage is the most stored items a feed fetches in one read. Each
// round of a feed reads one item first, then the store's FeedGrowth
// (store.Limits; twice by default) times as many each time up to its cap:
// a reader that stops early has had at most about that many times what it
// used read for it, and a slow reader holds at most one page (items are
// not decoded until they are sent, so a page costs its stored bytes). A
// whole log of 10,000 lines in batches of 50 takes 9 reads growing twice,
// 4 growing eightfold.
const MaxFeedPage = 128

// feedGrowth is how much larger each page of a round is than the last, on
// a store that does not say.
const feedGrowth = 2

// Feed yields a job's events: everything stored from the requested point,
// then, when following, each new event as it is stored, until the job is
// final and every event has been yielded.
//
// It reads the store and waits for Watch between reads, so the stored part
// and the live part meet without a gap or a repeat (the next read starts
// after the last event yielded), a slow consumer only slows its own reads
// (nothing is buffered for it, nothing is dropped), and memory per feed is
// one page of items (see MaxFeedPage).
type Feed struct {
	s        store.JobStore
	r        FeedRequest
	finished *spoolv1.Job
	reached  bool // the feed ended at UntilTime
}

// NewFeed returns a feed over s.
func NewFeed(s store.JobStore, r FeedRequest) *Feed {
	return &Feed{s: s, r: r}
}

// Finished returns the job as it was when the feed ended because the job
// was final and fully read (nil if the feed ended for another reason).
func (f *Feed) Finished() *spoolv1.Job { return f.finished }

// UntilReached reports whether the feed ended because it reached the
// request's UntilTime (an event past it, or, following, the clock past it
// and its grace) rather than the end of the job or of what is stored.
func (f *Feed) UntilReached() bool { return f.reached }

// Events yields events in sequence order. Batches are yielded as batches,
// trimmed to the requested start; see events.Unpack for one line per event.
// A missing job is an ErrNotFound error.
func (f *Feed) Events(ctx context.Context) iter.Seq2[*spoolv1.JobEvent, error] {
	return Decoded(f.Stored(ctx))
}

// Stored yields what Events yields as stored events: a batch yielded whole
// keeps the bytes it was stored as (events.Stored.Proto), and one the
// request cuts is decoded and cut.
func (f *Feed) Stored(ctx context.Context) iter.Seq2[*events.Stored, error] {
	return Flatten(f.Pages(ctx))
}

// Flatten yields the events of pages one by one.
func Flatten(pages iter.Seq2[[]*events.Stored, error]) iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		for page, err := range pages {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, st := range page {
				if !yield(st, nil) {
					return
				}
			}
		}
	}
}

// Pages yields what Stored yields a read of the store at a time: the
// events that were there together, for a reader that sends several in one
// message. Following a job, a page is what arrived since the last.
func (f *Feed) Pages(ctx context.Context) iter.Seq2[[]*events.Stored, error] {
	return func(yield func([]*events.Stored, error) bool) {
		c := feedCursor{next: max(1, f.r.FromSequence), line: f.r.FromLine}
		if j := f.r.Job; j != nil && j.GetJobId() == f.r.JobID && convert.State(j.GetState()).IsFinal() {
			// Nothing to watch for, and nothing to read the job again for.
			if f.readStored(ctx, &c, j, yield) {
				f.finished = j
			}
			return
		}
		for f.round(ctx, &c, yield) {
		}
	}
}

// feedCursor is where a feed goes on from.
type feedCursor struct {
	next int64 // the next sequence to yield
	line int64 // while > 0, seek by line: nothing yielded yet
}

// round reads what is stored from c and yields it, then, when following a
// job that is not final, waits for the next change; again says to go round
// once more. The round's watch ends with it, so the store keeps nothing
// for a feed that has stopped.
func (f *Feed) round(ctx context.Context, c *feedCursor, yield func([]*events.Stored, error) bool) (again bool) {
	watchCtx, unwatch := context.WithCancel(ctx)
	defer unwatch()
	changed := f.s.Watch(watchCtx, f.r.JobID)
	job, err := f.s.Get(ctx, f.r.JobID)
	if err != nil {
		yield(nil, err)
		return false
	}
	// The job was read before the log: if it was final then, the read
	// below sees every event it will ever have. Likewise, once the end
	// time and its grace have passed, this read is the last.
	final := convert.State(job.GetState()).IsFinal()
	untilLeft := f.untilLeft()
	if !f.readStored(ctx, c, job, yield) {
		return false
	}
	if final {
		f.finished = job
		return false
	}
	if !f.r.Follow {
		return false
	}
	if untilLeft <= 0 && !f.r.UntilTime.IsZero() {
		f.reached = true
		return false
	}
	var untilPassed <-chan time.Time
	if untilLeft > 0 {
		t := time.NewTimer(untilLeft)
		defer t.Stop()
		untilPassed = t.C
	}
	select {
	case <-changed:
		return true
	case <-untilPassed:
		return true
	case <-ctx.Done():
		yield(nil, ctx.Err())
		return false
	}
}

// untilLeft is how long until a following feed's end time and its grace
// have passed (0 or less: they have; always 0 with no end time).
func (f *Feed) untilLeft() time.Duration {
	if f.r.UntilTime.IsZero() {
		return 0
	}
	return time.Until(f.r.UntilTime.Add(f.r.UntilGrace))
}

// readStored yields what is stored from c up to the end of job's log as
// read (its last sequence), in pages that start at one item and double up
// to the feed's cap; ok is false when the feed must stop. The pages share
// a read session, so a store reads what bounds the log once for them all:
// anything committed after is the next round's, which the watch made
// before job was read wakes.
func (f *Feed) readStored(ctx context.Context, c *feedCursor, job *spoolv1.Job, yield func([]*events.Stored, error) bool) (ok bool) {
	if c.line == 0 && job.GetLastSequence() < c.next {
		return true // nothing stored past c
	}
	maxPage := f.r.MaxPage
	if maxPage <= 0 || maxPage > MaxFeedPage {
		maxPage = MaxFeedPage
	}
	growth := f.s.Limits().FeedGrowth
	if growth < 2 {
		growth = feedGrowth
	}
	req := store.ReadRequest{JobID: f.r.JobID, FromSequence: c.next, FromLine: c.line, Session: &store.ReadSession{}}
	for page := 1; ; page = min(growth*page, maxPage) {
		req.Limit = page
		read := 0
		var out []*events.Stored
		for st, err := range f.s.ReadStored(ctx, req) {
			if err != nil {
				yield(nil, err)
				return false
			}
			read++
			// The next page starts after this item, whether or not any
			// of it is yielded.
			req.FromSequence, req.FromLine = st.EndSequence+1, 0
			var past bool
			if st, past, err = f.cut(st, c); err != nil {
				yield(nil, err)
				return false
			}
			if st != nil {
				out = append(out, st)
			}
			if past {
				// Everything from here on was written after the end time.
				f.reached = true
				if len(out) > 0 {
					yield(out, nil)
				}
				return false
			}
		}
		if len(out) > 0 && !yield(out, nil) {
			return false
		}
		if read < page || (read > 0 && req.FromSequence > job.GetLastSequence()) {
			return true // the end of what is stored, or of the log as read
		}
	}
}

// cut returns what of a stored item the feed yields from c (nil: none of
// it), and moves c past the item; past says the item went past the end
// time, so the feed ends with it.
func (f *Feed) cut(st *events.Stored, c *feedCursor) (kept *events.Stored, past bool, err error) {
	if c.line > 0 {
		st, err = st.TrimBeforeLine(c.line)
	} else {
		st, err = st.TrimBefore(c.next)
	}
	if err != nil || st == nil {
		return nil, false, err
	}
	c.next, c.line = st.EndSequence+1, 0
	return f.filter(st)
}

// filter applies the type and time filters. Only the events wanted are
// decoded for their times: one left out for its type is not read further,
// and the next wanted one past the end time ends the feed as well.
func (f *Feed) filter(st *events.Stored) (kept *events.Stored, past bool, err error) {
	if len(f.r.Types) > 0 && !wantsType(f.r.Types, st.Type) {
		return nil, false, nil
	}
	if !f.r.UntilTime.IsZero() {
		if st, past, err = st.TrimAfterTime(f.r.UntilTime); err != nil || st == nil {
			return nil, past, err
		}
	}
	if !f.r.FromTime.IsZero() {
		st, err = st.TrimBeforeTime(f.r.FromTime)
	}
	return st, past, err
}

func wantsType(types []spoolv1.EventType, t spoolv1.EventType) bool {
	if events.IsOutput(t) {
		return slices.ContainsFunc(types, events.IsOutput)
	}
	return slices.Contains(types, t)
}
