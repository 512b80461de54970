package outbox

import (
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// Event is an event read back from an outbox: a process event, as its
// message, or a batch of output lines, which becomes a message only when
// asked for: a batch sent encoded is encoded straight from its lines.
type Event struct {
	msg   *spoolv1.JobEvent // nil for a batch
	batch events.Batch
}

// MessageEvent wraps a message.
func MessageEvent(ev *spoolv1.JobEvent) Event { return Event{msg: ev} }

// BatchEvent wraps a batch.
func BatchEvent(b events.Batch) Event { return Event{batch: b} }

// Sequence is the event's first sequence.
func (e Event) Sequence() int64 {
	if e.msg != nil {
		return e.msg.GetSequence()
	}
	return e.batch.Sequence
}

// EndSequence is the event's last sequence.
func (e Event) EndSequence() int64 {
	if e.msg != nil {
		return events.EndSequence(e.msg)
	}
	return e.batch.Sequence + int64(len(e.batch.Lines)) - 1
}

// LineCount is how many output lines the event holds.
func (e Event) LineCount() int64 {
	if e.msg != nil {
		return events.LineCount(e.msg)
	}
	return int64(len(e.batch.Lines))
}

// FirstLineTime is when the first line of a batch was read (zero for an
// event that is not a batch): the worker's flush latency starts there.
func (e Event) FirstLineTime() time.Time {
	if e.msg != nil || len(e.batch.Lines) == 0 {
		return time.Time{}
	}
	return e.batch.Lines[0].Time
}

// Attempt is the attempt that wrote the event.
func (e Event) Attempt() int32 {
	if e.msg != nil {
		return e.msg.GetAttempt()
	}
	return e.batch.Attempt
}

// Message is the event as a message (built, for a batch).
func (e Event) Message() *spoolv1.JobEvent {
	if e.msg != nil {
		return e.msg
	}
	return e.batch.Event()
}

// Encode is the event as a store keeps it (events.Encode).
func (e Event) Encode() ([]byte, error) {
	if e.msg != nil {
		return events.Encode(e.msg)
	}
	return events.EncodeBatch(e.batch), nil
}

// Messages is the events as messages.
func Messages(evs []Event) []*spoolv1.JobEvent {
	out := make([]*spoolv1.JobEvent, len(evs))
	for i, e := range evs {
		out[i] = e.Message()
	}
	return out
}
