package batcher_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/events"
)

const (
	stdout = spoolv1.StreamType_STREAM_TYPE_STDOUT
	stderr = spoolv1.StreamType_STREAM_TYPE_STDERR
)

// sink collects emitted events.
type sink struct {
	mu  sync.Mutex
	evs []*spoolv1.JobEvent
}

func (s *sink) emit(ev *spoolv1.JobEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

func (s *sink) take() []*spoolv1.JobEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.evs
	s.evs = nil
	return evs
}

func newOutput(cfg *spoolv1.BatchingConfig, first int64) (*batcher.OutputBatcher, *sink, *batchertest.Clock) {
	clock := batchertest.NewClock(time.Time{})
	s := &sink{}
	return batcher.NewOutput(batcher.OutputConfig{Batching: cfg}, first, 2, clock, s.emit), s, clock
}

func processEvent(t spoolv1.EventType) *spoolv1.JobEvent {
	ev := &spoolv1.JobEvent{EventType: t}
	switch t {
	case spoolv1.EventType_EVENT_TYPE_PROCESS_START:
		ev.EventData = &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 42}}
	case spoolv1.EventType_EVENT_TYPE_PROCESS_END:
		ev.EventData = &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: 0}}
	case spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR:
		ev.EventData = &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: "boom"}}
	}
	return ev
}

// checkContinuous verifies that evs cover the sequences from first on
// without gaps or repeats, that batches are well formed and within cfg's
// limits, and returns the next sequence.
func checkContinuous(t *testing.T, evs []*spoolv1.JobEvent, first int64, maxLines int, maxBytes int64) int64 {
	t.Helper()
	next := first
	for i, ev := range evs {
		if ev.GetSequence() != next {
			t.Fatalf("event %d (%v) has sequence %d, want %d", i, ev.GetEventType(), ev.GetSequence(), next)
		}
		if ev.GetAttempt() != 2 || ev.GetTimestamp() == nil {
			t.Fatalf("event %d: attempt %d, timestamp %v", i, ev.GetAttempt(), ev.GetTimestamp())
		}
		if b := ev.GetOutputBatch(); b != nil {
			n := len(b.GetOutputs())
			switch {
			case n == 0 || n > maxLines:
				t.Fatalf("batch %d holds %d lines (limit %d)", next, n, maxLines)
			case events.OutputBytes(ev) > maxBytes:
				t.Fatalf("batch %d holds %d bytes (limit %d)", next, events.OutputBytes(ev), maxBytes)
			case b.GetStartSequence() != next || len(b.GetTimestamps()) != n || b.GetFirstLine() != 0:
				t.Fatalf("batch %d malformed: %v", next, b)
			case ev.GetTimestamp().AsTime().UnixMilli() != b.GetTimestamps()[0]:
				t.Fatalf("batch %d: event time is not its first line's", next)
			}
		}
		next = events.EndSequence(ev) + 1
	}
	return next
}

func TestOutputBatchEvent(t *testing.T) {
	o, s, clock := newOutput(&spoolv1.BatchingConfig{FlushIntervalSeconds: 1, MaxBatchSize: 10, MaxBatchBytes: 1000, PlaybackIntervalMillis: 30}, 7)
	t0 := clock.Now()
	o.Line(events.Line{Data: []byte("hello\r"), Stream: stdout, Time: t0})
	o.Line(events.Line{Data: []byte{0xff, 0}, Stream: stderr, Time: t0.Add(1500 * time.Microsecond)})
	clock.Advance(5 * time.Millisecond)
	o.Line(events.Line{Data: []byte("prompt> "), Stream: stdout, Partial: true}) // no time: the clock's
	o.Close()

	want := &spoolv1.JobEvent{
		Sequence:  7,
		Timestamp: timestamppb.New(t0),
		EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH,
		Attempt:   2,
		EventData: &spoolv1.JobEvent_OutputBatch{OutputBatch: &spoolv1.OutputBatchEvent{
			Outputs: []*spoolv1.OutputItem{
				{Output: []byte("hello\r"), Stream: stdout},
				{Output: []byte{0xff, 0}, Stream: stderr},
				{Output: []byte("prompt> "), Stream: stdout, Partial: true},
			},
			StartSequence:          7,
			EndSequence:            9,
			Timestamps:             []int64{t0.UnixMilli(), t0.UnixMilli() + 1, t0.UnixMilli() + 5},
			PlaybackIntervalMillis: 30,
		}},
	}
	evs := s.take()
	if len(evs) != 1 || !proto.Equal(evs[0], want) {
		t.Fatalf("emitted %v\nwant %v", evs, want)
	}
	if n := o.NextSequence(); n != 10 {
		t.Fatalf("NextSequence = %d, want 10", n)
	}
}

