// Package termview draws a job's output for a person: it finds out whether
// a stream is a terminal and how wide, wraps and colours lines, keeps a
// status or progress line at the bottom of the screen and takes it back
// before anything else is written, and paces a recorded log so it plays
// back with the timing it was written with.
//
// It knows nothing of the server: the command line fetches the lines and
// hands them over one at a time. On anything other than a terminal (a pipe,
// a file, a test's buffer) it prints the lines alone, with no escape
// sequences, exactly as they were written.
package termview

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// ANSI sequences the screen draws with.
const (
	Red       = "\x1b[31m"
	Dim       = "\x1b[2m"
	Reset     = "\x1b[0m"
	ClearLine = "\r\x1b[K" // back to column 0 and erase the row
)

// Info says how to draw on an output.
type Info struct {
	TTY   bool
	Width int  // columns, when TTY
	Color bool // when TTY
}

// Detect looks at w, a command's output: a terminal gets the screen
// treatment; anything else (a pipe, a file, a test's buffer) plain lines.
func Detect(w io.Writer) Info {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return Info{}
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	return Info{TTY: true, Width: width, Color: ColorWanted(os.Getenv)}
}

// ColorWanted follows https://no-color.org (NO_COLOR set and not empty
// turns colours off) and leaves dumb terminals alone.
func ColorWanted(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// Bar is a progress bar width cells wide with filled of them full, red on
// a colour terminal when alarm is set (something failed).
func (t Info) Bar(filled, width int, alarm bool) string {
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	if t.Color && alarm {
		bar = Red + bar + Reset
	}
	return bar
}

// Wrap cuts b into rows of at most width columns. A rune takes one column
// (wide characters are rare in build output and would only wrap a little
// early or late), a tab runs to the next multiple of eight, and escape
// sequences (the colours a job printed) take none. Invalid UTF-8 takes one
// column per byte.
func Wrap(b []byte, width int) [][]byte {
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

// Truncate shortens s to n runes, marking the cut.
func Truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Thousands writes a count (never negative) with commas between groups of
// three digits, easier to take in at a glance: 1234567 is 1,234,567.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := len(s) % 3
	out := s[:start]
	for i := start; i < len(s); i += 3 {
		if out != "" {
			out += ","
		}
		out += s[i : i+3]
	}
	return out
}

// Size is a number of bytes as people read it, in powers of 1000 with one
// decimal: "980 bytes", "12.4 MB", "5.4 GB".
func Size(n int64) string {
	const unit = 1000
	if n < unit {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + [...]string{"", "kB", "MB", "GB", "TB"}[i]
}
