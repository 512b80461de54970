package ingest

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event is one log event from elsewhere, as accepted.
type Event struct {
	Source    string    // CloudWatch: "<logGroup>:<logStream>"; lines: the "source" field
	ID        string    // the event's id, unique within its source
	Timestamp time.Time // from the event (ms precision), UTC
	Message   string    // the event's text, without a trailing newline
}

// checkName checks a source or an id, which name things rather than say
// them: not empty, within max bytes, valid UTF-8, no control characters
// (a newline or an escape sequence in a name would garble every listing,
// key and link it appears in).
func checkName(name, s string, max int) error {
	if s == "" {
		return malformed("%s is empty", name)
	}
	if len(s) > max {
		return tooLarge("%s is over %d bytes (the limit)", name, max)
	}
	if !utf8.ValidString(s) {
		return malformed("%s is not valid UTF-8", name)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return malformed("%s has a control character (%U)", name, r)
	}
	return nil
}

// message makes a message as it is kept: without the newline that ended
// it as a line (one "\n" or "\r\n"), and within max bytes once that is
// gone. Newlines inside it stay.
func message(name, s string, max int) (string, error) {
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		// A "\r" alone ends no line (a program redrawing a progress
		// line writes one): it stays, unless it came before the "\n".
		s = strings.TrimSuffix(t, "\r")
	}
	if len(s) > max {
		return "", tooLarge("%s is over %d bytes (the limit)", name, max)
	}
	return s, nil
}

// maxMillis is the last millisecond of the year 9999. Later times have no
// RFC 3339 form (time.Time.MarshalJSON fails on them), so an event stamped
// after it would break whatever shows or exports it.
var maxMillis = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()

// millis parses a timestamp written as a JSON number of milliseconds
// since the epoch. Only a plain positive integer will do: a fraction or an
// exponent means a sender that does not write what this package expects,
// and guessing its unit could put events decades off.
func millis(name string, raw []byte) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, malformed("no %s", name)
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return time.Time{}, malformed("%s %s is not a positive integer", name, shown(raw))
		}
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || ms > maxMillis {
		return time.Time{}, malformed("%s %s is after the year 9999", name, shown(raw))
	}
	if ms == 0 {
		return time.Time{}, malformed("%s %s is not a positive integer", name, shown(raw))
	}
	return time.UnixMilli(ms).UTC(), nil
}
