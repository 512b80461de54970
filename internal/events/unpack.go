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
	lines := b.GetOutputs()
	n := len(lines)
	timed := len(b.GetTimestamps()) == n
	// One allocation of each kind for the whole batch instead of four per
	// line: a reader unpacks every line it reads, and the events live and
	// die together with the batch.
	var (
		out   = make([]*spoolv1.JobEvent, n)
		evs   = make([]spoolv1.JobEvent, n)
		datas = make([]spoolv1.OutputEvent, n)
		wraps = make([]spoolv1.JobEvent_OutputData, n)
		times = make([]timestamppb.Timestamp, n)
	)
	for i, o := range lines {
		t := base.Add(time.Duration(i) * step)
		if timed {
			t = time.UnixMilli(b.GetTimestamps()[i])
		}
		times[i].Seconds, times[i].Nanos = t.Unix(), int32(t.Nanosecond())
		datas[i].Output, datas[i].Stream, datas[i].LineNumber, datas[i].Partial = o.GetOutput(), o.GetStream(), b.GetFirstLine()+int64(i), o.GetPartial()
		wraps[i].OutputData = &datas[i]
		e := &evs[i]
		e.Sequence, e.Timestamp, e.EventType, e.Attempt = b.GetStartSequence()+int64(i), &times[i], spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, ev.GetAttempt()
		e.EventData = &wraps[i]
		out[i] = e
	}
	return out
}

func millis(ms int64) *timestamppb.Timestamp {
	return timestamppb.New(time.UnixMilli(ms))
}
