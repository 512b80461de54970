package events

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// DefaultPlaybackInterval spaces replayed lines that carry no timestamps.
const DefaultPlaybackInterval = 50 * time.Millisecond

// Unpack expands an event into the events a reader sees one by one: a batch
// becomes one OUTPUT_DATA event per line, with its sequence, line number and
// timestamp (recorded, or the batch's time plus the playback interval per
// line when none was recorded). Other events are returned as they are.
func Unpack(ev *spoolv1.JobEvent) []*spoolv1.JobEvent {
	b := ev.GetOutputBatch()
	if b == nil {
		return []*spoolv1.JobEvent{ev}
	}
	step := DefaultPlaybackInterval
	if b.GetPlaybackIntervalMillis() > 0 {
		step = time.Duration(b.GetPlaybackIntervalMillis()) * time.Millisecond
	}
	base := ev.GetTimestamp().AsTime()
	out := make([]*spoolv1.JobEvent, len(b.GetOutputs()))
	for i, o := range b.GetOutputs() {
		var ts *timestamppb.Timestamp
		if len(b.GetTimestamps()) == len(b.GetOutputs()) {
			ts = millis(b.GetTimestamps()[i])
		} else {
			ts = timestamppb.New(base.Add(time.Duration(i) * step))
		}
		out[i] = &spoolv1.JobEvent{
			Sequence:  b.GetStartSequence() + int64(i),
			Timestamp: ts,
			EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA,
			Attempt:   ev.GetAttempt(),
			EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{
				Output:     o.GetOutput(),
				Stream:     o.GetStream(),
				LineNumber: b.GetFirstLine() + int64(i),
				Partial:    o.GetPartial(),
			}},
		}
	}
	return out
}

func millis(ms int64) *timestamppb.Timestamp {
	return timestamppb.New(time.UnixMilli(ms))
}
