package storekit

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// Item is one event as a store keeps it: its encoded payload, and the keys
// readers seek by.
type Item struct {
	// Event is the event as a message when the store encoded it (with
	// first_line and attempt filled in); nil for an event stored as it was
	// published (events.Published).
	Event       *spoolv1.JobEvent
	Payload     []byte
	Sequence    int64
	EndSequence int64
	// FirstLine and LineCount: the output lines the item holds (0, 0 for
	// events without output).
	FirstLine int64
	LineCount int64
	// SeekLine orders items by line, so a read from line L can seek to the
	// first item with SeekLine >= L: an output item's last line, or for an
	// event without output, the line that follows it. It never decreases
	// along the log.
	SeekLine int64
	Type     spoolv1.EventType
	Attempt  int32
	Time     time.Time
}

// Repeat is an event published again at a sequence already stored (a retry
// after a lost response). It is accepted when the stored item matches.
type Repeat struct {
	Sequence    int64
	EndSequence int64
	Attempt     int32
}

// Check reports whether the stored item at r.Sequence is the one repeated.
func (r Repeat) Check(storedEnd int64, storedAttempt int32, found bool) error {
	if !found {
		return apierr.Errorf(spool.ErrInvalidArgument, "sequence %d is below the log's head but nothing is stored there", r.Sequence)
	}
	if storedEnd != r.EndSequence || storedAttempt != r.Attempt {
		return apierr.Errorf(spool.ErrInvalidArgument, "sequence %d is already stored with different content (sequences %d-%d of attempt %d)",
			r.Sequence, r.Sequence, storedEnd, storedAttempt)
	}
	return nil
}

// AppendPlan is what a store must do to append a set of events.
type AppendPlan struct {
	// Repeats must each match a stored item (Repeat.Check).
	Repeats []Repeat
	// Items are new, in order, continuing the log at the old head.
	Items []Item
	// Head is the log's head once Items are stored.
	Head store.Head
}

// MaxProcessEventBytes bounds an event that is not output (a process start
// with its command, an end, an error): the longest script a job may have,
// with room to spare.
const MaxProcessEventBytes = 1 << 20

// PlanAppend checks events published under a lease of attempt against the
// job's log head and batching config, and says what to store.
//
// The rules, the same in every store: events come in sequence order without
// gaps; an event wholly below the head repeats one already stored (accepted
// if it matches, so a retried publish changes nothing); the first new event
// starts exactly at the head; batches are consistent (start/end sequences,
// timestamps), hold at most max_batch_size lines and max_batch_bytes bytes of
// output, and fit the backend's item limit. Line numbers are assigned here:
// an event's first line (a batch's first_line, a line's line_number) must
// be 0 (unset) or the head's next line. An encoded event that already
// carries its attempt and line numbers is stored as it came.
func PlanAppend(head store.Head, attempt int32, cfg *spoolv1.BatchingConfig, lim store.Limits, evs []events.Published) (AppendPlan, error) {
	plan := AppendPlan{Head: head}
	var prevEnd int64
	for i, ev := range evs {
		if err := checkEvent(ev.Summary, attempt, cfg); err != nil {
			return AppendPlan{}, err
		}
		seq, end := ev.Sequence, ev.EndSequence
		if i > 0 && seq != prevEnd+1 {
			return AppendPlan{}, apierr.Errorf(spool.ErrInvalidArgument, "events out of order: sequence %d follows %d", seq, prevEnd)
		}
		prevEnd = end
		switch {
		case end < plan.Head.NextSequence && len(plan.Items) == 0:
			plan.Repeats = append(plan.Repeats, Repeat{Sequence: seq, EndSequence: end, Attempt: attempt})
			continue
		case seq < plan.Head.NextSequence:
			return AppendPlan{}, apierr.Errorf(spool.ErrInvalidArgument, "event %d-%d overlaps the stored log, whose next sequence is %d", seq, end, plan.Head.NextSequence)
		case seq > plan.Head.NextSequence:
			return AppendPlan{}, apierr.Errorf(spool.ErrInvalidArgument, "gap in the log: expected sequence %d, got %d", plan.Head.NextSequence, seq)
		}
		it, err := newItem(ev, attempt, plan.Head, lim)
		if err != nil {
			return AppendPlan{}, err
		}
		plan.Items = append(plan.Items, it)
		plan.Head = store.Head{NextSequence: end + 1, NextLine: plan.Head.NextLine + it.LineCount}
	}
	return plan, nil
}

