package logsearch

import (
	"io"
	"iter"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// EachLine calls f with every output line of evs, in order: the event it
// is stored in and its index there, its line number, its bytes and
// whether it is partial, until f returns false. Batches are walked in
// place, not unpacked: a search looks at every line but keeps few.
func EachLine(evs iter.Seq2[*spoolv1.JobEvent, error], f func(ev *spoolv1.JobEvent, i int, n int64, out []byte, partial bool) bool) error {
	for ev, err := range evs {
		if err != nil {
			return err
		}
		if b := ev.GetOutputBatch(); b != nil {
			for i, o := range b.GetOutputs() {
				if !f(ev, i, b.GetFirstLine()+int64(i), o.GetOutput(), o.GetPartial()) {
					return nil
				}
			}
		} else if d := ev.GetOutputData(); d != nil {
			if !f(ev, 0, d.GetLineNumber(), d.GetOutput(), d.GetPartial()) {
				return nil
			}
		}
	}
	return nil
}

// Copy writes the output lines of evs to w as the job wrote them: every
// line, stdout and stderr in the order they were read, each followed by a
// newline unless it is partial (a piece of a longer line, or output that
// ended without one), so the pieces of a line join up again. It says how
// many bytes it wrote; an error may come after some of them.
func Copy(w io.Writer, evs iter.Seq2[*spoolv1.JobEvent, error]) (int64, error) {
	var n int64
	var werr error
	newline := []byte{'\n'}
	err := EachLine(evs, func(_ *spoolv1.JobEvent, _ int, _ int64, out []byte, partial bool) bool {
		var k int
		if k, werr = w.Write(out); werr == nil && !partial {
			var nl int
			nl, werr = w.Write(newline)
			k += nl
		}
		n += int64(k)
		return werr == nil
	})
	if werr != nil {
		return n, werr
	}
	return n, err
}
