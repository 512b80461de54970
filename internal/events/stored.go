package events

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Header is what reading a log needs to know of an event to place it:
// which sequences and lines it spans and what type it is.
type Header struct {
	Sequence    int64
	EndSequence int64 // see EndSequence
	Type        spoolv1.EventType
	FirstLine   int64 // see FirstLine
	LineCount   int64 // see LineCount
}

// HeaderOf returns a decoded event's header.
func HeaderOf(ev *spoolv1.JobEvent) Header {
	return Header{
		Sequence:    ev.GetSequence(),
		EndSequence: EndSequence(ev),
		Type:        ev.GetEventType(),
		FirstLine:   FirstLine(ev),
		LineCount:   LineCount(ev),
	}
}

// Stored is an event read back from a store. Most of a log is read whole,
// batch after batch, and sent on as it is; decoding every line of a batch
// into messages only to encode them again for the reader was most of the
// server's work. So a stored event carries its header, read from the
// protobuf without decoding the lines, beside the JobEvent protobuf itself,
// and is decoded only when something asks for the message.
//
// A store whose keys hold the header (StoredAs) does not even decompress
// the payload until something needs more than the payload as it is: a
// reader that decodes stored events itself gets them untouched.
//
// A Stored is not safe for concurrent use; the message Event returns is
// read-only, like every event a store returns.
type Stored struct {
	Header
	payload []byte            // as stored (Encode's payload); nil when built from a message
	raw     []byte            // the JobEvent protobuf, once unwrapped
	err     error             // why the payload could not be unwrapped
	ev      *spoolv1.JobEvent // the decoded event, once asked for
}

// DecodeStored reads a payload written by Encode as far as its header. The
// lines are checked only when the event is decoded (Event).
func DecodeStored(payload []byte) (*Stored, error) {
	body, err := unwrap(payload)
	if err != nil {
		return nil, err
	}
	h, err := scanHeader(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &Stored{Header: h, payload: payload, raw: body}, nil
}

// StoredAs is a payload written by Encode whose header the store keeps
// beside it: nothing of the payload is read until something asks for its
// protobuf or its event, which must then agree with h.
func StoredAs(h Header, payload []byte) *Stored {
	return &Stored{Header: h, payload: payload}
}

// body returns the JobEvent protobuf, unwrapping the payload the first
// time.
func (s *Stored) body() ([]byte, error) {
	if s.raw != nil || s.err != nil || s.payload == nil {
		return s.raw, s.err
	}
	body, err := unwrap(s.payload)
	if err == nil {
		var h Header
		if h, err = scanHeader(body); err != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		} else if h != s.Header {
			err = fmt.Errorf("%w: stored as sequences %d-%d, lines %d+%d, but its payload is sequences %d-%d, lines %d+%d",
				ErrCorrupt, s.Sequence, s.EndSequence, s.FirstLine, s.LineCount, h.Sequence, h.EndSequence, h.FirstLine, h.LineCount)
		}
	}
	if err != nil {
		s.err = fmt.Errorf("event %d: %w", s.Sequence, err)
		return nil, s.err
	}
	s.raw = body
	return body, nil
}

// StoredOf wraps a decoded event, for stores that keep messages and for
// events cut from stored ones.
func StoredOf(ev *spoolv1.JobEvent) *Stored {
	return &Stored{Header: HeaderOf(ev), ev: ev}
}

// Event returns the event, decoding it the first time.
func (s *Stored) Event() (*spoolv1.JobEvent, error) {
	if s.ev == nil {
		body, err := s.body()
		if err != nil {
			return nil, err
		}
		ev, err := unmarshal(body)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", s.Sequence, err)
		}
		s.ev = ev
	}
	return s.ev, nil
}

// Proto returns the event's JobEvent protobuf exactly as it was stored,
// or nil when the event was not read from a payload (StoredOf, or a part
// cut from a stored event) or its payload does not unwrap (Event says
// why). The bytes are shared: do not modify them.
func (s *Stored) Proto() []byte {
	b, _ := s.body()
	return b
}

// Payload returns the event as it was stored (what Encode returned, maybe
// compressed), or nil when it was not read from a payload. The bytes are
// shared: do not modify them.
func (s *Stored) Payload() []byte { return s.payload }

// TrimBefore is TrimBefore for a stored event: s itself when all of it is
// kept, decoded only when it has to be cut.
func (s *Stored) TrimBefore(seq int64) (*Stored, error) {
	return s.cut(s.fromSequence(seq))
}