// TestOutputEmitBatch: with EmitBatch, batches come out as descriptions of
// the events they would be, in order with the process events, which still
// go to emit.
func TestOutputEmitBatch(t *testing.T) {
	clock := batchertest.NewClock(time.Time{})
	s := &sink{}
	o := batcher.NewOutput(batcher.OutputConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 2}, EmitBatch: func(b events.Batch, _ batcher.Reason) {
		b.Lines = slices.Clone(b.Lines) // valid only during the call
		s.emit(b.Event())
	}}, 3, 2, clock, s.emit)
	o.Line(events.Line{Data: []byte("a"), Stream: stdout})
	o.Line(events.Line{Data: []byte("b"), Stream: stdout})
	o.Line(events.Line{Data: []byte("c"), Stream: stderr})
	o.Event(processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_END))
	o.Close()
	evs := s.take()
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%d:%s:%d", ev.GetSequence(), ev.GetEventType(), len(ev.GetOutputBatch().GetOutputs())))
	}
	want := []string{"3:EVENT_TYPE_OUTPUT_BATCH:2", "5:EVENT_TYPE_OUTPUT_BATCH:1", "6:EVENT_TYPE_PROCESS_END:0"}
	if !slices.Equal(got, want) {
		t.Fatalf("emitted %v, want %v", got, want)
	}
	if b := evs[1].GetOutputBatch(); string(b.GetOutputs()[0].GetOutput()) != "c" || evs[1].GetAttempt() != 2 || b.GetEndSequence() != 5 {
		t.Fatalf("second batch %v", evs[1])
	}
}

// TestOutputEventFlushesLinesFirst: a process event follows the lines
// written before it, as an item of its own, with continuous sequences.
func TestOutputEventFlushesLinesFirst(t *testing.T) {
	o, s, clock := newOutput(nil, 1)
	o.Event(processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_START))
	for i := range 3 {
		o.Line(events.Line{Data: fmt.Appendf(nil, "line %d", i), Stream: stdout})
	}
	clock.Advance(40 * time.Millisecond) // before the quick flush of a new job's first lines
	given := timestamppb.New(time.Unix(1, 0))
	end := processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_END)
	end.Timestamp = given
	end.Attempt = 9 // overwritten: the batcher knows the attempt
	o.Event(end)
	o.Close()

	evs := s.take()
	var types []string
	for _, ev := range evs {
		types = append(types, fmt.Sprintf("%d-%d:%v", ev.GetSequence(), events.EndSequence(ev), ev.GetEventType()))
	}
	want := []string{"1-1:EVENT_TYPE_PROCESS_START", "2-4:EVENT_TYPE_OUTPUT_BATCH", "5-5:EVENT_TYPE_PROCESS_END"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("emitted %v, want %v", types, want)
	}
	checkContinuous(t, evs, 1, batcher.DefaultMaxBatchSize, batcher.DefaultMaxBatchBytes)
	if !evs[0].GetTimestamp().AsTime().Equal(clock.Now().Add(-40 * time.Millisecond)) {
		t.Fatalf("PROCESS_START without a timestamp got %v, want the clock's time", evs[0].GetTimestamp().AsTime())
	}
	if evs[2].GetTimestamp() != given {
		t.Fatal("a given timestamp was replaced")
	}
	st := o.Stats()
	if st.Batches != 1 || st.Lines != 3 || st.Events != 2 || st.Flushes[batcher.ReasonCritical] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestOutputEventRefusesOutputEvents(t *testing.T) {
	o, _, _ := newOutput(nil, 1)
	for _, typ := range []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH, spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, spoolv1.EventType_EVENT_TYPE_UNSPECIFIED} {
		if msg := panicMessage(func() { o.Event(&spoolv1.JobEvent{EventType: typ}) }); !strings.Contains(msg, "process events") {
			t.Errorf("Event(%v): panic %q", typ, msg)
		}
	}
	if n := o.NextSequence(); n != 1 {
		t.Fatalf("a refused event took a sequence: next is %d", n)
	}
}

