package capture

import (
	"errors"
	"io"

	"github.com/spool-run/spool/internal/events"
)

// readSize is how much Lines asks for per Read: a pipe's usual capacity, so
// a busy process is drained in few calls.
const readSize = 32 << 10

// maxEmptyReads bounds consecutive Reads that return nothing and no error,
// as bufio does, so a broken reader cannot spin Lines forever.
const maxEmptyReads = 100

// Lines reads r to EOF, calling emit for each line in order. Bytes are kept
// exactly: "\r\n" keeps its "\r", invalid UTF-8 and NUL bytes pass through.
// Each Line's Data is newly allocated and may be kept; a Line's Time is when
// its last byte was read.
//
// emit is called from the calling goroutine and, for idle flushes, from the
// clock's timer; calls never overlap and never happen after Lines returns.
//
// Lines returns nil at EOF, after emitting the unfinished last line, if any,
// as Partial. On a read error it also emits the unfinished line (so no
// output is lost) and returns the error.
func Lines(r io.Reader, o Options, emit func(events.Line)) error {
	return Chunks(r, o, func(lines []events.Line) {
		for _, l := range lines {
			emit(l)
		}
	})
}

// Chunks is Lines handing over, in one call, every line one read (or one
// idle flush, or the end) produced, so a caller that writes lines to disk
// does so once per read rather than once per line. The slice is only valid
// during the call; the Lines in it may be kept.
func Chunks(r io.Reader, o Options, emit func([]events.Line)) error {
	o = o.withDefaults()
	s := &splitter{opts: o, emit: emit}
	buf := make([]byte, readSize)
	for empty := 0; ; {
		n, err := r.Read(buf)
		if n > 0 {
			s.feed(buf[:n], o.Clock.Now())
			empty = 0
		} else if err == nil {
			if empty++; empty == maxEmptyReads {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			s.finish()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
