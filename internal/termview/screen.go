package termview

import (
	"bufio"
	"io"

	"github.com/spool-run/spool"
)

// Screen draws output lines under a status line. On a terminal,
// everything goes to stdout: stderr lines in red, long lines wrapped to the
// width, notes dimmed, and a status line kept at the bottom. Elsewhere it
// prints the lines alone, each on its own stream, as an OutputWriter does.
type Screen struct {
	term   Info
	plain  *OutputWriter // when not a terminal
	w      *bufio.Writer // the terminal
	status string        // drawn under the output on a terminal
	drawn  bool          // the status line is on the screen
}

// NewScreen draws on out (and errOut, for stderr lines when out is not a
// terminal), as t says out is.
func NewScreen(out, errOut io.Writer, t Info) *Screen {
	s := &Screen{term: t}
	if t.TTY {
		s.w = bufio.NewWriter(out)
	} else {
		s.plain = NewOutputWriter(out, errOut)
	}
	return s
}

// Line shows one output line, then the status line under it.
func (s *Screen) Line(l spool.Line) error {
	if !s.term.TTY {
		return s.plain.Write(l)
	}
	s.erase()
	color := ""
	if s.term.Color && l.Stream == spool.Stderr {
		color = Red
	}
	// A partial line ends a row like any other: the status line takes the
	// row under it, so the rest cannot continue in place.
	for _, row := range Wrap([]byte(l.Text), s.term.Width) {
		s.row(color, row)
	}
	return s.draw()
}

// Note shows a remark of spool's own between output lines (terminal only:
// piped output stays the job's).
func (s *Screen) Note(text string) error {
	if !s.term.TTY {
		return nil
	}
	s.erase()
	color := ""
	if s.term.Color {
		color = Dim
	}
	s.row(color, []byte(text))
	return s.draw()
}

// SetStatus replaces the status line and draws it.
func (s *Screen) SetStatus(text string) error {
	s.status = text
	if !s.term.TTY {
		return nil
	}
	s.erase()
	return s.draw()
}

// NextStatus replaces the status line from the next draw on, for a status
// that changes with the line about to be shown.
func (s *Screen) NextStatus(text string) { s.status = text }

// Finish replaces the status line with a last word, leaving it on the
// screen, and flushes.
func (s *Screen) Finish(text string) error {
	if s.term.TTY {
		s.erase()
		s.status = ""
		s.row("", []byte(text))
	}
	return s.Flush()
}

// Clear takes the status line off the screen and flushes, when playback
// stops early.
func (s *Screen) Clear() error {
	if s.term.TTY {
		s.erase()
		s.status = ""
	}
	return s.Flush()
}

// Flush writes out what is buffered.
func (s *Screen) Flush() error {
	if !s.term.TTY {
		return s.plain.Flush()
	}
	return s.w.Flush()
}

func (s *Screen) row(color string, b []byte) {
	if color != "" {
		s.w.WriteString(color)
		s.w.Write(b)
		s.w.WriteString(Reset)
	} else {
		s.w.Write(b)
	}
	s.w.WriteByte('\n')
}

func (s *Screen) erase() {
	if s.drawn {
		s.w.WriteString(ClearLine)
		s.drawn = false
	}
}

// draw writes the status line, without a newline, so the next erase can
// take it back. It is cut to the width: a wrapped status line could not be
// erased with one row's escape.
func (s *Screen) draw() error {
	if s.status != "" {
		text := Truncate(s.status, max(1, s.term.Width-1))
		if s.term.Color {
			text = Dim + text + Reset
		}
		s.w.WriteString(text)
		s.drawn = true
	}
	// bufio.Writer keeps its first error; an empty write returns it.
	_, err := s.w.Write(nil)
	return err
}
