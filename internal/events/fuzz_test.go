package events

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzDecode: stored payloads from a corrupt or hostile store never panic
// the reader, and whatever decodes re-encodes to an equal event.
func FuzzDecode(f *testing.F) {
	for _, n := range []int{1, 50} {
		b, _ := Encode(batch(1, 1, n, true))
		f.Add(b)
	}
	f.Add([]byte{formatZstdProto, 0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(ev)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		ev2, err := Decode(again)
		if err != nil || !proto.Equal(ev, ev2) {
			t.Fatalf("round trip differs: %v", err)
		}
	})
}
