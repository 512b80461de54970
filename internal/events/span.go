package events

import (
	"time"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// EndSequence is the last sequence an event covers: a batch's end_sequence,
// or the event's own sequence.
func EndSequence(ev *spoolv1.JobEvent) int64 {
	if b := ev.GetOutputBatch(); b != nil {
		return b.GetEndSequence()
	}
	return ev.GetSequence()
}

// LineCount is how many output lines an event holds.
func LineCount(ev *spoolv1.JobEvent) int64 {
	switch d := ev.GetEventData().(type) {
	case *spoolv1.JobEvent_OutputBatch:
		return int64(len(d.OutputBatch.GetOutputs()))
	case *spoolv1.JobEvent_OutputData:
		return 1
	}
	return 0
}

// FirstLine is the line number of an event's first output line (0 if it
// holds none).
func FirstLine(ev *spoolv1.JobEvent) int64 {
	switch d := ev.GetEventData().(type) {
	case *spoolv1.JobEvent_OutputBatch:
		return d.OutputBatch.GetFirstLine()
	case *spoolv1.JobEvent_OutputData:
		return d.OutputData.GetLineNumber()
	}
	return 0
}

// OutputBytes is the number of output bytes an event carries.
func OutputBytes(ev *spoolv1.JobEvent) int64 {
	switch d := ev.GetEventData().(type) {
	case *spoolv1.JobEvent_OutputBatch:
		var n int64
		for _, o := range d.OutputBatch.GetOutputs() {
			n += int64(len(o.GetOutput()))
		}
		return n
	case *spoolv1.JobEvent_OutputData:
		return int64(len(d.OutputData.GetOutput()))
	}
	return 0
}

// IsOutput reports whether the event carries output lines.
func IsOutput(t spoolv1.EventType) bool {
	return t == spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH || t == spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA
}

// IsCritical reports whether an event marks a change in the process's life
// (start, end, error): such events are stored as items of their own and
// make the batcher flush first.
func IsCritical(t spoolv1.EventType) bool {
	switch t {
	case spoolv1.EventType_EVENT_TYPE_PROCESS_START, spoolv1.EventType_EVENT_TYPE_PROCESS_END, spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR:
		return true
	}
	return false
}

// BatchFloor is the batch-adjusted lower bound of a read from a sequence:
// the batch containing sequence from cannot start before it when no batch
// holds more than maxBatchSize sequences. Backends without an ordered index on a batch's
// end use it to bound their scan; the others seek exactly.
func BatchFloor(from, maxBatchSize int64) int64 {
	return max(1, from-maxBatchSize+1)
}

// TrimBefore returns the part of ev at or after sequence seq: ev itself when
// it starts there or later, nil when it ends before, or a new batch holding
// the tail. ev is not modified.
func TrimBefore(ev *spoolv1.JobEvent, seq int64) *spoolv1.JobEvent {
	skip, keep := HeaderOf(ev).fromSequence(seq)
	return cut(ev, skip, keep)
}

// TrimBeforeLine returns the part of ev at or after output line line: ev
// itself when its lines start there or later (or it holds none: a store read
// from a line only yields such events when they follow line-1), nil when its
// lines end before, or a new batch holding the tail. ev is not modified.
func TrimBeforeLine(ev *spoolv1.JobEvent, line int64) *spoolv1.JobEvent {
	skip, keep := HeaderOf(ev).fromLine(line)
	return cut(ev, skip, keep)
}

// fromSequence says what of an event is at or after sequence seq: all of
// it (skip 0), none (keep false), or all but its first skip lines (only a
// batch spans several sequences).
func (h Header) fromSequence(seq int64) (skip int64, keep bool) {
	switch {
	case h.Sequence >= seq:
		return 0, true
	case h.EndSequence < seq:
		return 0, false
	}
	return seq - h.Sequence, true
}

// fromLine says what of an event is at or after output line line, as
// fromSequence does for a sequence.
func (h Header) fromLine(line int64) (skip int64, keep bool) {
	switch {
	case h.LineCount == 0 || h.FirstLine >= line:
		return 0, true
	case h.FirstLine+h.LineCount-1 < line:
		return 0, false
	}
	return line - h.FirstLine, true
}

// cut applies what fromSequence or fromLine said to ev.
func cut(ev *spoolv1.JobEvent, skip int64, keep bool) *spoolv1.JobEvent {
	switch {
	case !keep:
		return nil
	case skip == 0:
		return ev
	}
	return sliceBatch(ev, int(skip))
}

// sliceBatch returns a copy of batch ev without its first k lines. A
// corrupt batch whose sequences claim more lines than it holds loses them
// all rather than crash its reader.
func sliceBatch(ev *spoolv1.JobEvent, k int) *spoolv1.JobEvent {
	b := ev.GetOutputBatch()
	k = min(k, len(b.GetOutputs()))
	out := proto.CloneOf(ev)
	nb := out.GetOutputBatch()
	nb.Outputs = nb.Outputs[k:]
	if len(b.GetTimestamps()) == len(b.GetOutputs()) {
		nb.Timestamps = nb.Timestamps[k:]
	}
	nb.StartSequence += int64(k)
	nb.FirstLine += int64(k)
	out.Sequence = nb.StartSequence
	if len(nb.Timestamps) > 0 {
		out.Timestamp = millis(nb.Timestamps[0])
	}
	return out
}

// TrimBeforeTime returns the part of ev written at or after t: lines of a
// batch are kept from the first one whose recorded time is not before t;
// other events are kept whole or dropped by their timestamp.
func TrimBeforeTime(ev *spoolv1.JobEvent, t time.Time) *spoolv1.JobEvent {
	ms := t.UnixMilli()
	b := ev.GetOutputBatch()
	if b == nil || len(b.GetTimestamps()) != len(b.GetOutputs()) {
		if ev.GetTimestamp().AsTime().Before(t) {
			return nil
		}
		return ev
	}
	for i, ts := range b.GetTimestamps() {
		if ts >= ms {
			if i == 0 {
				return ev
			}
			return sliceBatch(ev, i)
		}
	}
	return nil
}

// TrimAfterTime returns the part of ev written at or before t, and whether
// anything of ev was written after t (so a reader going forward in time
// has reached t): lines of a batch are kept up to the last one before the
// first whose recorded time is after t; other events are kept whole or
// dropped by their timestamp. Times are compared to the millisecond, as
// lines record them.
func TrimAfterTime(ev *spoolv1.JobEvent, t time.Time) (kept *spoolv1.JobEvent, past bool) {
	ms := t.UnixMilli()
	b := ev.GetOutputBatch()
	if b == nil || len(b.GetTimestamps()) != len(b.GetOutputs()) {
		if ev.GetTimestamp().AsTime().UnixMilli() > ms {
			return nil, true
		}
		return ev, false
	}
	for i, ts := range b.GetTimestamps() {
		if ts > ms {
			if i == 0 {
				return nil, true
			}
			return headOfBatch(ev, i), true
		}
	}
	return ev, false
}

// headOfBatch returns a copy of batch ev with only its first k lines
// (0 < k < its line count).
func headOfBatch(ev *spoolv1.JobEvent, k int) *spoolv1.JobEvent {
	out := proto.CloneOf(ev)
	nb := out.GetOutputBatch()
	nb.Outputs = nb.Outputs[:k]
	nb.Timestamps = nb.Timestamps[:k]
	nb.EndSequence = nb.StartSequence + int64(k) - 1
	return out
}
