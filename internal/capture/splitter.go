package capture

import (
	"bytes"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/events"
)

// splitter cuts the chunks read from a stream into Lines. The reading
// goroutine feeds it and the idle timer flushes it, so mu guards its state
// and also serializes emit: Lines come out one at a time, in stream order.
type splitter struct {
	opts Options
	emit func([]events.Line)
	out  []events.Line // the lines of the current feed or flush

	mu sync.Mutex
	// pending is the unfinished line read so far, at most MaxLine bytes.
	// Emitting it hands its array over to the Line, so it never aliases
	// what was emitted.
	pending []byte
	readAt  time.Time // when pending's last bytes were read
	// idle is the pending line's idle-flush timer, armed when pending
	// gains its first bytes and stopped when they are emitted. gen counts
	// emitted pieces, so a timer that fires too late for its piece (Stop
	// lost the race) sees a newer gen and does nothing.
	idle batcher.Timer
	gen  uint64
	done bool

	// With StripCR, the carriage returns that ended what was read so far:
	// whether they belong to the line is known only from the byte after
	// them (a newline drops them), so they are held back, outside pending
	// and MaxLine, until it arrives.
	heldCRs int
	heldAt  time.Time

	// The chunk being fed, and a copy of it from owned.from on, made the
	// first time a piece lies wholly inside the chunk: such pieces are
	// slices of that one copy instead of one allocation each.
	chunk []byte
	owned struct {
		from int
		data []byte
	}
}

// feed splits a chunk read at now. The chunk is only read during the call.
func (s *splitter) feed(chunk []byte, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chunk, s.owned.data = chunk, nil
	for i := 0; i < len(chunk); {
		j := bytes.IndexByte(chunk[i:], '\n')
		if j < 0 {
			s.segment(i, len(chunk), false, now)
			break
		}
		s.segment(i, i+j, true, now)
		i += j + 1
	}
	s.chunk, s.owned.data = nil, nil
	s.hand()
	if len(s.pending) > 0 && s.idle == nil && s.opts.IdleFlush > 0 {
		gen := s.gen
		s.idle = s.opts.Clock.AfterFunc(s.opts.IdleFlush, func() { s.idleFlush(gen) })
	}
}

// segment adds chunk[i:j] to the current line; newline says a newline
// followed it. Whatever would take the line over MaxLine is cut off first.
func (s *splitter) segment(i, j int, newline bool, now time.Time) {
	if s.opts.StripCR {
		k := j
		for k > i && s.chunk[k-1] == '\r' {
			k--
		}
		if k > i {
			// Something other than a newline followed the held ones:
			// they are part of the line after all.
			s.releaseCRs(now)
		}
		if newline {
			s.heldCRs = 0
		} else if k < j {
			s.heldCRs, s.heldAt = s.heldCRs+j-k, now
		}
		j = k
	}
	for len(s.pending)+j-i > s.opts.MaxLine {
		k := i + s.opts.MaxLine - len(s.pending)
		s.send(s.take(i, k), true, now)
		i = k
	}
	switch {
	case newline:
		s.send(s.take(i, j), false, now)
	case i < j:
		s.pending = s.grow(s.chunk[i:j])
		s.readAt = now
	}
}

// releaseCRs adds the held carriage returns to the current line, cutting
// it at MaxLine as any other bytes would be.
func (s *splitter) releaseCRs(now time.Time) {
	for ; s.heldCRs > 0; s.heldCRs-- {
		if len(s.pending) == s.opts.MaxLine {
			data := s.pending
			s.dropPending()
			s.send(data[:len(data):len(data)], true, now)
		}
		s.pending = s.grow(carriageReturn)
		s.readAt = now
	}
}

var carriageReturn = []byte{'\r'}

// take ends the current piece: pending followed by chunk[i:j], in memory
// the caller may keep.
func (s *splitter) take(i, j int) []byte {
	if len(s.pending) > 0 {
		data := s.grow(s.chunk[i:j])
		s.dropPending()
		return data[:len(data):len(data)]
	}
	if s.owned.data == nil {
		s.owned.from, s.owned.data = i, bytes.Clone(s.chunk[i:])
	}
	i, j = i-s.owned.from, j-s.owned.from
	// A full slice expression, so a receiver's append cannot overwrite the
	// next Line's bytes.
	return s.owned.data[i:j:j]
}

// grow returns pending with b appended. It doubles the capacity, up to
// MaxLine, instead of append's gentler growth for large slices: a long line
// then costs about twice its size in copies rather than several times.
func (s *splitter) grow(b []byte) []byte {
	p := s.pending
	if need := len(p) + len(b); need > cap(p) {
		np := make([]byte, len(p), max(min(2*cap(p), s.opts.MaxLine), need))
		copy(np, p)
		p = np
	}
	return append(p, b...)
}

// dropPending forgets the pending line (its bytes have been handed over)
// and its idle timer.
func (s *splitter) dropPending() {
	s.pending = nil
	s.gen++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

func (s *splitter) send(data []byte, partial bool, t time.Time) {
	s.out = append(s.out, events.Line{Data: data, Stream: s.opts.Stream, Partial: partial, Time: t})
}

// hand emits the lines gathered so far.
func (s *splitter) hand() {
	if len(s.out) > 0 {
		s.emit(s.out)
		clear(s.out)
		s.out = s.out[:0]
	}
}

// flushPending emits the unfinished line as a Partial Line.
func (s *splitter) flushPending() {
	if len(s.pending) == 0 {
		return
	}
	data := s.pending
	s.dropPending()
	s.send(data[:len(data):len(data)], true, s.readAt)
}

// idleFlush is the idle timer's callback for the piece numbered gen.
func (s *splitter) idleFlush(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || gen != s.gen {
		return
	}
	s.idle = nil // fired: nothing to stop
	s.flushPending()
	s.hand()
}

// finish emits the unfinished line, if any, and stops the idle timer: the
// stream has ended and nothing may be emitted after Lines returns.
func (s *splitter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	// No newline came after them: the stream ends in carriage returns.
	s.releaseCRs(s.heldAt)
	s.flushPending()
	s.hand()
	s.dropPending()
	s.done = true
}
