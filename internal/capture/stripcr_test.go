package capture_test

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/capture"
	"github.com/spool-run/spool/internal/events"
)

// crsBeforeNewline is what StripCR removes.
var crsBeforeNewline = regexp.MustCompile("\r+\n")

func stripCRs(b []byte) []byte { return crsBeforeNewline.ReplaceAll(b, []byte("\n")) }

// TestStripCR: with StripCR, the carriage returns that end a line are
// dropped and every other one kept, whatever the reads look like; without
// it (TestLines) they stay.
func TestStripCR(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		maxLine  int
		want     []events.Line
	}{
		{"a terminal's newlines", "one\r\ntwo\r\n\r\n", 0, []events.Line{{Data: []byte("one")}, {Data: []byte("two")}, {Data: []byte{}}}},
		{"a program's own CRLF through a terminal", "dos\r\r\n", 0, []events.Line{{Data: []byte("dos")}}},
		{"a progress bar keeps its redraws", "10%\r20%\r\ndone\r\n", 0, []events.Line{{Data: []byte("10%\r20%")}, {Data: []byte("done")}}},
		{"colours pass", "\x1b[31mred\x1b[0m\r\n", 0, []events.Line{{Data: []byte("\x1b[31mred\x1b[0m")}}},
		{"a bare newline", "a\nb\r\n", 0, []events.Line{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"carriage returns at the end stay", "last\r\r", 0, []events.Line{{Data: []byte("last\r\r"), Partial: true}}},
		{"only carriage returns", "\r", 0, []events.Line{{Data: []byte("\r"), Partial: true}}},
		// The held carriage returns do not count towards MaxLine until
		// they turn out to be the line's.
		{"stripped before the cut", "abcd\r\r\n", 4, []events.Line{{Data: []byte("abcd")}}},
		{"kept ones are cut like any byte", "ab\r\r\rc\r\n", 4, []events.Line{{Data: []byte("ab\r\r"), Partial: true}, {Data: []byte("\rc")}}},
		{"kept at the end and cut", "abcd\r\r", 4, []events.Line{{Data: []byte("abcd"), Partial: true}, {Data: []byte("\r\r"), Partial: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maxLine := cmpOr(tc.maxLine, capture.DefaultMaxLine)
			for _, r := range []io.Reader{
				strings.NewReader(tc.in),
				iotest.OneByteReader(strings.NewReader(tc.in)),
				iotest.HalfReader(strings.NewReader(tc.in)),
				iotest.DataErrReader(strings.NewReader(tc.in)),
			} {
				got := captureAll(t, r, capture.Options{Stream: stderr, MaxLine: tc.maxLine, IdleFlush: -1, StripCR: true})
				if !sameLines(got, tc.want) {
					t.Fatalf("%T: got %s, want %s", r, show(got), show(tc.want))
				}
				checkLines(t, stripCRs([]byte(tc.in)), got, maxLine, stderr)
			}
		})
	}
}

// TestStripCRIdleFlush: a line shown early by the idle flush does not take
// a carriage return that a newline may still drop; one that turns out to
// be the line's comes at the start of the next piece.
func TestStripCRIdleFlush(t *testing.T) {
	clock := batchertest.NewClock(time.Time{})
	r := &chunkReader{data: []byte("10%\r20%\r\r\n"), sizes: []int{4, 4, 2}, before: func(read int) {
		if read > 0 {
			clock.Advance(capture.DefaultIdleFlush)
		}
	}}
	got := captureAll(t, r, capture.Options{Stream: stderr, Clock: clock, StripCR: true})
	want := []events.Line{{Data: []byte("10%"), Partial: true}, {Data: []byte("\r20%"), Partial: true}, {Data: []byte{}}}
	if !sameLines(got, want) {
		t.Fatalf("got %s, want %s", show(got), show(want))
	}
}

// FuzzStripCR: FuzzLines with StripCR: the Lines give back the stream less
// the carriage returns before each newline, and with no idle flush they
// are the reference split of that, however the reads fall.
func FuzzStripCR(f *testing.F) {
	f.Add([]byte("a\r\nb\r\r\n\r"), uint8(3), uint8(2), uint16(0))
	f.Add([]byte("abc\r\r\ndef\r\rg\n"), uint8(2), uint8(0), uint16(0))
	f.Add([]byte("10%\r20%\r\n30%\r"), uint8(8), uint8(3), uint16(0b1010))
	f.Add([]byte("\r\r\r\r\r\r\r\r\r\r\r\r\r\n\r\r\r\r\r"), uint8(3), uint8(4), uint16(0xffff))
	f.Fuzz(func(t *testing.T, in []byte, maxLine, chunk uint8, idle uint16) {
		max := 1 + int(maxLine%64)
		clock := batchertest.NewClock(time.Time{})
		r := &chunkReader{data: in, sizes: []int{1 + int(chunk)}, before: func(read int) {
			if idle&(1<<(read%16)) != 0 {
				clock.Advance(capture.DefaultIdleFlush)
			}
		}}
		got := captureAll(t, r, capture.Options{Stream: stderr, MaxLine: max, Clock: clock, StripCR: true})
		stripped := stripCRs(in)
		checkLines(t, stripped, got, max, stderr)
		if idle == 0 {
			if want := reference(stripped, max); !sameLines(got, want) {
				t.Fatalf("got %s, want %s", show(got), show(want))
			}
		}
		if clock.Pending() != 0 {
			t.Fatal("an idle timer outlived Lines")
		}
	})
}
