package cli

import (
	"bufio"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/term"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// ANSI sequences the screen draws with.
const (
	ansiRed       = "\x1b[31m"
	ansiDim       = "\x1b[2m"
	ansiReset     = "\x1b[0m"
	ansiClearLine = "\r\x1b[K" // back to column 0 and erase the row
)

// termInfo says how to draw on an output.
type termInfo struct {
	tty   bool
	width int  // columns, when tty
	color bool // when tty
}

// detectTerm looks at w, the command's stdout: a terminal gets the screen
// treatment; anything else (a pipe, a file, a test's buffer) plain lines.
func detectTerm(w io.Writer) termInfo {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return termInfo{}
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	return termInfo{tty: true, width: width, color: colorWanted(os.Getenv)}
}

// colorWanted follows https://no-color.org (NO_COLOR set and not empty
// turns colours off) and leaves dumb terminals alone.
func colorWanted(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// screen draws monitor's output. On a terminal, everything goes to stdout:
// stderr lines in red, long lines wrapped to the width, notes dimmed, and a
// status line kept at the bottom. Elsewhere it prints the lines alone, each
// on its own stream, exactly as `spool logs` does.
type screen struct {
	term   termInfo
	plain  *outputWriter // when not a terminal
	w      *bufio.Writer // the terminal
	status string        // drawn under the output on a terminal
	drawn  bool          // the status line is on the screen
}

func newScreen(e *env, t termInfo) *screen {
	s := &screen{term: t}
	if t.tty {
		s.w = bufio.NewWriter(e.out)
	} else {
		s.plain = newOutputWriter(e.out, e.errOut)
	}
	return s
}

// line shows one output line, then the status line under it.
func (s *screen) line(d *spoolv1.OutputEvent) error {
	if !s.term.tty {
		return s.plain.write(d)
	}
	s.erase()
	color := ""
	if s.term.color && d.GetStream() == spoolv1.StreamType_STREAM_TYPE_STDERR {
		color = ansiRed
	}
	// A partial line ends a row like any other: the status line takes the
	// row under it, so the rest cannot continue in place.
	for _, row := range wrap(d.GetOutput(), s.term.width) {
		s.row(color, row)
	}
	return s.draw()
}

// note shows a remark of spool's own between output lines (terminal only:
// piped output stays the job's).
func (s *screen) note(text string) error {
	if !s.term.tty {
		return nil
	}
	s.erase()
	color := ""
	if s.term.color {
		color = ansiDim
	}
	s.row(color, []byte(text))
	return s.draw()
}

// setStatus replaces the status line.
func (s *screen) setStatus(text string) error {
	s.status = text
	if !s.term.tty {
		return nil
	}
	s.erase()
	return s.draw()
}

// finish replaces the status line with a last word, leaving it on the
// screen, and flushes.
func (s *screen) finish(text string) error {
	if s.term.tty {
		s.erase()
		s.status = ""
		s.row("", []byte(text))
	}
	return s.flush()
}

// clear takes the status line off the screen and flushes, when monitor
// stops early.
func (s *screen) clear() error {
	if s.term.tty {
		s.erase()
		s.status = ""
	}
	return s.flush()
}

func (s *screen) flush() error {
	if !s.term.tty {
		return s.plain.flush()
	}
	return s.w.Flush()
}

func (s *screen) row(color string, b []byte) {
	if color != "" {
		s.w.WriteString(color)
		s.w.Write(b)
		s.w.WriteString(ansiReset)
	} else {
		s.w.Write(b)
	}
	s.w.WriteByte('\n')
}

func (s *screen) erase() {
	if s.drawn {
		s.w.WriteString(ansiClearLine)
		s.drawn = false
	}
}

// draw writes the status line, without a newline, so the next erase can
// take it back. It is cut to the width: a wrapped status line could not be
// erased with one row's escape.
func (s *screen) draw() error {
	if s.status != "" {
		text := truncate(s.status, max(1, s.term.width-1))
		if s.term.color {
			text = ansiDim + text + ansiReset
		}
		s.w.WriteString(text)
		s.drawn = true
	}
	// bufio.Writer keeps its first error; an empty write returns it.
	_, err := s.w.Write(nil)
	return err
}

// wrap cuts b into rows of at most width columns. A rune takes one column
// (wide characters are rare in build output and would only wrap a little
// early or late), a tab runs to the next multiple of eight, and escape
// sequences (the colours a job printed) take none. Invalid UTF-8 takes one
// column per byte.
func wrap(b []byte, width int) [][]byte {
	if width <= 0 {
		return [][]byte{b}
	}
	var rows [][]byte
	start, col := 0, 0
	for i := 0; i < len(b); {
		if n := escapeLen(b[i:]); n > 0 {
			i += n
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		w := 1
		if b[i] == '\t' {
			w = 8 - col%8
		}
		if col+w > width && col > 0 {
			rows = append(rows, b[start:i])
			start, col = i, 0
			if b[i] == '\t' {
				w = 8
			}
		}
		col += w
		i += size
	}
	return append(rows, b[start:])
}

// escapeLen is the length of the ANSI control sequence (CSI: ESC [ params
// final) at the start of b, or 0.
func escapeLen(b []byte) int {
	if len(b) < 2 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b); i++ {
		if b[i] >= 0x40 && b[i] <= 0x7e {
			return i + 1
		}
	}
	return len(b)
}
