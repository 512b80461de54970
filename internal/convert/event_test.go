package convert

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// A batch read from the wire becomes one output event with its lines (for
// Batches) or one event per line (for All), each line with its sequence,
// number, stream, text and time.
func TestOutput(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000).UTC()
	ev := events.Batch{Sequence: 7, Attempt: 2, FirstLine: 5, Lines: []events.Line{
		{Data: []byte("one"), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Time: t0},
		{Data: []byte(""), Stream: spoolv1.StreamType_STREAM_TYPE_STDERR, Time: t0.Add(time.Second)},
		{Data: []byte("thr\xffee"), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Partial: true, Time: t0.Add(2 * time.Second)},
	}}.Event()
	want := []spool.Line{
		{Sequence: 7, Number: 5, Stream: spool.Stdout, Text: "one", Time: t0},
		{Sequence: 8, Number: 6, Stream: spool.Stderr, Text: "", Time: t0.Add(time.Second)},
		{Sequence: 9, Number: 7, Stream: spool.Stdout, Text: "thr\xffee", Partial: true, Time: t0.Add(2 * time.Second)},
	}
	b := Event(ev)
	if b.Sequence != 7 || b.Attempt != 2 || b.Type != spool.EventOutput || !b.Time.Equal(t0) || !equalLines(b.Lines, want) {
		t.Fatalf("batch = %+v", b)
	}
	per := PerLine(events.Unpack(ev))
	if len(per) != 3 {
		t.Fatalf("%d events for 3 lines", len(per))
	}
	for i, e := range per {
		if e.Sequence != want[i].Sequence || e.Attempt != 2 || e.Type != spool.EventOutput || !e.Time.Equal(want[i].Time) || !equalLines(e.Lines, want[i:i+1]) {
			t.Errorf("line event %d = %+v", i, e)
		}
	}
	// Appending to one event's lines must not write over the next line.
	_ = append(per[0].Lines, spool.Line{Text: "x"})
	if per[1].Lines[0].Sequence != 8 {
		t.Fatal("line events share their slice's spare room")
	}
}

// A batch recorded without times is spaced by the job's playback interval
// from the batch's time.
func TestUntimedOutput(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	ev := events.Batch{Sequence: 1, Untimed: true, PlaybackIntervalMillis: 100, Lines: events.TextLines(t0, "a", "b")}.Event()
	got := Event(ev).Lines
	if !got[0].Time.Equal(t0) || !got[1].Time.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("untimed lines at %v and %v", got[0].Time, got[1].Time)
	}
}

// The events that are not output keep what they say.
func TestProcessEvents(t *testing.T) {
	at := timestamppb.New(time.Unix(1_700_000_000, 0))
	start := Event(&spoolv1.JobEvent{Sequence: 1, Timestamp: at, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 42, Command: "make", WorkerId: "w", Pty: true}}})
	end := Event(&spoolv1.JobEvent{Sequence: 2, Timestamp: at, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: 3, Duration: durationpb.New(time.Second), Signal: "killed"}}})
	failed := Event(&spoolv1.JobEvent{Sequence: 3, Timestamp: at, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR,
		EventData: &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: "no such file"}}})
	if start.Type != spool.EventProcessStart || *start.Start != (spool.ProcessStart{PID: 42, Command: "make", WorkerID: "w", PTY: true}) || start.Sequence != 1 {
		t.Errorf("start = %+v", start)
	}
	if end.Type != spool.EventProcessEnd || *end.End != (spool.ProcessEnd{ExitCode: 3, Duration: time.Second, Signal: "killed"}) {
		t.Errorf("end = %+v", end)
	}
	if failed.Type != spool.EventProcessError || failed.Error != "no such file" || failed.Lines != nil {
		t.Errorf("error = %+v", failed)
	}
	if got := PerLine([]*spoolv1.JobEvent{{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START}}); len(got) != 1 || got[0].Type != spool.EventProcessStart {
		t.Errorf("PerLine of a start = %+v", got)
	}
	if Batch(nil) != nil || PerLine(nil) != nil {
		t.Error("no events make an event")
	}
}

func equalLines(got, want []spool.Line) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) {
			return false
		}
		g.Time, w.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			return false
		}
	}
	return true
}