// TrimBeforeLine is TrimBeforeLine for a stored event, as TrimBefore.
func (s *Stored) TrimBeforeLine(line int64) (*Stored, error) {
	return s.cut(s.fromLine(line))
}

// TrimBeforeTime is TrimBeforeTime for a stored event: s itself when all
// of it is kept. The times of a batch's lines are in its body, so it is
// always decoded.
func (s *Stored) TrimBeforeTime(t time.Time) (*Stored, error) {
	ev, err := s.Event()
	if err != nil {
		return nil, err
	}
	switch kept := TrimBeforeTime(ev, t); kept {
	case nil:
		return nil, nil
	case ev:
		return s, nil
	default:
		return StoredOf(kept), nil
	}
}

// TrimAfterTime is TrimAfterTime for a stored event: s itself when all of
// it is kept. Like TrimBeforeTime, it decodes the event.
func (s *Stored) TrimAfterTime(t time.Time) (kept *Stored, past bool, err error) {
	ev, err := s.Event()
	if err != nil {
		return nil, false, err
	}
	switch k, past := TrimAfterTime(ev, t); k {
	case nil:
		return nil, past, nil
	case ev:
		return s, past, nil
	default:
		return StoredOf(k), past, nil
	}
}

// cut is the package's cut for a stored event.
func (s *Stored) cut(skip int64, keep bool) (*Stored, error) {
	switch {
	case !keep:
		return nil, nil
	case skip == 0:
		return s, nil
	}
	ev, err := s.Event()
	if err != nil {
		return nil, err
	}
	return StoredOf(cut(ev, skip, keep)), nil
}

// scanHeader reads a header from a JobEvent protobuf, skipping over the
// lines, with the rules proto.Unmarshal follows: the last value of a field
// wins, a field of the wrong wire type is an unknown one, the event_data
// member set last is the one set, and the same member set again merges
// (its lines add up). Whatever proto.Unmarshal decodes, it reads the same
// header from; it may accept bytes whose lines do not decode.
func scanHeader(b []byte) (Header, error) {
	var h Header
	var member protowire.Number // the event_data member set last
	var end int64               // a batch's end_sequence
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == fieldSequence && typ == protowire.VarintType:
			h.Sequence = int64(varint(v))
		case num == fieldEventType && typ == protowire.VarintType:
			h.Type = spoolv1.EventType(int32(varint(v)))
		case typ == protowire.BytesType && inEventData(num):
			body, _ := protowire.ConsumeBytes(v)
			if num != member {
				member, h.FirstLine, h.LineCount, end = num, 0, 0, 0
			}
			switch num {
			case fieldOutputData:
				return scanOutput(body, &h)
			case fieldOutputBatch:
				return scanBatch(body, &h, &end)
			}
		}
		return nil
	})
	if err != nil {
		return Header{}, err
	}
	h.EndSequence = h.Sequence
	switch member {
	case fieldOutputData:
		h.LineCount = 1
	case fieldOutputBatch:
		h.EndSequence = end
	}
	return h, nil
}

// scanOutput reads a single line's number from an OutputEvent.
func scanOutput(b []byte, h *Header) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == fieldLineNumber && typ == protowire.VarintType {
			h.FirstLine = int64(varint(v))
		}
		return nil
	})
}

// scanBatch reads an OutputBatchEvent's first line and end sequence and
// counts its lines.
func scanBatch(b []byte, h *Header, end *int64) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == fieldOutputs && typ == protowire.BytesType:
			h.LineCount++
		case num == fieldEndSeq && typ == protowire.VarintType:
			*end = int64(varint(v))
		case num == fieldFirstLine && typ == protowire.VarintType:
			h.FirstLine = int64(varint(v))
		}
		return nil
	})
}

// eachField calls fn with each field of a message's encoding and its value
// (a length-delimited value with its length prefix), stopping at the first
// malformed field or error of fn.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := fn(num, typ, b[:m]); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// varint decodes a varint eachField has already checked.
func varint(v []byte) uint64 {
	x, _ := protowire.ConsumeVarint(v)
	return x
}

// inEventData reports whether field num is a member of JobEvent's
// event_data.
func inEventData(num protowire.Number) bool {
	fd := jobEventFields.ByNumber(num)
	return fd != nil && fd.ContainingOneof() == eventData
}
