package events

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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
	step := playbackStep(b.GetPlaybackIntervalMillis())
	base := ev.GetTimestamp().AsTime()
	lines := b.GetOutputs()
	timed := len(b.GetTimestamps()) == len(lines)
	out := newLineEvents(len(lines))
	for i, o := range lines {
		t := base.Add(time.Duration(i) * step)
		if timed {
			t = time.UnixMilli(b.GetTimestamps()[i])
		}
		out.set(i, b.GetStartSequence()+int64(i), t, ev.GetAttempt(), o.GetOutput(), o.GetStream(), b.GetFirstLine()+int64(i), o.GetPartial())
	}
	return out.out
}

// playbackStep spaces replayed lines that carry no times.
func playbackStep(millis int32) time.Duration {
	if millis > 0 {
		return time.Duration(millis) * time.Millisecond
	}
	return DefaultPlaybackInterval
}

// lineEvents are the OUTPUT_DATA events a batch unpacks to, made with one
// allocation of each kind for the whole batch instead of four per line: a
// reader unpacks every line it reads, and the events live and die
// together with the batch.
type lineEvents struct {
	out   []*spoolv1.JobEvent
	evs   []spoolv1.JobEvent
	datas []spoolv1.OutputEvent
	wraps []spoolv1.JobEvent_OutputData
	times []timestamppb.Timestamp
}

func newLineEvents(n int) lineEvents {
	return lineEvents{out: make([]*spoolv1.JobEvent, n), evs: make([]spoolv1.JobEvent, n), datas: make([]spoolv1.OutputEvent, n),
		wraps: make([]spoolv1.JobEvent_OutputData, n), times: make([]timestamppb.Timestamp, n)}
}

// set makes event i.
func (l lineEvents) set(i int, seq int64, t time.Time, attempt int32, data []byte, stream spoolv1.StreamType, line int64, partial bool) {
	l.times[i].Seconds, l.times[i].Nanos = t.Unix(), int32(t.Nanosecond())
	l.datas[i].Output, l.datas[i].Stream, l.datas[i].LineNumber, l.datas[i].Partial = data, stream, line, partial
	l.wraps[i].OutputData = &l.datas[i]
	e := &l.evs[i]
	e.Sequence, e.Timestamp, e.EventType, e.Attempt = seq, &l.times[i], spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, attempt
	e.EventData = &l.wraps[i]
	l.out[i] = e
}

func millis(ms int64) *timestamppb.Timestamp {
	return timestamppb.New(time.UnixMilli(ms))
}

// Unpack is Unpack of the stored event. A batch in the shape Encode writes
// is unpacked straight from its protobuf into its lines' events, without
// decoding it into a message first: a reader of a whole log unpacks every
// batch it reads, and decoding each line into a message only to copy it
// out again was most of that work. The lines' bytes share the stored
// event's buffer.
func (s *Stored) Unpack() ([]*spoolv1.JobEvent, error) {
	if s.ev != nil {
		return Unpack(s.ev), nil
	}
	body, err := s.body()
	if err != nil {
		return nil, err
	}
	var b rawBatch
	if b.read(body) == nil {
		return b.unpack(), nil
	}
	ev, err := s.Event()
	if err != nil {
		return nil, err
	}
	return Unpack(ev), nil
}

// rawBatch is an OUTPUT_BATCH event read from its protobuf as far as
// unpacking needs: its lines stay in the protobuf's bytes.
type rawBatch struct {
	start, firstLine int64
	attempt          int32
	sec, nanos       int64
	playback         int32
	lines            []rawLine
	times            []byte // the packed timestamps
	nTimes           int
}

type rawLine struct {
	data    []byte
	stream  spoolv1.StreamType
	partial bool
}

// read reads r from an OUTPUT_BATCH event's protobuf in the shape inspect
// reads, in the same pass (errUnusual otherwise, for Unpack of the decoded
// event to handle).
func (r *rawBatch) read(body []byte) error {
	r.lines = make([]rawLine, 0, 64)
	s, err := inspectInto(body, r)
	if err != nil || s.Type != spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH || s.DataType != s.Type {
		return errUnusual
	}
	r.attempt, r.firstLine, r.start, r.nTimes = s.Attempt, s.FirstLine, s.StartSequence, s.Timestamps
	if s.HasTime { // without one, a decoded event's time is the Unix epoch
		r.sec, r.nanos = s.Time.Unix(), int64(s.Time.Nanosecond())
	}
	return nil
}

// unpack is Unpack of the batch.
func (r *rawBatch) unpack() []*spoolv1.JobEvent {
	step := playbackStep(r.playback)
	base := time.Unix(r.sec, r.nanos)
	timed := r.nTimes == len(r.lines)
	out := newLineEvents(len(r.lines))
	packed := r.times
	for i, l := range r.lines {
		t := base.Add(time.Duration(i) * step)
		if timed {
			ms, k := protowire.ConsumeVarint(packed)
			packed = packed[k:]
			t = time.UnixMilli(int64(ms))
		}
		out.set(i, r.start+int64(i), t, r.attempt, l.data, l.stream, r.firstLine+int64(i), l.partial)
	}
	return out.out
}