func TestOutputDefaults(t *testing.T) {
	o, s, clock := newOutput(&spoolv1.BatchingConfig{}, 1)
	for range batcher.DefaultMaxBatchSize + 1 {
		o.Line(events.Line{Data: []byte("x"), Stream: stdout})
	}
	evs := s.take()
	if len(evs) != 1 || events.LineCount(evs[0]) != batcher.DefaultMaxBatchSize {
		t.Fatalf("want one full batch of %d lines, got %d events", batcher.DefaultMaxBatchSize, len(evs))
	}
	if p := evs[0].GetOutputBatch().GetPlaybackIntervalMillis(); p != batcher.DefaultPlaybackIntervalMillis {
		t.Fatalf("playback interval %d", p)
	}
	clock.Advance(batcher.DefaultFlushInterval)
	if evs := s.take(); len(evs) != 1 || o.Stats().Flushes[batcher.ReasonInterval] != 1 {
		t.Fatalf("the default interval did not flush: %d events, stats %+v", len(evs), o.Stats())
	}
	o.SetWatched(true)
	o.Line(events.Line{Data: []byte("y")})
	clock.Advance(batcher.DefaultWatchedInterval)
	if evs := s.take(); len(evs) != 1 {
		t.Fatalf("the default watched interval did not flush")
	}
}

// TestOutputSplitsOversizeLines: a line over max_batch_bytes would be
// refused by the store, so it is cut into pieces that fit.
func TestOutputSplitsOversizeLines(t *testing.T) {
	o, s, _ := newOutput(&spoolv1.BatchingConfig{MaxBatchBytes: 1024}, 1)
	long := bytes.Repeat([]byte("0123456789"), 250) // 2500 bytes
	o.Line(events.Line{Data: long, Stream: stderr, Partial: false})
	o.Close()
	var got []byte
	var pieces []string
	for _, ev := range s.take() {
		for _, it := range ev.GetOutputBatch().GetOutputs() {
			got = append(got, it.GetOutput()...)
			pieces = append(pieces, fmt.Sprintf("%d/%v/%v", len(it.GetOutput()), it.GetPartial(), it.GetStream()))
		}
	}
	want := []string{"1024/true/STREAM_TYPE_STDERR", "1024/true/STREAM_TYPE_STDERR", "452/false/STREAM_TYPE_STDERR"}
	if !bytes.Equal(got, long) || strings.Join(pieces, " ") != strings.Join(want, " ") {
		t.Fatalf("pieces %v, want %v (and the same bytes)", pieces, want)
	}
}

// TestOutputSequenceContinuity drives every kind of flush and checks that
// the emitted events cover the sequences without gaps, keep every line in
// order, stay within the limits, and agree with Stats.
func TestOutputSequenceContinuity(t *testing.T) {
	cfg := &spoolv1.BatchingConfig{FlushIntervalSeconds: 1, MaxBatchSize: 8, MaxBatchBytes: 100}
	o, s, clock := newOutput(cfg, 100)
	var in []byte
	line := func(i int) {
		n := i % 5 // mostly short lines (size flushes), some long ones (bytes flushes, splits)
		if i%10 == 0 {
			n = i * 7 % 150
		}
		data := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		in = append(append(in, data...), '\n')
		o.Line(events.Line{Data: data, Stream: stdout})
	}
	o.Event(processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_START))
	for i := range 400 {
		line(i)
		switch i % 50 {
		case 5:
			clock.Advance(2 * time.Second) // interval flush, then a quiet spell
		case 11:
			clock.Advance(50 * time.Millisecond) // quick flush
		case 17:
			o.Event(processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR))
		case 23:
			o.SetWatched(i%100 == 23)
		case 29:
			o.Flush()
		case 31:
			clock.Advance(300 * time.Millisecond)
		}
	}
	o.Close()
	evs := s.take()
	next := checkContinuous(t, evs, 100, 8, 100)
	if o.NextSequence() != next {
		t.Fatalf("NextSequence %d, want %d", o.NextSequence(), next)
	}

	var out []byte
	var st batcher.OutputStats
	for _, ev := range evs {
		for _, u := range events.Unpack(ev) {
			if d := u.GetOutputData(); d != nil {
				out = append(out, d.GetOutput()...)
				if !d.GetPartial() {
					out = append(out, '\n')
				}
			}
		}
		if ev.GetOutputBatch() != nil {
			st.Batches++
			st.Lines += events.LineCount(ev)
			st.Bytes += events.OutputBytes(ev)
		} else {
			st.Events++
		}
	}
	if !bytes.Equal(out, in) {
		t.Fatal("the lines read back differ from the lines written")
	}
	got := o.Stats()
	var flushes int64
	for _, r := range batcher.Reasons() {
		if r != batcher.ReasonExplicit || got.Flushes[r] > 0 {
			if got.Flushes[r] == 0 {
				t.Errorf("no %v flush happened; the test no longer covers it", r)
			}
		}
		flushes += got.Flushes[r]
	}
	if got.Batches != st.Batches || got.Lines != st.Lines || got.Bytes != st.Bytes || got.Events != st.Events || flushes != st.Batches {
		t.Fatalf("stats %+v, counted %+v and %d flushes", got, st, flushes)
	}
}

