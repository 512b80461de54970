package outbox

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadRecord: any bytes on disk either parse as records that re-frame to
// the same bytes, or stop with io.EOF, errShort (saying how long the record
// is, when it can tell) or errTorn; never a panic.
func FuzzReadRecord(f *testing.F) {
	f.Add(appendRecord(appendRecord(nil, kindEvent, []byte("a")), kindResult, nil))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{})
	// A non-canonical length (0x82 0x00 means 2, in two bytes) once made the
	// reader miscount the bytes it consumed.
	canon := appendRecord(nil, kindEvent, []byte("a"))
	f.Add(append([]byte{canon[0] | 0x80, 0x00}, canon[1:]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var reframed []byte
		consumed := 0
		for {
			kind, payload, n, err := parseRecord(data[consumed:])
			if errors.Is(err, errShort) && n != 0 && n <= len(data)-consumed {
				t.Fatalf("short, but the %d bytes left hold the %d-byte record", len(data)-consumed, n)
			}
			if err != nil {
				if err != io.EOF && !bytes.Equal(reframed, data[:consumed]) {
					t.Fatal("records before the bad tail do not re-frame to their bytes")
				}
				return
			}
			consumed += n
			reframed = appendRecord(reframed, kind, payload)
			if !bytes.Equal(reframed, data[:consumed]) {
				t.Fatalf("record does not re-frame to its bytes")
			}
		}
	})
}
