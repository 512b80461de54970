package events

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// publishedSamples are events as they are published: output in the shape
// the worker encodes, odd streams and sizes the rules look at, and process
// events.
func publishedSamples() []*spoolv1.JobEvent {
	odd := batch(3, 0, 3, true)
	odd.GetOutputBatch().Outputs[1].Stream = spoolv1.StreamType(7)
	odd.GetOutputBatch().Outputs[2].Partial = true
	line := &spoolv1.JobEvent{Sequence: 2, EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, Timestamp: timestamppb.New(time.Unix(-5, 7)),
		EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{Output: []byte("one line"), Stream: spoolv1.StreamType_STREAM_TYPE_STDERR, Partial: true}}}
	untyped := batch(1, 4, 2, false)
	untyped.EventType = spoolv1.EventType_EVENT_TYPE_PROCESS_END
	return append(storedSamples(), odd, line, untyped, batch(11, 0, 0, false), &spoolv1.JobEvent{Sequence: 5})
}

// TestSummaryOfEncoded: an encoded event's summary, read without decoding
// its lines, is the decoded event's, whether or not it was compressed.
func TestSummaryOfEncoded(t *testing.T) {
	for _, ev := range publishedSamples() {
		raw, _ := proto.Marshal(ev)
		compressed, _ := Encode(ev)
		for _, payload := range [][]byte{compressed, append([]byte{formatProto}, raw...)} {
			p, err := ParseEncoded(payload)
			if err != nil {
				t.Fatalf("event %d: %v", ev.GetSequence(), err)
			}
			want := SummaryOf(ev)
			if p.Summary != want {
				t.Fatalf("event %d: summary\n%+v\nwant\n%+v", ev.GetSequence(), p.Summary, want)
			}
			if !bytes.Equal(p.Payload(), payload) {
				t.Fatalf("event %d: payload not kept", ev.GetSequence())
			}
			got, err := p.Message()
			if err != nil || !proto.Equal(got, ev) {
				t.Fatalf("event %d: message %v, %v", ev.GetSequence(), got, err)
			}
		}
	}
}

// TestInspectReadsOnlyItsShape: output events are read without decoding;
// anything spool's encoder does not write (a field twice, an unknown
// field, two members of event_data, a process event) is left to a full
// decode, which ParseEncoded then does.
func TestInspectReadsOnlyItsShape(t *testing.T) {
	b := batch(1, 1, 2, true)
	raw, _ := proto.Marshal(b)
	if _, err := inspect(raw); err != nil {
		t.Fatalf("a batch as encoded: %v", err)
	}
	seqTwice := protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), raw...), fieldSequence, protowire.VarintType), 1)
	unknown := protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), raw...), 99, protowire.VarintType), 1)
	line, _ := proto.Marshal(&spoolv1.JobEvent{EventData: &spoolv1.JobEvent_OutputData{OutputData: &spoolv1.OutputEvent{Output: []byte("x")}}})
	twoMembers := append(append([]byte(nil), raw...), line...)
	start, _ := proto.Marshal(storedSamples()[3])
	for name, body := range map[string][]byte{"sequence twice": seqTwice, "an unknown field": unknown, "two members": twoMembers, "a process start": start} {
		if _, err := inspect(body); err != errUnusual {
			t.Errorf("%s: inspect says %v, want errUnusual", name, err)
		}
		p, err := ParseEncoded(append([]byte{formatProto}, body...))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ev := &spoolv1.JobEvent{}
		if err := proto.Unmarshal(body, ev); err != nil {
			t.Fatal(err)
		}
		want := SummaryOf(ev)
		want.Size = len(body)
		if p.Summary != want {
			t.Errorf("%s: summary %+v, want %+v", name, p.Summary, want)
		}
	}
	for _, bad := range [][]byte{nil, {formatProto, 0xff}, {formatZstdProto, 1, 2, 3}, {9}} {
		if _, err := ParseEncoded(bad); err == nil {
			t.Errorf("%x: parsed", bad)
		}
	}
}

// FuzzParseEncoded: whatever a worker sends, reading its summary never
// panics, and a summary read without decoding is the decoded event's:
// what the server checks is what readers will decode.
func FuzzParseEncoded(f *testing.F) {
	for _, ev := range publishedSamples() {
		raw, _ := proto.Marshal(ev)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := inspect(body)
		ev := &spoolv1.JobEvent{}
		decodeErr := proto.Unmarshal(body, ev)
		if err != nil {
			p, perr := ParseEncoded(append([]byte{formatProto}, body...))
			if (perr == nil) != (decodeErr == nil) {
				t.Fatalf("parsed: %v, decoded: %v", perr, decodeErr)
			}
			if perr == nil && p.Summary.Header != HeaderOf(ev) {
				t.Fatalf("header %+v, decoded event's %+v", p.Summary.Header, HeaderOf(ev))
			}
			return
		}
		if decodeErr != nil {
			t.Fatalf("inspected, but does not decode: %v", decodeErr)
		}
		want := SummaryOf(ev)
		want.Size = len(body)
		if s != want {
			t.Fatalf("summary\n%+v\ndecoded event's\n%+v", s, want)
		}
	})
}

// TestParseKeepsPayloads: the payload of a parsed event stays as it was
// sent, however many events are parsed and encoded after it (an
// uncompressed payload once went back to a buffer pool and was written
// over by the next).
func TestParseKeepsPayloads(t *testing.T) {
	small := batch(1, 1, 1, false)
	payload, _ := Encode(small)
	if payload[0] != formatProto {
		t.Fatalf("a one-line batch is compressed (format %d): the test needs one that is not", payload[0])
	}
	p, err := ParseEncoded(payload)
	if err != nil {
		t.Fatal(err)
	}
	kept := bytes.Clone(p.Payload())
	for i := range 20 {
		if _, err := Encode(batch(int64(i+100), 7, 1, false)); err != nil {
			t.Fatal(err)
		}
		EncodeBatch(Batch{Sequence: 9, Lines: TextLines(time.Now(), "x")})
		big, _ := Encode(batch(int64(i+2), 1, 50, true))
		if _, err := ParseEncoded(big); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(p.Payload(), kept) {
		t.Fatal("the parsed event's payload changed after later events were parsed and encoded")
	}
}
