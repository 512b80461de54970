package httpapi

import "bytes"

// A lines frame carries at most this many lines, and this many bytes
// unless a single line is larger. Together with the small hand-off from the
// feed (see streamLogs) they bound what a connection holds.
const (
	maxFrameLines = 1000
	maxFrameBytes = 64 << 10
)

// frame builds one {"type":"lines","lines":[...]} message, reusing its
// buffers from frame to frame.
type frame struct {
	buf   bytes.Buffer // the message so far, without its closing "]}"
	line  []byte       // the line being added, encoded
	lines int
}

const frameHead = `{"type":"lines","lines":[`

func newFrame() *frame {
	f := &frame{}
	f.reset()
	return f
}

func (f *frame) reset() {
	// A frame that carried one huge line keeps a huge buffer: let it go, so
	// what a connection holds between frames stays near the cap.
	if f.buf.Cap() > 2*maxFrameBytes {
		f.buf = bytes.Buffer{}
	}
	f.buf.Reset()
	f.buf.WriteString(frameHead)
	f.lines = 0
}

// encode prepares l for add and reports whether it fits in this frame; a
// frame always takes its first line, however large.
func (f *frame) encode(l *Line) (fits bool) {
	if cap(f.line) > maxFrameBytes {
		f.line = nil // the last line was huge; do not keep its buffer
	}
	f.line = appendLine(f.line[:0], l)
	return f.lines == 0 || (f.lines < maxFrameLines && f.buf.Len()+1+len(f.line)+2 <= maxFrameBytes)
}

// add appends the line last given to encode.
func (f *frame) add() {
	if f.lines > 0 {
		f.buf.WriteByte(',')
	}
	f.buf.Write(f.line)
	f.lines++
}

func (f *frame) empty() bool { return f.lines == 0 }

// message closes the frame and returns it; valid until the next reset.
func (f *frame) message() []byte {
	f.buf.WriteString("]}")
	return f.buf.Bytes()
}
