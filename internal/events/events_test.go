package events

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

func batch(seq, firstLine int64, n int, withTimes bool) *spoolv1.JobEvent {
	lines := make([]Line, n)
	for i := range n {
		lines[i] = Line{Data: []byte("line " + strconv.Itoa(i)), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT,
			Time: time.UnixMilli(1000 + int64(i)*100)}
	}
	return Batch{Sequence: seq, FirstLine: firstLine, Attempt: 1, PlaybackIntervalMillis: 10, Lines: lines, Untimed: !withTimes}.Event()
}

func TestEncodeCompressesWhenItHelps(t *testing.T) {
	small := batch(1, 1, 1, false)
	enc, err := Encode(small)
	if err != nil || enc[0] != formatProto {
		t.Fatalf("small event: format %d err %v, want uncompressed", enc[0], err)
	}
	big := batch(1, 1, 50, true)
	enc, err = Encode(big)
	if err != nil || enc[0] != formatS2Proto {
		t.Fatalf("50 similar lines: format %d err %v, want S2", enc[0], err)
	}
	raw, _ := proto.Marshal(big)
	if len(enc) >= len(raw) {
		t.Fatalf("compressed %d bytes, raw %d", len(enc), len(raw))
	}
	for _, ev := range []*spoolv1.JobEvent{small, big} {
		b, _ := Encode(ev)
		got, err := Decode(b)
		if err != nil || !proto.Equal(got, ev) {
			t.Fatalf("round trip: %v", err)
		}
	}
}

// TestDecodesZstdItems: items stored compressed with zstd, as they were
// before S2, read as they always did.
func TestDecodesZstdItems(t *testing.T) {
	ev := batch(1, 1, 50, true)
	raw, _ := proto.Marshal(ev)
	enc, _ := zstd.NewWriter(nil)
	old := enc.EncodeAll(raw, []byte{formatZstdProto})
	if got, err := Decode(old); err != nil || !proto.Equal(got, ev) {
		t.Fatalf("zstd item: %v", err)
	}
	st, err := DecodeStored(old)
	if err != nil || st.Header != HeaderOf(ev) || !bytes.Equal(st.Proto(), raw) {
		t.Fatalf("zstd item read as stored: %+v, %v", st, err)
	}
}

func TestDecodeRefusesGarbage(t *testing.T) {
	huge := binary.AppendUvarint([]byte{formatS2Proto}, MaxDecodedBytes+1)
	for _, b := range [][]byte{nil, {9}, {formatZstdProto, 1, 2, 3}, {formatS2Proto, 1, 2, 3}, {formatProto, 0xff, 0xff}, huge} {
		if _, err := Decode(b); err == nil {
			t.Fatalf("Decode(%v) accepted garbage", b)
		}
	}
}

func TestTrimAndUnpack(t *testing.T) {
	ev := batch(10, 5, 4, true) // sequences 10-13, lines 5-8
	if TrimBefore(ev, 9) != ev || TrimBefore(ev, 14) != nil {
		t.Fatal("TrimBefore outside the batch")
	}
	tail := TrimBefore(ev, 12)
	if tail.GetSequence() != 12 || tail.GetOutputBatch().GetFirstLine() != 7 || len(tail.GetOutputBatch().GetOutputs()) != 2 ||
		len(tail.GetOutputBatch().GetTimestamps()) != 2 || tail.GetTimestamp().AsTime().UnixMilli() != 1200 {
		t.Fatalf("tail from 12: %v", tail)
	}
	if len(ev.GetOutputBatch().GetOutputs()) != 4 {
		t.Fatal("TrimBefore modified its input")
	}
	if l := TrimBeforeLine(ev, 8); l.GetSequence() != 13 || FirstLine(l) != 8 {
		t.Fatalf("from line 8: %v", l)
	}
	if TrimBeforeLine(ev, 9) != nil || TrimBeforeLine(ev, 1) != ev {
		t.Fatal("TrimBeforeLine outside the batch")
	}
	if tm := TrimBeforeTime(ev, time.UnixMilli(1150)); tm.GetSequence() != 12 {
		t.Fatalf("from time 1150: %v", tm)
	}
	lines := Unpack(tail)
	if len(lines) != 2 || lines[0].GetOutputData().GetLineNumber() != 7 || lines[1].GetSequence() != 13 ||
		!bytes.Equal(lines[1].GetOutputData().GetOutput(), []byte("line 3")) || lines[1].GetTimestamp().AsTime().UnixMilli() != 1300 {
		t.Fatalf("Unpack: %v", lines)
	}
	// Without timestamps, lines are spaced by the playback interval.
	un := Unpack(batch(1, 1, 3, false))
	if d := un[2].GetTimestamp().AsTime().Sub(un[0].GetTimestamp().AsTime()); d != 20*time.Millisecond {
		t.Fatalf("simulated spacing %v, want 20ms", d)
	}
	if BatchFloor(75, 50) != 26 || BatchFloor(25, 50) != 1 {
		t.Fatal("BatchFloor")
	}
}

// A stored batch whose sequences claim more lines than it holds is corrupt;
// trimming it must not crash the server that reads it.
func TestTrimCorruptBatch(t *testing.T) {
	ev := batch(10, 5, 2, true)
	ev.GetOutputBatch().EndSequence = 20 // claims 11 lines, holds 2
	for _, trimmed := range []*spoolv1.JobEvent{TrimBefore(ev, 15), TrimBeforeLine(ev, 12)} {
		if n := len(trimmed.GetOutputBatch().GetOutputs()); n != 0 {
			t.Fatalf("trimmed past its lines: %d left", n)
		}
	}
}

// TestTrimAfterTime: a batch keeps its lines up to the end time (to the
// millisecond, inclusive) and says whether it went past it; an event
// without line times is kept or dropped by its own time.
func TestTrimAfterTime(t *testing.T) {
	ev := batch(10, 5, 4, true) // lines at 1000, 1100, 1200, 1300 ms
	if k, past := TrimAfterTime(ev, time.UnixMilli(1300)); k != ev || past {
		t.Fatalf("until its last line: kept %v, past %v", k, past)
	}
	k, past := TrimAfterTime(ev, time.UnixMilli(1150).Add(500*time.Microsecond))
	b := k.GetOutputBatch()
	if !past || len(b.GetOutputs()) != 2 || len(b.GetTimestamps()) != 2 || b.GetStartSequence() != 10 || b.GetEndSequence() != 11 ||
		b.GetFirstLine() != 5 || k.GetSequence() != 10 || HeaderOf(k).LineCount != 2 {
		t.Fatalf("until 1150.5 ms: kept %v, past %v", k, past)
	}
	if len(ev.GetOutputBatch().GetOutputs()) != 4 {
		t.Fatal("TrimAfterTime modified its input")
	}
	if k, past := TrimAfterTime(ev, time.UnixMilli(999)); k != nil || !past {
		t.Fatalf("until before it: kept %v, past %v", k, past)
	}
	untimed := batch(1, 1, 3, false) // its event's time only: 1000 ms
	if k, past := TrimAfterTime(untimed, time.UnixMilli(1000)); k != untimed || past {
		t.Fatalf("untimed, until its time: kept %v, past %v", k, past)
	}
	if k, past := TrimAfterTime(untimed, time.UnixMilli(999)); k != nil || !past {
		t.Fatalf("untimed, until before it: kept %v, past %v", k, past)
	}
}
