package connectapi

import (
	"bytes"
	"testing"

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
