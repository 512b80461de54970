package events

import (
	"testing"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// FuzzDecode: stored payloads from a corrupt or hostile store never panic
// the reader, and whatever decodes re-encodes to an equal event.
func FuzzDecode(f *testing.F) {
	for _, n := range []int{1, 50} {
		b, _ := Encode(batch(1, 1, n, true))
		f.Add(b)
	}
	f.Add([]byte{formatZstdProto, 0x28, 0xb5, 0x2f, 0xfd})
	f.Add([]byte{formatS2Proto, 0x80, 0x80, 0x80, 0x20})
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

// FuzzDecodeStored: reading a stored payload as far as its header never
// panics, and whenever the payload decodes in full, the header agrees
// with the decoded event, and so do the bytes kept and the event decoded
// from them.
func FuzzDecodeStored(f *testing.F) {
	for _, ev := range storedSamples() {
		b, _ := Encode(ev)
		f.Add(b)
		raw, _ := proto.Marshal(ev)
		f.Add(append([]byte{formatProto}, raw...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, stErr := DecodeStored(b)
		ev, err := Decode(b)
		if err != nil {
			if stErr == nil {
				// The lines are checked only when decoded.
				if _, err := st.Event(); err == nil {
					t.Fatal("decodes as a stored event but not as an event")
				}
			}
			return
		}
		if stErr != nil {
			t.Fatalf("decodes as an event but not as a stored event: %v", stErr)
		}
		if st.Header != HeaderOf(ev) {
			t.Fatalf("header %+v, event's %+v", st.Header, HeaderOf(ev))
		}
		got, err := st.Event()
		if err != nil || !proto.Equal(got, ev) {
			t.Fatalf("stored event decodes differently: %v", err)
		}
		again := &spoolv1.JobEvent{}
		if err := proto.Unmarshal(st.Proto(), again); err != nil || !proto.Equal(again, ev) {
			t.Fatalf("stored bytes decode differently: %v", err)
		}
	})
}

// FuzzStoredUnpack: a stored event unpacked straight from its protobuf is
// what unpacking its decoded message gives, whatever the bytes; and bytes
// that do not decode do not unpack.
func FuzzStoredUnpack(f *testing.F) {
	for _, ev := range publishedSamples() {
		raw, _ := proto.Marshal(ev)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := DecodeStored(append([]byte{formatProto}, body...))
		ev, decodeErr := Decode(append([]byte{formatProto}, body...))
		if err != nil {
			return
		}
		got, err := st.Unpack()
		if (err == nil) != (decodeErr == nil) {
			t.Fatalf("unpacked: %v, decoded: %v", err, decodeErr)
		}
		if err != nil {
			return
		}
		want := Unpack(ev)
		if len(got) != len(want) {
			t.Fatalf("%d events, decoded and unpacked %d", len(got), len(want))
		}
		for i := range got {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("event %d: %v, decoded and unpacked %v", i, got[i], want[i])
			}
		}
	})
}

// FuzzRecode: recoding a payload from a worker (untrusted) never panics,
// and whatever recodes holds the event the payload held.
func FuzzRecode(f *testing.F) {
	for _, ev := range storedSamples() {
		for _, c := range []Codec{S2, Zstd} {
			b, _ := c.Encode(ev)
			f.Add(b, uint8(1-c))
		}
	}
	f.Add([]byte{formatZstdProto, 0x28, 0xb5, 0x2f, 0xfd}, uint8(S2))
	f.Add([]byte{formatS2Proto, 0x80, 0x80, 0x80, 0x20}, uint8(Zstd))
	f.Fuzz(func(t *testing.T, b []byte, codec uint8) {
		c := Codec(codec % 2)
		out, err := c.Recode(b)
		if err != nil {
			return
		}
		want, wantErr := Decode(b)
		got, gotErr := Decode(out)
		if (wantErr == nil) != (gotErr == nil) || (wantErr == nil && !proto.Equal(want, got)) {
			t.Fatalf("recoded to %v: decodes as %v (%v), the payload as %v (%v)", c, got, gotErr, want, wantErr)
		}
	})
}
