package awsstore

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// FuzzDecodeAccepted: the stored stream of a call's accepted events reads
// back as it was written, and any other bytes (a damaged or foreign item)
// are refused as corrupt, never a panic or a huge allocation.
func FuzzDecodeAccepted(f *testing.F) {
	f.Add("id-1", int64(1_764_000_000_123), "GET / 200", int64(7), int64(1), []byte{0})
	f.Add("", int64(1), "a\nb", int64(1), int64(2), []byte{1, 0x28, 0xb5, 0x2f, 0xfd})
	f.Add("é", int64(253402300799999), "", int64(1<<40), int64(3), []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, id string, ms int64, msg string, line, lines int64, garbage []byte) {
		if ms < 0 || line < 0 || lines < 0 {
			return // what the layout never makes
		}
		want := []store.Accepted{
			{RawEvent: store.RawEvent{ID: id, Time: time.UnixMilli(ms).UTC(), Message: msg}, Line: line, Lines: lines, Group: 9},
			{RawEvent: store.RawEvent{ID: id + "x", Time: time.UnixMilli(ms / 2).UTC(), Message: msg + msg}, Line: line + lines, Lines: 1, Group: 9},
		}
		for _, blob := range [][]byte{append([]byte{acceptedPlain}, encodeAccepted(want)...), acceptedEnc.EncodeAll(encodeAccepted(want), []byte{acceptedZstd})} {
			got, err := decodeAccepted(blob, 9)
			if err != nil {
				t.Fatalf("decoding what was encoded: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d events back, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.ID != w.ID || !g.Time.Equal(w.Time) || g.Message != w.Message || g.Line != w.Line || g.Lines != w.Lines || g.Group != w.Group {
					t.Fatalf("event %d: got %+v, want %+v", i, g, w)
				}
			}
		}
		if _, err := decodeAccepted(garbage, 1); err != nil && !errors.Is(err, events.ErrCorrupt) {
			t.Fatalf("garbage refused with %v, which is not events.ErrCorrupt", err)
		}
	})
}