// checkEvent validates one event on its own.
func checkEvent(s events.Summary, attempt int32, cfg *spoolv1.BatchingConfig) error {
	seq := s.Sequence
	if seq < 1 {
		return apierr.Errorf(spool.ErrInvalidArgument, "event sequence must be at least 1, got %d", seq)
	}
	if !s.HasTime {
		return apierr.Errorf(spool.ErrInvalidArgument, "event %d has no timestamp", seq)
	}
	if a := s.Attempt; a != 0 && a != attempt {
		return apierr.Errorf(spool.ErrInvalidArgument, "event %d says attempt %d but the lease is for attempt %d", seq, a, attempt)
	}
	if s.Type == spoolv1.EventType_EVENT_TYPE_UNSPECIFIED || s.DataType != s.Type {
		return apierr.Errorf(spool.ErrInvalidArgument, "event %d: event_type %s does not match its data", seq, s.Type)
	}
	switch s.Type {
	case spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA:
		if max := cfg.GetMaxBatchBytes(); max > 0 && s.OutputBytes > max {
			return apierr.Errorf(spool.ErrInvalidArgument, "event %d: a line of %d bytes; the job's max_batch_bytes is %d (split longer lines)", seq, s.OutputBytes, max)
		}
	case spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH:
		n := s.LineCount
		switch {
		case n == 0:
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d has no outputs", seq)
		case s.StartSequence != seq:
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d: start_sequence %d differs from the event's sequence", seq, s.StartSequence)
		case s.EndSequence != seq+n-1:
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d: end_sequence is %d but %d outputs end at %d", seq, s.EndSequence, n, seq+n-1)
		case s.Timestamps != 0 && int64(s.Timestamps) != n:
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d: %d timestamps for %d outputs", seq, s.Timestamps, n)
		case cfg.GetMaxBatchSize() > 0 && n > int64(cfg.GetMaxBatchSize()):
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d holds %d lines; the job's max_batch_size is %d", seq, n, cfg.GetMaxBatchSize())
		case cfg.GetMaxBatchBytes() > 0 && s.OutputBytes > cfg.GetMaxBatchBytes():
			return apierr.Errorf(spool.ErrInvalidArgument, "batch %d holds %d bytes of output; the job's max_batch_bytes is %d", seq, s.OutputBytes, cfg.GetMaxBatchBytes())
		}
	default:
		// Process events carry a little text (the command, an error); a
		// bound keeps every stored item readable whatever it compresses to.
		if s.Size > MaxProcessEventBytes {
			return apierr.Errorf(spool.ErrInvalidArgument, "event %d (%s) is %d bytes; at most %d", seq, s.Type, s.Size, MaxProcessEventBytes)
		}
		return nil
	}
	if s.HasBadStream {
		return apierr.Errorf(spool.ErrInvalidArgument, "event %d: output stream must be STDOUT or STDERR, got %s", seq, s.BadStream)
	}
	return nil
}

// newItem fills in the server-assigned fields and encodes the event, or
// takes an encoded event as it is when it already carries them.
func newItem(p events.Published, attempt int32, head store.Head, lim store.Limits) (Item, error) {
	seq := p.Sequence
	if p.LineCount > 0 && p.FirstLine != 0 && p.FirstLine != head.NextLine {
		what := "first_line"
		if p.Type == spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA {
			what = "line_number"
		}
		return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "event %d: %s %d but the log's next line is %d", seq, what, p.FirstLine, head.NextLine)
	}
	it := Item{
		Sequence:    seq,
		EndSequence: p.EndSequence,
		LineCount:   p.LineCount,
		Type:        p.Type,
		Attempt:     attempt,
		Time:        p.Time,
		SeekLine:    head.NextLine,
	}
	if it.LineCount > 0 {
		it.FirstLine = head.NextLine
		it.SeekLine = head.NextLine + it.LineCount - 1
	}
	if payload := p.Payload(); payload != nil && p.Attempt == attempt && (p.LineCount == 0 || p.FirstLine == head.NextLine) {
		// Stored as it came, in the store's codec.
		var err error
		if it.Payload, err = lim.Codec.Recode(payload); err != nil {
			return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "event %d: %w", seq, err)
		}
	} else {
		ev, err := p.Message()
		if err != nil {
			return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "%w", err)
		}
		ev = proto.CloneOf(ev)
		ev.Attempt = attempt
		switch d := ev.GetEventData().(type) {
		case *spoolv1.JobEvent_OutputBatch:
			d.OutputBatch.FirstLine = it.FirstLine
		case *spoolv1.JobEvent_OutputData:
			d.OutputData.LineNumber = it.FirstLine
		}
		if it.Payload, err = lim.Codec.Encode(ev); err != nil {
			return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "%w", err)
		}
		it.Event = ev
		p.Size = proto.Size(ev)
	}
	// What a reader decodes must stay within what it may decode, whatever
	// the payload compresses to: a log is always readable.
	if p.Size > events.MaxDecodedBytes {
		return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "event %d is %d bytes before compression; at most %d", seq, p.Size, events.MaxDecodedBytes)
	}
	if lim.MaxItemBytes > 0 && len(it.Payload) > lim.MaxItemBytes {
		return Item{}, apierr.Errorf(spool.ErrInvalidArgument, "event %d encodes to %d bytes; this store holds at most %d per item (lower max_batch_bytes)",
			seq, len(it.Payload), lim.MaxItemBytes)
	}
	return it, nil
}

// ItemFromPayload reads an item's stored payload (as far as its header:
// see events.Stored), checking it is the one the keys describe.
func ItemFromPayload(payload []byte, seq int64) (*events.Stored, error) {
	st, err := events.DecodeStored(payload)
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	if st.Sequence != seq {
		return nil, fmt.Errorf("event stored at sequence %d says it is %d: %w", seq, st.Sequence, events.ErrCorrupt)
	}
	return st, nil
}

// ItemFromColumns is a stored item whose header its store read from the
// columns it keeps beside the payload: the payload is not read until
// something needs it (events.StoredAs).
func ItemFromColumns(seq, end, firstLine, lineCount int64, typ int32, payload []byte) *events.Stored {
	return events.StoredAs(events.Header{Sequence: seq, EndSequence: end, Type: spoolv1.EventType(typ), FirstLine: firstLine, LineCount: lineCount}, payload)
}
