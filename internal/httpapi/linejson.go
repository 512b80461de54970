package httpapi

import (
	"strconv"
	"unicode/utf8"
)

// appendLine appends l as JSON with the fields and omissions its struct
// tags give encoding/json, without reflection: every line a WebSocket
// sends goes through here, and it is several times faster. FuzzLineJSON
// checks that encoding/json reads back what it writes.
func appendLine(b []byte, l *Line) []byte {
	b = append(b, `{"line_number":`...)
	b = strconv.AppendInt(b, l.LineNumber, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, l.Timestamp, 10)
	b = append(b, `,"stream":`...)
	b = appendString(b, l.Stream)
	b = append(b, `,"text":`...)
	b = appendString(b, l.Text)
	if l.TextBase64 != "" {
		b = append(b, `,"text_base64":`...)
		b = appendString(b, l.TextBase64)
	}
	if l.Partial {
		b = append(b, `,"partial":true`...)
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(l.Attempt), 10)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like encoding/json it writes
// invalid UTF-8 as U+FFFD and escapes U+2028 and U+2029, which older
// JavaScript parsers take for line ends; unlike it, it leaves <, > and &
// alone (responses are not HTML).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
