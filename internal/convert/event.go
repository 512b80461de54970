package convert

import (
	"strings"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// EventTypesProto are the wire's event types ts: EventOutput selects both
// kinds of output event.
func EventTypesProto(ts []spool.EventType) []spoolv1.EventType {
	if ts == nil {
		return nil
	}
	out := make([]spoolv1.EventType, len(ts))
	for i, t := range ts {
		switch t {
		case spool.EventOutput:
			out[i] = spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA
		case spool.EventProcessStart:
			out[i] = spoolv1.EventType_EVENT_TYPE_PROCESS_START
		case spool.EventProcessEnd:
			out[i] = spoolv1.EventType_EVENT_TYPE_PROCESS_END
		case spool.EventProcessError:
			out[i] = spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR
		default:
			// Left unspecified, which the server refuses.
			out[i] = spoolv1.EventType_EVENT_TYPE_UNSPECIFIED
		}
	}
	return out
}

// Event is the event ev, a batch's lines unpacked (nil for nil, and for a
// batch with no lines).
func Event(ev *spoolv1.JobEvent) *spool.Event {
	if ev == nil {
		return nil
	}
	return Batch(events.Unpack(ev))
}

// Batch is what an event unpacks to (events.Unpack: one OUTPUT_DATA event
// per line of a batch, or a single other event) as one Event: the lines
// together in one output event. It is nil for no events.
func Batch(unpacked []*spoolv1.JobEvent) *spool.Event {
	if len(unpacked) == 0 {
		return nil
	}
	first := unpacked[0]
	if first.GetOutputData() == nil {
		return single(first)
	}
	ev := header(first)
	ev.Lines = lines(unpacked)
	return ev
}

// PerLine is what an event unpacks to as one Event per line (or the one
// other event). The events share one allocation, and the lines' texts one
// string.
func PerLine(unpacked []*spoolv1.JobEvent) []*spool.Event {
	if len(unpacked) == 0 {
		return nil
	}
	if unpacked[0].GetOutputData() == nil {
		return []*spool.Event{single(unpacked[0])}
	}
	ls := lines(unpacked)
	evs := make([]spool.Event, len(unpacked))
	out := make([]*spool.Event, len(unpacked))
	for i, u := range unpacked {
		evs[i] = spool.Event{Sequence: u.GetSequence(), Time: timeOf(u.GetTimestamp()), Attempt: int(u.GetAttempt()),
			Type: spool.EventOutput, Lines: ls[i : i+1 : i+1]}
		out[i] = &evs[i]
	}
	return out
}

// header is an event's sequence, time, attempt and type.
func header(ev *spoolv1.JobEvent) *spool.Event {
	return &spool.Event{Sequence: ev.GetSequence(), Time: timeOf(ev.GetTimestamp()), Attempt: int(ev.GetAttempt()), Type: eventType(ev)}
}

// single is an event that is not output.
func single(ev *spoolv1.JobEvent) *spool.Event {
	out := header(ev)
	switch d := ev.GetEventData().(type) {
	case *spoolv1.JobEvent_ProcessStart:
		s := d.ProcessStart
		out.Start = &spool.ProcessStart{PID: int(s.GetPid()), Command: s.GetCommand(), WorkerID: s.GetWorkerId(), PTY: s.GetPty()}
	case *spoolv1.JobEvent_ProcessEnd:
		e := d.ProcessEnd
		out.End = &spool.ProcessEnd{ExitCode: int(e.GetExitCode()), Duration: durationOf(e.GetDuration()), Signal: e.GetSignal()}
	case *spoolv1.JobEvent_ProcessError:
		out.Error = d.ProcessError.GetMessage()
	}
	return out
}

func eventType(ev *spoolv1.JobEvent) spool.EventType {
	switch ev.GetEventType() {
	case spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH:
		return spool.EventOutput
	case spoolv1.EventType_EVENT_TYPE_PROCESS_START:
		return spool.EventProcessStart
	case spoolv1.EventType_EVENT_TYPE_PROCESS_END:
		return spool.EventProcessEnd
	case spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR:
		return spool.EventProcessError
	}
	return 0
}

// lines are the lines of OUTPUT_DATA events. Their texts are cut from one
// string: a reader of a long log converts every line it reads.
func lines(unpacked []*spoolv1.JobEvent) []spool.Line {
	n := 0
	for _, u := range unpacked {
		n += len(u.GetOutputData().GetOutput())
	}
	var b strings.Builder
	b.Grow(n)
	for _, u := range unpacked {
		b.Write(u.GetOutputData().GetOutput())
	}
	text := b.String()
	out := make([]spool.Line, len(unpacked))
	at := 0
	for i, u := range unpacked {
		d := u.GetOutputData()
		end := at + len(d.GetOutput())
		out[i] = spool.Line{Sequence: u.GetSequence(), Number: d.GetLineNumber(), Stream: Stream(d.GetStream()), Text: text[at:end],
			Partial: d.GetPartial(), Time: timeOf(u.GetTimestamp())}
		at = end
	}
	return out
}
