package events

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// TestBatchProtoIsMarshal: a batch written straight from its lines is, byte
// for byte, its event's protobuf encoding, whatever its lines hold: empty
// or long lines, either stream or an unknown one, partial lines, times
// before 1970 or none, any attempt or line number.
func TestBatchProtoIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edge := []Batch{
		{},
		{Sequence: 1, Lines: []Line{{}}},
		{Sequence: 1 << 40, Attempt: -1, FirstLine: 1 << 50, PlaybackIntervalMillis: -3, Untimed: true,
			Lines: []Line{{Data: []byte{}, Stream: -2, Partial: true, Time: time.Unix(-100, 5)}}},
	}
	for i := range 2000 {
		b := Batch{Sequence: r.Int64N(1 << 20), Attempt: r.Int32N(5), FirstLine: r.Int64N(3), PlaybackIntervalMillis: r.Int32N(100), Untimed: r.IntN(4) == 0}
		if i < len(edge) {
			b = edge[i]
		}
		for range r.IntN(60) {
			data := make([]byte, r.IntN(200))
			for k := range data {
				data[k] = byte(r.IntN(256))
			}
			b.Lines = append(b.Lines, Line{Data: data, Stream: spoolv1.StreamType(r.IntN(3)), Partial: r.IntN(5) == 0,
				Time: time.Unix(r.Int64N(4e9)-2e9, r.Int64N(1e9))})
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		if got := b.AppendProto(nil); !bytes.Equal(got, want) {
			t.Fatalf("batch %d (%d lines): written straight, %d bytes differ from its event's %d", i, len(b.Lines), len(got), len(want))
		}
		enc := EncodeBatch(b)
		ev, err := Decode(enc)
		if err != nil || !proto.Equal(ev, b.Event()) {
			t.Fatalf("batch %d: EncodeBatch decodes to %v, %v", i, ev, err)
		}
	}
}
