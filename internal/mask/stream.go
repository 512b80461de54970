package mask

import "io"

// Stream masks a stream given in pieces: the masked output is the same
// however the stream is cut. It holds back the end of what it was given
// while that could still be the start of a secret.
type Stream struct {
	m    *Masker
	held []byte
	// inRun: the output so far ends in a Replacement that the held bytes
	// continue, so it is not written twice.
	inRun bool
}

// Stream returns a new stream of m.
func (m *Masker) Stream() *Stream { return &Stream{m: m} }

// Write appends to out the masked output that p, following what came
// before, decides, and returns it.
func (s *Stream) Write(out, p []byte) []byte {
	if s.m == nil {
		return append(out, p...)
	}
	buf := p
	if len(s.held) > 0 {
		buf = append(s.held, p...)
	}
	out, cut, inRun := s.m.mask(out, buf, false, s.inRun)
	s.inRun = inRun
	// Copied: p belongs to the caller, and held's array is reused.
	s.held = append(s.held[:0], buf[cut:]...)
	return out
}

// Flush appends to out what was held back, masked: the stream has ended.
func (s *Stream) Flush(out []byte) []byte {
	if len(s.held) == 0 {
		return out
	}
	out, _, _ = s.m.mask(out, s.held, true, s.inRun)
	s.held, s.inRun = s.held[:0], false
	return out
}

// readSize is how much Reader asks of the stream it masks at once.
const readSize = 32 << 10

// Reader is r masked by m (r itself when m is nil). A Read returns only
// what is decided; it reads r again while all it read is held back, so a
// caller sees no empty reads r did not make. At the end of r (or an error)
// the held bytes come out, then r's error.
func Reader(r io.Reader, m *Masker) io.Reader {
	if m == nil {
		return r
	}
	return &reader{r: r, s: m.Stream(), buf: make([]byte, readSize)}
}

type reader struct {
	r   io.Reader
	s   *Stream
	buf []byte
	out []byte // masked, not yet returned from out[off:]
	off int
	err error
}

func (m *reader) Read(p []byte) (int, error) {
	for m.off == len(m.out) {
		if m.err != nil {
			return 0, m.err
		}
		n, err := m.r.Read(m.buf)
		m.out, m.off = m.s.Write(m.out[:0], m.buf[:n]), 0
		if err != nil {
			m.out, m.err = m.s.Flush(m.out), err
		} else if n == 0 {
			return 0, nil
		}
	}
	n := copy(p, m.out[m.off:])
	m.off += n
	return n, nil
}
