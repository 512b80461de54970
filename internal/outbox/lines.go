package outbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// Output lines reach the outbox as they are read, before they are batched:
// a worker killed by SIGKILL loses nothing its command printed (a write to
// the page cache survives the process). Each line is a record of its own,
// numbered from 0 within the attempt, and all the lines of one read go to
// disk in one write. When the batcher flushes, a small batch record names
// the sequence the lines get and which lines they are; the reader rebuilds
// the OUTPUT_BATCH from the lines it has read. Lines no batch record claims
// (the batcher had them in memory when the worker died) are batched by the
// reader of a sealed outbox, with the job's own limits.

// BatchLimits are the job's batching limits, kept in the header so the
// reader of a reopened outbox batches unclaimed lines as the worker would.
type BatchLimits struct {
	MaxLines       int   `json:"max_lines"`
	MaxBytes       int64 `json:"max_bytes"`
	PlaybackMillis int32 `json:"playback_millis,omitempty"`
}

// line payload: uvarint index | stream | flags | varint Unix ms | data.
const flagPartial = 1

func appendLinePayload(dst []byte, index int64, l events.Line) []byte {
	dst = binary.AppendUvarint(dst, uint64(index))
	var flags byte
	if l.Partial {
		flags |= flagPartial
	}
	dst = append(dst, byte(l.Stream), flags)
	dst = binary.AppendVarint(dst, l.Time.UnixMilli())
	return append(dst, l.Data...)
}

func decodeLine(p []byte) (int64, events.Line, error) {
	index, n := binary.Uvarint(p)
	if n <= 0 || len(p) < n+2 {
		return 0, events.Line{}, errors.New("outbox: malformed line record")
	}
	p = p[n:]
	l := events.Line{Stream: spoolv1.StreamType(p[0]), Partial: p[1]&flagPartial != 0}
	ms, m := binary.Varint(p[2:])
	if m <= 0 {
		return 0, events.Line{}, errors.New("outbox: malformed line record")
	}
	l.Time = time.UnixMilli(ms)
	l.Data = p[2+m:]
	return int64(index), l, nil
}

// batch payload: uvarint index of its first line | the OUTPUT_BATCH event
// without its outputs and timestamps.
func appendBatchPayload(dst []byte, first int64, b events.Batch) ([]byte, error) {
	n := int64(len(b.Lines))
	stripped := &spoolv1.JobEvent{Sequence: b.Sequence, Timestamp: timestamppb.New(b.Lines[0].Time), EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH,
		Attempt: b.Attempt,
		EventData: &spoolv1.JobEvent_OutputBatch{OutputBatch: &spoolv1.OutputBatchEvent{
			StartSequence: b.Sequence, EndSequence: b.Sequence + n - 1, PlaybackIntervalMillis: b.PlaybackIntervalMillis, FirstLine: b.FirstLine,
		}}}
	dst = binary.AppendUvarint(dst, uint64(first))
	return proto.MarshalOptions{}.MarshalAppend(dst, stripped)
}

func decodeBatch(p []byte) (first int64, ev *spoolv1.JobEvent, err error) {
	f, n := binary.Uvarint(p)
	if n <= 0 {
		return 0, nil, errors.New("outbox: malformed batch record")
	}
	ev = &spoolv1.JobEvent{}
	if err := proto.Unmarshal(p[n:], ev); err != nil || ev.GetOutputBatch() == nil {
		return 0, nil, fmt.Errorf("outbox: malformed batch record: %v", err)
	}
	return int64(f), ev, nil
}

// pendingLines are the lines read from disk that no batch has claimed
// yet, in order. The lines are kept side by side, so that a batch claiming
// n of them takes them as they are (a slice, no copy), and in arrays of at
// least pendingBlock lines, made anew when one is full instead of grown:
// a batch keeps its lines, and the front of the queue is always moving on.
type pendingLines struct {
	lines []events.Line
	at    []lineAt
}

// lineAt is where a pending line is: its index in the attempt and the
// segment it is in.
type lineAt struct {
	index int64
	seg   int
}

const pendingBlock = 1024

func (p *pendingLines) len() int { return len(p.lines) }

