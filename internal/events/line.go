package events

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Line is one line (or piece of a line) of a process's output, as the
// worker reads it and as a batch is built from it.
type Line struct {
	// Data is the line without its trailing newline; not necessarily
	// UTF-8. It should be at most the job's max_batch_bytes long (capture
	// splits longer lines; the output batcher splits any that still are).
	// A batch keeps Data, so the caller must not modify it after handing
	// it over.
	Data   []byte
	Stream spoolv1.StreamType
	// Partial: no newline followed Data; the line goes on in the next Line
	// of the same stream, or the output ended without a newline.
	Partial bool
	// Time is when the line was read (for the batcher: its clock's now if
	// zero).
	Time time.Time
}

// Batch describes an OUTPUT_BATCH event: a run of consecutive lines stored
// as one item. Event builds it; every part of spool that makes a batch
// (the worker's batcher, the test harness, tests) goes through it.
type Batch struct {
	// Sequence is the first line's; the batch covers Sequence to
	// Sequence+len(Lines)-1.
	Sequence int64
	Lines    []Line
	// Attempt is the attempt that printed the lines (0 when publishing: the
	// server records the lease's attempt).
	Attempt int32
	// FirstLine is the line number of Lines[0]: 0 when publishing (the
	// server assigns line numbers), set for a batch as a reader sees it.
	FirstLine int64
	// PlaybackIntervalMillis spaces the lines in a replay when they carry
	// no times (Untimed).
	PlaybackIntervalMillis int32
	// Untimed leaves out the per-line times; a reader then spaces the lines
	// from the first line's time by the playback interval.
	Untimed bool
}

// Event builds the OUTPUT_BATCH event. Its timestamp is the first line's
// time. The lines' bytes are shared, not copied.
func (b Batch) Event() *spoolv1.JobEvent {
	n := len(b.Lines)
	// One allocation for all items instead of one each: they live and die
	// together with the event.
	items := make([]spoolv1.OutputItem, n)
	outputs := make([]*spoolv1.OutputItem, n)
	var times []int64
	if !b.Untimed {
		times = make([]int64, n)
	}
	for i, l := range b.Lines {
		items[i].Output, items[i].Stream, items[i].Partial = l.Data, l.Stream, l.Partial
		outputs[i] = &items[i]
		if times != nil {
			times[i] = l.Time.UnixMilli()
		}
	}
	var first time.Time
	if n > 0 {
		first = b.Lines[0].Time
	}
	return &spoolv1.JobEvent{
		Sequence:  b.Sequence,
		Timestamp: timestamppb.New(first),
		EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH,
		Attempt:   b.Attempt,
		EventData: &spoolv1.JobEvent_OutputBatch{OutputBatch: &spoolv1.OutputBatchEvent{
			Outputs:                outputs,
			StartSequence:          b.Sequence,
			EndSequence:            b.Sequence + int64(n) - 1,
			Timestamps:             times,
			PlaybackIntervalMillis: b.PlaybackIntervalMillis,
			FirstLine:              b.FirstLine,
		}},
	}
}

// TextLines returns lines on stdout with the given texts, all at time at:
// the shape tests and examples most often need.
func TextLines(at time.Time, texts ...string) []Line {
	out := make([]Line, len(texts))
	for i, t := range texts {
		out[i] = Line{Data: []byte(t), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Time: at}
	}
	return out
}
