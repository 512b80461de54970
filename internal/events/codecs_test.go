package events

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// hexBatch is a batch of n lines of 100 random hex characters: output that
// does not repeat itself, where the codecs differ most.
func hexBatch(seq int64, n int) *spoolv1.JobEvent {
	lines := make([]Line, n)
	for i := range lines {
		b := make([]byte, 50)
		_, _ = rand.Read(b)
		lines[i] = Line{Data: []byte(hex.EncodeToString(b)), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Time: time.UnixMilli(1000 + int64(i))}
	}
	return Batch{Sequence: seq, FirstLine: seq, Attempt: 1, Lines: lines}.Event()
}

func TestParseCodec(t *testing.T) {
	for _, c := range []Codec{S2, Zstd} {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Errorf("ParseCodec(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := ParseCodec("gzip"); err == nil {
		t.Error("ParseCodec(gzip) succeeded")
	}
}

// TestRecode: a payload recoded into either codec says that codec, holds
// the same event, and is recoded to itself; zstd stores hex output in
// well under S2's size.
func TestRecode(t *testing.T) {
	for _, ev := range []*spoolv1.JobEvent{batch(1, 1, 50, true), hexBatch(1, 50), batch(1, 1, 1, false)} {
		s2p, err := S2.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		zp, err := Zstd.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			in   []byte
			to   Codec
			want []byte
		}{{s2p, Zstd, zp}, {zp, S2, s2p}, {s2p, S2, s2p}, {zp, Zstd, zp}} {
			got, err := tc.to.Recode(tc.in)
			if err != nil {
				t.Fatalf("Recode to %v: %v", tc.to, err)
			}
			if got[0] != tc.want[0] || len(got) != len(tc.want) {
				t.Errorf("Recode to %v: format %d, %d bytes; Encode with it gives format %d, %d bytes", tc.to, got[0], len(got), tc.want[0], len(tc.want))
			}
			back, err := Decode(got)
			if err != nil || !proto.Equal(back, ev) {
				t.Fatalf("Recode to %v: decodes to another event (%v)", tc.to, err)
			}
		}
	}
	hexEv := hexBatch(1, 50)
	s2p, _ := S2.Encode(hexEv)
	zp, _ := Zstd.Encode(hexEv)
	if zp[0] != formatZstdProto || len(zp)*10 > len(s2p)*7 {
		t.Errorf("50 hex lines: zstd %d bytes, S2 %d; want zstd under 70%% of S2", len(zp), len(s2p))
	}
	if _, err := Zstd.Recode([]byte{formatS2Proto, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Recode of a corrupt payload: %v, want ErrCorrupt", err)
	}
	if _, err := Zstd.Recode(nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Recode of an empty payload: %v, want ErrCorrupt", err)
	}
}
