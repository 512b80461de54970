package events

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// storedSamples are events of every shape a log holds.
func storedSamples() []*spoolv1.JobEvent {
	return []*spoolv1.JobEvent{
		batch(1, 1, 1, false),
		batch(7, 3, 50, true),
		{Sequence: 9, EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, Attempt: 2, Timestamp: timestamppb.New(time.UnixMilli(5)),
			EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{Output: []byte("x"), LineNumber: 12}}},
		{Sequence: 4, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
			EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 3, Command: "make"}}},
		{Sequence: 60, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
			EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: 1}}},
	}
}

// TestDecodeStored: a stored payload read as far as its header gives the
// header of the decoded event, the protobuf bytes it was encoded from, and
// the event itself when asked.
func TestDecodeStored(t *testing.T) {
	for _, ev := range storedSamples() {
		payload, err := Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		st, err := DecodeStored(payload)
		if err != nil {
			t.Fatalf("event %d: %v", ev.GetSequence(), err)
		}
		if st.Header != HeaderOf(ev) {
			t.Fatalf("event %d: header %+v, want %+v", ev.GetSequence(), st.Header, HeaderOf(ev))
		}
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
		if !bytes.Equal(st.Proto(), want) {
			t.Fatalf("event %d: stored bytes differ from the event's encoding", ev.GetSequence())
		}
		got, err := st.Event()
		if err != nil || !proto.Equal(got, ev) {
			t.Fatalf("event %d: decoded %v, %v", ev.GetSequence(), got, err)
		}
	}
	for _, bad := range [][]byte{nil, {formatProto, 0xff}, {formatProto, 0x5a, 0x05, 1}, {7, 8}} {
		if _, err := DecodeStored(bad); err == nil {
			t.Fatalf("%x: decoded", bad)
		}
	}
}

