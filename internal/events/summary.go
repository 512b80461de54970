package events

import (
	"errors"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Summary is everything the rules for appending an event to a log look
// at: its header, and the facts of its body that may make it unfit to
// store. It is computed from a message (SummaryOf) or read from an encoded
// event without decoding its lines (inspect), and both give the same
// summary for the same event, so the rules are written once for both.
type Summary struct {
	Header
	Attempt int32
	// HasTime: the event carries a timestamp, Time.
	HasTime bool
	Time    time.Time
	// DataType is the event type its data (the event_data member set) is
	// of; UNSPECIFIED when it has none.
	DataType spoolv1.EventType
	// LineNumber is an OUTPUT_DATA event's line_number.
	LineNumber int64
	// StartSequence and Timestamps are a batch's start_sequence and how
	// many per-line times it carries.
	StartSequence int64
	Timestamps    int
	// OutputBytes is the output the event carries (OutputBytes).
	OutputBytes int64
	// BadStream is the first output stream that is neither STDOUT nor
	// STDERR, with HasBadStream set; unset when every line's is one of
	// them.
	HasBadStream bool
	BadStream    spoolv1.StreamType
	// Size is the length of the event's JobEvent protobuf: as it will be
	// encoded for a message, as it is for an encoded event.
	Size int
}

// SummaryOf summarizes a decoded event.
func SummaryOf(ev *spoolv1.JobEvent) Summary {
	s := Summary{Header: HeaderOf(ev), Attempt: ev.GetAttempt(), Size: proto.Size(ev)}
	if ts := ev.GetTimestamp(); ts != nil {
		s.HasTime, s.Time = true, ts.AsTime()
	}
	s.OutputBytes = OutputBytes(ev)
	switch d := ev.GetEventData().(type) {
	case *spoolv1.JobEvent_OutputData:
		s.DataType = spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA
		s.LineNumber = d.OutputData.GetLineNumber()
		s.noteStream(d.OutputData.GetStream())
	case *spoolv1.JobEvent_OutputBatch:
		s.DataType = spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH
		s.StartSequence = d.OutputBatch.GetStartSequence()
		s.Timestamps = len(d.OutputBatch.GetTimestamps())
		for _, o := range d.OutputBatch.GetOutputs() {
			s.noteStream(o.GetStream())
		}
	case *spoolv1.JobEvent_ProcessStart:
		s.DataType = spoolv1.EventType_EVENT_TYPE_PROCESS_START
	case *spoolv1.JobEvent_ProcessEnd:
		s.DataType = spoolv1.EventType_EVENT_TYPE_PROCESS_END
	case *spoolv1.JobEvent_ProcessError:
		s.DataType = spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR
	}
	return s
}

func validStream(s spoolv1.StreamType) bool {
	return s == spoolv1.StreamType_STREAM_TYPE_STDOUT || s == spoolv1.StreamType_STREAM_TYPE_STDERR
}

// errUnusual is inspect's answer for an encoding it does not read on its
// own: well-formed, perhaps, but not in the shape spool's own encoder
// writes (a field twice, an unknown field, a process event). The caller
// decodes such an event in full instead.
var errUnusual = errors.New("not in the shape inspect reads")

// inspect reads the summary of an output event from its JobEvent protobuf
// without decoding its lines: no allocation, whatever it holds. It reads
// only the shape spool's encoder writes, each field at most once (a
// repeated one as often as it comes) with its own wire type, and returns
// errUnusual for anything else; whatever it reads, proto.Unmarshal
// decodes to an event with the same summary.
func inspect(b []byte) (Summary, error) {
	return inspectInto(b, nil)
}

// inspectInto is inspect, also keeping a batch's lines in raw when raw is
// not nil (for unpacking them in the same pass).
func inspectInto(b []byte, raw *rawBatch) (Summary, error) {
	s := Summary{Size: len(b)}
	var seen fieldSet
	var end int64 // a batch's end_sequence
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !seen.add(num) {
			return errUnusual
		}
		switch {
		case num == fieldSequence && typ == protowire.VarintType:
			s.Sequence = int64(varint(v))
		case num == fieldEventType && typ == protowire.VarintType:
			s.Type = spoolv1.EventType(int32(varint(v)))
		case num == fieldAttempt && typ == protowire.VarintType:
			s.Attempt = int32(varint(v))
		case num == fieldTimestamp && typ == protowire.BytesType:
			body, _ := protowire.ConsumeBytes(v)
			t, err := inspectTime(body)
			s.HasTime, s.Time = true, t
			return err
		case s.DataType != spoolv1.EventType_EVENT_TYPE_UNSPECIFIED && inEventData(num):
			return errUnusual // a second member of event_data
		case num == fieldOutputData && typ == protowire.BytesType:
			body, _ := protowire.ConsumeBytes(v)
			s.DataType = spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA
			return inspectOutput(body, &s)
		case num == fieldOutputBatch && typ == protowire.BytesType:
			body, _ := protowire.ConsumeBytes(v)
			s.DataType = spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH
			return inspectBatch(body, &s, &end, raw)
		default:
			return errUnusual
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	s.EndSequence = s.Sequence
	switch s.DataType {
	case spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA:
		s.FirstLine, s.LineCount = s.LineNumber, 1
	case spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH:
		s.EndSequence = end
	default:
		return Summary{}, errUnusual
	}
	return s, nil
}

// inspectTime reads a google.protobuf.Timestamp.
func inspectTime(b []byte) (time.Time, error) {
	var sec, nanos int64
	var seen fieldSet
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !seen.add(num) || typ != protowire.VarintType {
			return errUnusual
		}
		switch num {
		case fieldSecond:
			sec = int64(varint(v))
		case fieldNanos:
			nanos = int64(int32(varint(v)))
		default:
			return errUnusual
		}
		return nil
	})
	// What timestamppb's AsTime makes of them.
	return time.Unix(sec, nanos).UTC(), err
}

