package logsearch

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// matcher tells whether a line contains the query, on the text the line
// shows (see SearchRequest).
type matcher struct {
	query []byte
	fold  bool
	buf   []byte // the shown text of the line at hand, reused
}

func newMatcher(q string, fold bool) *matcher {
	return &matcher{query: shownText(nil, []byte(q), fold), fold: fold}
}

func (m *matcher) match(line []byte) bool {
	if !m.fold && !hasHidden(line) {
		return bytes.Contains(line, m.query) // most lines: nothing to take out
	}
	m.buf = shownText(m.buf[:0], line, m.fold)
	return bytes.Contains(m.buf, m.query)
}

// isHidden is a byte that starts something a terminal does not print: an
// escape sequence or a control character. A carriage return is kept: the
// query has none, so no match spans one.
func isHidden(c byte) bool {
	return c == 0x7f || (c < 0x20 && c != '\t' && c != '\r')
}

func hasHidden(b []byte) bool {
	for _, c := range b {
		if isHidden(c) {
			return true
		}
	}
	return false
}

// shownText appends to dst what b shows on a terminal, ignoring where the
// cursor goes: escape sequences and control characters other than tab and
// carriage return are dropped, and with fold letters are lower-cased.
// Bytes that are not UTF-8 are kept as they are.
func shownText(dst, b []byte, fold bool) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i = skipEscape(b, i)
		case isHidden(c):
			i++
		case c < utf8.RuneSelf:
			if fold && 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if fold && r != utf8.RuneError {
				dst = utf8.AppendRune(dst, unicode.ToLower(r))
			} else {
				dst = append(dst, b[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// skipEscape returns the index just past the escape sequence that starts
// at b[i] (an ESC). It takes the same sequences the web UI's renderer
// hides (ansi.js), so that what is found is what is seen: CSI (ESC [ ...
// final byte), OSC (ESC ] ... BEL or ESC \), DCS, SOS, PM and APC (ESC P,
// X, ^ or _ ... ESC \), and other ESC sequences; one cut off by the end of
// the line ends there.
func skipEscape(b []byte, i int) int {
	i++
	if i == len(b) {
		return i
	}
	in := func(c, lo, hi byte) bool { return lo <= c && c <= hi }
	switch b[i] {
	case '[':
		i++
		for i < len(b) && in(b[i], 0x30, 0x3f) {
			i++
		}
		for i < len(b) && in(b[i], 0x20, 0x2f) {
			i++
		}
		if i < len(b) && in(b[i], 0x40, 0x7e) {
			i++
		}
		return i
	case ']':
		for i++; i < len(b); i++ {
			switch {
			case b[i] == 0x07:
				return i + 1
			case b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\':
				return i + 2
			case b[i] == 0x1b:
				return i // another sequence starts
			}
		}
		return i
	case 'P', 'X', '^', '_':
		end := bytes.IndexByte(b[i:], 0x1b)
		switch {
		case end < 0:
			return len(b)
		case i+end+1 < len(b) && b[i+end+1] == '\\':
			return i + end + 2
		}
		return i + end // another sequence starts
	}
	for i < len(b) && in(b[i], 0x20, 0x2f) {
		i++
	}
	if i < len(b) && in(b[i], 0x30, 0x7e) {
		i++
	}
	return i
}
