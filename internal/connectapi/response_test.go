package connectapi

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// TestEventResponseIsTheEncodedEvent: a stored event sent on undecoded
// encodes to the very bytes of a response holding the decoded event, and
// to the same JSON; one cut from a stored event is sent as a message.
func TestEventResponseIsTheEncodedEvent(t *testing.T) {
	lines := make([]events.Line, 50)
	for i := range lines {
		lines[i] = events.Line{Data: []byte("line"), Stream: spoolv1.StreamType_STREAM_TYPE_STDERR}
	}
	ev := events.Batch{Sequence: 5, FirstLine: 4, Attempt: 2, Lines: lines}.Event()
	payload, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	st, err := events.DecodeStored(payload)
	if err != nil {
		t.Fatal(err)
	}
	if st.Proto() == nil {
		t.Fatal("a stored event read whole carries no stored bytes")
	}
	cut, err := st.TrimBefore(20)
	if err != nil {
		t.Fatal(err)
	}
	cutEv, _ := cut.Event()
	for name, c := range map[string]struct {
		st   *events.Stored
		want *spoolv1.JobEvent
	}{"whole": {st, ev}, "cut": {cut, cutEv}} {
		res, err := eventResponse(c.st)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := proto.MarshalOptions{Deterministic: true}.Marshal(res)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&spoolv1.StreamEventsResponse{Event: c.want})
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: response encodes to %x, want %x", name, got, want)
		}
		gotJSON, err := jsonCodec{"json"}.Marshal(res)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantJSON, _ := protojson.Marshal(&spoolv1.StreamEventsResponse{Event: c.want})
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Fatalf("%s: JSON %s, want %s", name, gotJSON, wantJSON)
		}
	}
}

// TestPageResponses: to a client that decodes stored events, events read
// whole go as their payloads, untouched, several in a message, in order
// with those cut from a batch, which go as messages of their own; to
// others, every event goes as a message.
func TestPageResponses(t *testing.T) {
	var page []*events.Stored
	var payloads [][]byte
	for i := range 3 {
		ev := events.Batch{Sequence: int64(1 + 3*i), FirstLine: int64(1 + 3*i), Attempt: 1, Lines: events.TextLines(time.Now(), "a", "b", "c")}.Event()
		payload, err := events.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		page, payloads = append(page, events.StoredAs(events.HeaderOf(ev), payload)), append(payloads, payload)
	}
	cut, err := page[1].TrimBefore(5)
	if err != nil {
		t.Fatal(err)
	}
	page[1] = cut
	msgs, err := pageResponses(page, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || len(msgs[0].GetStoredEvents()) != 1 || !bytes.Equal(msgs[0].GetStoredEvents()[0], payloads[0]) ||
		msgs[1].GetEvent().GetSequence() != 5 || len(msgs[2].GetStoredEvents()) != 1 || !bytes.Equal(msgs[2].GetStoredEvents()[0], payloads[2]) {
		t.Fatalf("messages %v: want the first payload, the cut batch from sequence 5, the last payload", msgs)
	}
	whole := []*events.Stored{page[0], page[2]}
	if msgs, _ := pageResponses(whole, true); len(msgs) != 1 || len(msgs[0].GetStoredEvents()) != 2 {
		t.Fatalf("two whole events: %d messages, want both in one", len(msgs))
	}
	msgs, err = pageResponses(page, false)
	if err != nil || len(msgs) != 3 || msgs[0].GetStoredEvents() != nil {
		t.Fatalf("to a client that does not decode stored events: %v, %v; want three events", msgs, err)
	}
}