// inspectOutput reads an OutputEvent.
func inspectOutput(b []byte, s *Summary) error {
	var seen fieldSet
	stream := spoolv1.StreamType_STREAM_TYPE_UNSPECIFIED
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !seen.add(num) {
			return errUnusual
		}
		switch {
		case num == fieldOutputBytes && typ == protowire.BytesType:
			body, _ := protowire.ConsumeBytes(v)
			s.OutputBytes = int64(len(body))
		case num == fieldOutputStream && typ == protowire.VarintType:
			stream = spoolv1.StreamType(int32(varint(v)))
		case num == fieldLineNumber && typ == protowire.VarintType:
			s.LineNumber = int64(varint(v))
		case num == fieldOutputPart && typ == protowire.VarintType:
		default:
			return errUnusual
		}
		return nil
	})
	s.noteStream(stream)
	return err
}

// inspectBatch reads an OutputBatchEvent, line by line without keeping
// any.
func inspectBatch(b []byte, s *Summary, end *int64, raw *rawBatch) error {
	var seen fieldSet
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != fieldOutputs && !seen.add(num) {
			return errUnusual
		}
		switch {
		case num == fieldOutputs && typ == protowire.BytesType:
			body, _ := protowire.ConsumeBytes(v)
			s.LineCount++
			return inspectItem(body, s, raw)
		case num == fieldStartSeq && typ == protowire.VarintType:
			s.StartSequence = int64(varint(v))
		case num == fieldEndSeq && typ == protowire.VarintType:
			*end = int64(varint(v))
		case num == fieldFirstLine && typ == protowire.VarintType:
			s.FirstLine = int64(varint(v))
		case num == fieldPlayback && typ == protowire.VarintType:
			if raw != nil {
				raw.playback = int32(varint(v))
			}
		case num == fieldTimestamps && typ == protowire.BytesType:
			// Packed, as proto3 encoders write repeated numbers.
			body, _ := protowire.ConsumeBytes(v)
			if raw != nil {
				raw.times = body
			}
			for len(body) > 0 {
				_, n := protowire.ConsumeVarint(body)
				if n < 0 {
					return protowire.ParseError(n)
				}
				body = body[n:]
				s.Timestamps++
			}
		default:
			return errUnusual
		}
		return nil
	})
}

// inspectItem reads an OutputItem.
func inspectItem(b []byte, s *Summary, raw *rawBatch) error {
	var seen fieldSet
	var l rawLine
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !seen.add(num) {
			return errUnusual
		}
		switch {
		case num == fieldItemBytes && typ == protowire.BytesType:
			l.data, _ = protowire.ConsumeBytes(v)
			s.OutputBytes += int64(len(l.data))
		case num == fieldItemStream && typ == protowire.VarintType:
			l.stream = spoolv1.StreamType(int32(varint(v)))
		case num == fieldItemPart && typ == protowire.VarintType:
			l.partial = varint(v) != 0
		default:
			return errUnusual
		}
		return nil
	})
	s.noteStream(l.stream)
	if raw != nil {
		raw.lines = append(raw.lines, l)
	}
	return err
}

func (s *Summary) noteStream(st spoolv1.StreamType) {
	if !validStream(st) && !s.HasBadStream {
		s.HasBadStream, s.BadStream = true, st
	}
}

// fieldSet records which of a message's fields (numbers below 64) were
// seen.
type fieldSet uint64

// add records num and reports whether it is new (false, too, for numbers
// too large to record: no field inspect reads is).
func (f *fieldSet) add(num protowire.Number) bool {
	if num >= 64 || *f&(1<<num) != 0 {
		return false
	}
	*f |= 1 << num
	return true
}