// TestOutputConcurrentStreams: stdout and stderr readers and process
// events from different goroutines, on the real clock, under -race.
func TestOutputConcurrentStreams(t *testing.T) {
	s := &sink{}
	o := batcher.NewOutput(batcher.OutputConfig{
		Batching:   &spoolv1.BatchingConfig{FlushIntervalSeconds: 1, MaxBatchSize: 13, MaxBatchBytes: 64},
		QuickDelay: time.Microsecond, WatchedInterval: 10 * time.Microsecond,
	}, 1, 2, batcher.SystemClock(), s.emit)
	const perStream = 3000
	var wg sync.WaitGroup
	for _, st := range []spoolv1.StreamType{stdout, stderr} {
		wg.Go(func() {
			for i := range perStream {
				o.Line(events.Line{Data: fmt.Appendf(nil, "%d", i), Stream: st})
			}
		})
	}
	wg.Go(func() {
		for i := range 100 {
			o.Event(processEvent(spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR))
			o.SetWatched(i%2 == 0)
			_ = o.Stats()
		}
	})
	wg.Wait()
	o.Close()
	evs := s.take()
	checkContinuous(t, evs, 1, 13, 64)
	next := map[spoolv1.StreamType]int{}
	for _, ev := range evs {
		for _, it := range ev.GetOutputBatch().GetOutputs() {
			if want := fmt.Sprint(next[it.GetStream()]); string(it.GetOutput()) != want {
				t.Fatalf("%v: got line %q, want %q", it.GetStream(), it.GetOutput(), want)
			}
			next[it.GetStream()]++
		}
	}
	if next[stdout] != perStream || next[stderr] != perStream {
		t.Fatalf("lines per stream: %v", next)
	}
}

// TestOutputFlushIntervalMillis: a job's flush interval under a second
// (flush_interval_millis) is the one followed, not its seconds, which
// round it up for workers that read only them.
func TestOutputFlushIntervalMillis(t *testing.T) {
	o, s, clock := newOutput(&spoolv1.BatchingConfig{FlushIntervalSeconds: 1, FlushIntervalMillis: 200}, 1)
	o.Line(events.Line{Data: []byte("first"), Stream: stdout})
	clock.Advance(batcher.DefaultQuickDelay) // the first line: a quiet spell's end
	if evs := s.take(); len(evs) != 1 {
		t.Fatalf("the first line: %d events", len(evs))
	}
	o.Line(events.Line{Data: []byte("second"), Stream: stdout})
	if due, ok := clock.NextDue(); !ok || due != 200*time.Millisecond {
		t.Fatalf("the next flush is due in %v (%v); want 200ms", due, ok)
	}
	clock.Advance(200 * time.Millisecond)
	if evs := s.take(); len(evs) != 1 || o.Stats().Flushes[batcher.ReasonInterval] != 1 {
		t.Fatalf("200ms on: %d events, stats %+v", len(evs), o.Stats())
	}
}
