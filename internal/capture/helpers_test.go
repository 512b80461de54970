package capture_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher/batchertest"
	"github.com/spool-run/spool/internal/capture"
	"github.com/spool-run/spool/internal/events"
)

const stderr = spoolv1.StreamType_STREAM_TYPE_STDERR

// chunkReader returns data in reads of the sizes given by size (cycled),
// calling before ahead of each read, so tests control how a stream arrives.
type chunkReader struct {
	data   []byte
	sizes  []int
	reads  int
	before func(read int)
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.before != nil {
		r.before(r.reads)
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data))
	if len(r.sizes) > 0 {
		n = min(n, r.sizes[r.reads%len(r.sizes)])
	}
	copy(p, r.data[:n])
	r.data = r.data[n:]
	r.reads++
	return n, nil
}

// capture runs Lines over r and returns what it emitted.
func captureAll(t testing.TB, r io.Reader, o capture.Options) []events.Line {
	t.Helper()
	if o.Clock == nil {
		o.Clock = batchertest.NewClock(time.Time{})
	}
	var lines []events.Line
	if err := capture.Lines(r, o, func(l events.Line) { lines = append(lines, l) }); err != nil {
		t.Fatalf("Lines: %v", err)
	}
	return lines
}

// join rebuilds the stream from lines.
func join(lines []events.Line) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l.Data)
		if !l.Partial {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// reference splits data the slow, obvious way: byte by byte, cutting a
// piece when a further non-newline byte arrives after maxLine bytes. It is
// what Lines must emit when no idle flush happens, however data is read.
func reference(data []byte, maxLine int) []events.Line {
	var lines []events.Line
	var cur []byte
	for _, c := range data {
		switch {
		case c == '\n':
			lines = append(lines, events.Line{Data: cur})
			cur = nil
			continue
		case len(cur) == maxLine:
			lines = append(lines, events.Line{Data: cur, Partial: true})
			cur = nil
		}
		cur = append(cur, c)
	}
	if len(cur) > 0 {
		lines = append(lines, events.Line{Data: cur, Partial: true})
	}
	return lines
}

// show renders lines for failure messages: partial ones end in "…".
func show(lines []events.Line) string {
	var parts []string
	for _, l := range lines {
		s := fmt.Sprintf("%q", l.Data)
		if len(l.Data) > 40 {
			s = fmt.Sprintf("<%d bytes>", len(l.Data))
		}
		if l.Partial {
			s += "…"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// sameLines compares Data and Partial.
func sameLines(a, b []events.Line) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) || a[i].Partial != b[i].Partial {
			return false
		}
	}
	return true
}

// checkLines verifies what holds for any output: the stream round-trips,
// no piece is over maxLine or holds a newline, no piece is empty and
// partial, each piece's memory is its own, and every Line carries the
// stream and a time.
func checkLines(t testing.TB, in []byte, lines []events.Line, maxLine int, stream spoolv1.StreamType) {
	t.Helper()
	if out := join(lines); !bytes.Equal(out, in) {
		t.Fatalf("round trip differs: %d bytes in, %d out; lines %s", len(in), len(out), show(lines))
	}
	for i, l := range lines {
		switch {
		case len(l.Data) > maxLine:
			t.Fatalf("line %d is %d bytes, over MaxLine %d", i, len(l.Data), maxLine)
		case bytes.IndexByte(l.Data, '\n') >= 0:
			t.Fatalf("line %d holds a newline", i)
		case l.Partial && len(l.Data) == 0:
			t.Fatalf("line %d is an empty partial line", i)
		case cap(l.Data) != len(l.Data):
			t.Fatalf("line %d: cap %d > len %d, an append would overwrite other bytes", i, cap(l.Data), len(l.Data))
		case l.Stream != stream || l.Time.IsZero():
			t.Fatalf("line %d: stream %v, time %v", i, l.Stream, l.Time)
		}
	}
}