// add appends a line.
func (p *pendingLines) add(l events.Line, at lineAt) {
	if len(p.lines) == cap(p.lines) {
		n := max(2*len(p.lines), pendingBlock)
		p.lines = append(make([]events.Line, 0, n), p.lines...)
		p.at = append(make([]lineAt, 0, n), p.at...)
	}
	p.lines, p.at = append(p.lines, l), append(p.at, at)
}

// take removes the first n lines and returns them.
func (p *pendingLines) take(n int) []events.Line {
	lines := p.lines[:n:n]
	p.lines, p.at = p.lines[n:], p.at[n:]
	return lines
}

// claim builds the batch a batch record describes from the pending lines.
// ok is false when its lines are no longer on disk: the batch was
// acknowledged before the outbox was reopened (segments are only deleted
// once all their lines are claimed and acknowledged), so it is skipped.
func (o *Outbox) claim(first int64, ev *spoolv1.JobEvent) (_ events.Batch, ok bool, err error) {
	n := ev.GetOutputBatch().GetEndSequence() - ev.GetOutputBatch().GetStartSequence() + 1
	// Lines before the batch's first are claimed by batches whose records
	// were deleted with their segment: drop them.
	p := &o.pending
	for p.len() > 0 && p.at[0].index < first {
		p.take(1)
	}
	if p.len() == 0 || p.at[0].index != first {
		return events.Batch{}, false, nil
	}
	if int64(p.len()) < n {
		return events.Batch{}, false, fmt.Errorf("outbox %s: batch %d claims %d lines from %d; only %d are written", o.path, ev.GetSequence(), n, first, p.len())
	}
	lines := p.take(int(n))
	// The batch's time is the one recorded with it, to the nanosecond;
	// its lines' are kept to the millisecond.
	lines[0].Time = ev.GetTimestamp().AsTime()
	return events.Batch{Sequence: ev.GetSequence(), Lines: lines, Attempt: ev.GetAttempt(),
		PlaybackIntervalMillis: ev.GetOutputBatch().GetPlaybackIntervalMillis(), FirstLine: o.lineNumber(first)}, true, nil
}

// lineNumber is the line number of the attempt's line at index (from 0),
// or 0 when the header does not say where the attempt's lines start.
func (o *Outbox) lineNumber(index int64) int64 {
	if o.header.FirstLine == 0 {
		return 0
	}
	return o.header.FirstLine + index
}

// claimBytes is the output a batch record's lines hold (0 when they are no
// longer on disk), without claiming them.
func (o *Outbox) claimBytes(first int64, ev *spoolv1.JobEvent) int64 {
	n := ev.GetOutputBatch().GetEndSequence() - ev.GetOutputBatch().GetStartSequence() + 1
	var size int64
	for i, at := range o.pending.at {
		if at.index >= first+n {
			break
		}
		if at.index >= first {
			size += int64(len(o.pending.lines[i].Data))
		}
	}
	return size
}

// tail batches the lines no batch record claimed, continuing the sequences
// after the last event read, within the header's limits: at most maxEvents
// batches and about maxBytes of output (at least one batch) at a time.
func (o *Outbox) tail(maxEvents int, maxChunk int64) []Event {
	lim := o.header.Batch
	maxLines, maxBytes := max(lim.MaxLines, 1), lim.MaxBytes
	var (
		out   []Event
		total int64
	)
	p := &o.pending
	for p.len() > 0 && len(out) < maxEvents && (len(out) == 0 || total < maxChunk) {
		var (
			n     int
			size  int64
			first = o.lineNumber(p.at[0].index)
		)
		for n < p.len() && n < maxLines {
			l := p.lines[n].Data
			if n > 0 && maxBytes > 0 && size+int64(len(l)) > maxBytes {
				break
			}
			n, size = n+1, size+int64(len(l))
		}
		lines := p.take(n)
		b := events.Batch{Sequence: o.nextSeq, Lines: lines, Attempt: o.header.Attempt, PlaybackIntervalMillis: lim.PlaybackMillis, FirstLine: first}
		o.nextSeq += int64(len(lines))
		out = append(out, BatchEvent(b))
		total += size
	}
	return out
}