// TestHeaderFollowsDecoding: concatenated encodings decode as one merged
// message (the last scalar wins, the last event_data member set is the
// one set, the same member set again adds its lines), and the header read
// from the bytes is that message's.
func TestHeaderFollowsDecoding(t *testing.T) {
	enc := func(evs ...*spoolv1.JobEvent) []byte {
		var b []byte
		for _, ev := range evs {
			raw, _ := proto.Marshal(ev)
			b = append(b, raw...)
		}
		return b
	}
	s := storedSamples()
	for name, b := range map[string][]byte{
		"batch twice":               enc(s[1], batch(20, 40, 3, false)),
		"batch then process start":  enc(s[1], s[3]),
		"process start then batch":  enc(s[3], s[0]),
		"batch, line, batch":        enc(s[1], s[2], s[0]),
		"line twice":                enc(s[2], s[2]),
		"batch with unknown fields": append(enc(s[1]), 0xf8, 0x01, 0x07, 0x0a, 0x01, 0x00),
	} {
		want := &spoolv1.JobEvent{}
		if err := proto.Unmarshal(b, want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := scanHeader(b)
		if err != nil || got != HeaderOf(want) {
			t.Fatalf("%s: header %+v (%v), want %+v", name, got, err, HeaderOf(want))
		}
	}
}

// TestStoredTrims: a stored event kept whole is the same stored event,
// bytes and all; one that is cut is decoded and cut as TrimBefore and
// TrimBeforeLine cut messages, and carries no stored bytes.
func TestStoredTrims(t *testing.T) {
	ev := batch(7, 3, 50, true) // sequences 7-56, lines 3-52
	payload, _ := Encode(ev)
	stored := func() *Stored {
		st, err := DecodeStored(payload)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for _, c := range []struct {
		name string
		trim func(*Stored) (*Stored, error)
		want *spoolv1.JobEvent
	}{
		{"from its first sequence", func(s *Stored) (*Stored, error) { return s.TrimBefore(7) }, ev},
		{"from inside by sequence", func(s *Stored) (*Stored, error) { return s.TrimBefore(30) }, TrimBefore(ev, 30)},
		{"from after it by sequence", func(s *Stored) (*Stored, error) { return s.TrimBefore(57) }, nil},
		{"from its first line", func(s *Stored) (*Stored, error) { return s.TrimBeforeLine(3) }, ev},
		{"from inside by line", func(s *Stored) (*Stored, error) { return s.TrimBeforeLine(10) }, TrimBeforeLine(ev, 10)},
		{"from after it by line", func(s *Stored) (*Stored, error) { return s.TrimBeforeLine(53) }, nil},
		{"from before its time", func(s *Stored) (*Stored, error) { return s.TrimBeforeTime(time.UnixMilli(1000)) }, ev},
		{"from inside by time", func(s *Stored) (*Stored, error) { return s.TrimBeforeTime(time.UnixMilli(1250)) }, TrimBeforeTime(ev, time.UnixMilli(1250))},
		{"from after its time", func(s *Stored) (*Stored, error) { return s.TrimBeforeTime(time.UnixMilli(9000)) }, nil},
		{"until after its time", func(s *Stored) (*Stored, error) { return until(s, 9000) }, ev},
		{"until inside by time", func(s *Stored) (*Stored, error) { return until(s, 1250) }, keptPart(TrimAfterTime(ev, time.UnixMilli(1250)))},
		{"until before its time", func(s *Stored) (*Stored, error) { return until(s, 900) }, nil},
	} {
		st := stored()
		got, err := c.trim(st)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", c.name, err)
		case c.want == nil:
			if got != nil {
				t.Fatalf("%s: kept %+v", c.name, got.Header)
			}
			continue
		case c.want == ev && got != st:
			t.Fatalf("%s: not kept whole", c.name)
		case c.want != ev && got.Proto() != nil:
			t.Fatalf("%s: a cut event carries the whole event's bytes", c.name)
		}
		gotEv, err := got.Event()
		if err != nil || !proto.Equal(gotEv, c.want) || got.Header != HeaderOf(c.want) {
			t.Fatalf("%s: got %+v, want %+v (%v)", c.name, got.Header, HeaderOf(c.want), err)
		}
	}
}

// TestStoredOf: a stored event made from a message has its header and no
// stored bytes.
func TestStoredOf(t *testing.T) {
	ev := batch(7, 3, 50, true)
	st := StoredOf(ev)
	got, err := st.Event()
	if st.Proto() != nil || st.Header != HeaderOf(ev) || got != ev || err != nil {
		t.Fatalf("StoredOf: %+v %v", st.Header, err)
	}
	if h := st.Header; h.Sequence != 7 || h.EndSequence != 56 || h.FirstLine != 3 || h.LineCount != 50 || h.Type != spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH {
		t.Fatalf("header %+v", h)
	}
}

// TestStoredAs: an item whose header its store kept is not unwrapped until
// asked for more than its payload, and then it must agree with that header.
func TestStoredAs(t *testing.T) {
	ev := batch(7, 3, 50, true)
	payload, _ := Encode(ev)
	st := StoredAs(HeaderOf(ev), payload)
	if !bytes.Equal(st.Payload(), payload) {
		t.Fatal("payload not kept as stored")
	}
	if got, err := st.Event(); err != nil || !proto.Equal(got, ev) {
		t.Fatalf("event: %v", err)
	}
	wrong := HeaderOf(ev)
	wrong.LineCount++
	bad := StoredAs(wrong, payload)
	if _, err := bad.Event(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a payload that disagrees with its keys: %v, want ErrCorrupt", err)
	}
	if bad.Proto() != nil {
		t.Fatal("a payload that disagrees with its keys gave its protobuf")
	}
	if _, err := StoredAs(HeaderOf(ev), []byte{formatS2Proto, 0xff}).Event(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a payload that does not unwrap: %v, want ErrCorrupt", err)
	}
}

// until is Stored.TrimAfterTime to ms without whether it went past.
func until(s *Stored, ms int64) (*Stored, error) {
	kept, _, err := s.TrimAfterTime(time.UnixMilli(ms))
	return kept, err
}

// keptPart is the kept part of what TrimAfterTime returns.
func keptPart(kept *spoolv1.JobEvent, _ bool) *spoolv1.JobEvent { return kept }
