package termview

import (
	"bufio"
	"io"

	"github.com/spool-run/spool"
)

// OutputWriter prints output lines as the job wrote them: stdout lines to
// one writer, stderr lines to the other, each followed by a newline unless
// the line was partial. Runs of lines to one stream are buffered; switching
// streams flushes first, so the two interleave as they did in the job.
type OutputWriter struct {
	// With Timestamps, a line begins with the time it was written. The
	// pieces of a long or unfinished line are printed as one line, so only
	// the first piece gets one.
	Timestamps bool

	out, errOut *bufio.Writer
	cur         *bufio.Writer // the stream written last
	// The streams whose last piece was partial.
	midLine map[*bufio.Writer]bool
}

// TimestampLayout is RFC 3339 in UTC with milliseconds, as docker logs -t
// and kubectl logs --timestamps print it, and always as wide, so the lines
// stay aligned: 2026-11-25T08:56:11.250Z.
const TimestampLayout = "2006-01-02T15:04:05.000Z07:00"

// NewOutputWriter prints stdout lines to out and stderr lines to errOut.
func NewOutputWriter(out, errOut io.Writer) *OutputWriter {
	return &OutputWriter{out: bufio.NewWriter(out), errOut: bufio.NewWriter(errOut), midLine: map[*bufio.Writer]bool{}}
}

// Write writes a line, after its time when Timestamps is set.
func (w *OutputWriter) Write(l spool.Line) error {
	to := w.out
	if l.Stream == spool.Stderr {
		to = w.errOut
	}
	if w.cur != nil && w.cur != to {
		if err := w.cur.Flush(); err != nil {
			return err
		}
	}
	w.cur = to
	if w.Timestamps {
		if !w.midLine[to] {
			to.WriteString(l.Time.UTC().Format(TimestampLayout) + " ")
		}
		w.midLine[to] = l.Partial
	}
	if _, err := to.WriteString(l.Text); err != nil {
		return err
	}
	if l.Partial {
		return nil
	}
	return to.WriteByte('\n')
}

// Flush writes out the stream written last (a switch of streams has
// flushed the other).
func (w *OutputWriter) Flush() error {
	if w.cur == nil {
		return nil
	}
	return w.cur.Flush()
}
