package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"unicode/utf8"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/service"
)

// Any output line survives the trip to JSON and back, through either
// encoder (encoding/json for REST, appendLine for the WebSocket): text is
// valid UTF-8, and the exact bytes are recoverable (text itself, or
// text_base64).
func FuzzLineJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred\x1b[0m", "bad \xff\xfe", "\xc3", "tab\tand \"quotes\" <b>&\\", "\u2028\u2029", "\x00\x1f\x7f\r\n"} {
		f.Add([]byte(s), int64(1), false, false)
	}
	f.Fuzz(func(t *testing.T, out []byte, n int64, stderr, partial bool) {
		stream := spoolv1.StreamType_STREAM_TYPE_STDOUT
		if stderr {
			stream = spoolv1.StreamType_STREAM_TYPE_STDERR
		}
		l := lineOf(&spoolv1.OutputEvent{Output: out, LineNumber: n, Stream: stream, Partial: partial}, n*3, int32(n))
		if !utf8.ValidString(l.Text) {
			t.Fatalf("text %q is not UTF-8", l.Text)
		}
		std, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		fast := appendLine(nil, &l)
		var back, backStd Line
		if err := json.Unmarshal(fast, &back); err != nil {
			t.Fatalf("appendLine wrote %q: %v", fast, err)
		}
		if err := json.Unmarshal(std, &backStd); err != nil {
			t.Fatal(err)
		}
		if back != l || backStd != l {
			t.Fatalf("%+v came back as %+v (appendLine %q) and %+v (encoding/json)", l, back, fast, backStd)
		}
		got := []byte(back.Text)
		if back.TextBase64 != "" {
			if got, err = base64.StdEncoding.DecodeString(back.TextBase64); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, out) {
			t.Fatalf("%q came back as %q", out, got)
		}
	})
}

// Any query either parses into a page request within bounds (an end time
// not before the start) or is refused.
// (Whether before_line comes after after_line is the core's rule: it
// refuses the request when asked.)
func FuzzLogQuery(f *testing.F) {
	for _, s := range []string{"", "limit=10", "after_line=5&before_line=9", "before_line=1", "limit=99999999999999999999",
		"after_line=-1", "limit=1&limit=2", "before_line=3&after_line=3", "after_line=%zz",
		"since=2026-11-27T09:30:00Z", "since=2026-11-27T09:30:00.25%2B01:00&until=2026-11-27T10:00:00Z", "until=2026-11-27",
		"since=2026-11-27T10:00:00Z&until=2026-11-27T09:00:00Z", "since=9999-12-31T23:59:59.999999999Z", "since=1&since=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := parseLogQuery(q)
		if err != nil {
			return
		}
		if lq.Limit < 1 || lq.Limit > service.MaxPageLines || lq.After < 0 || lq.After > service.MaxLine || lq.Before < 0 || lq.Before > service.MaxLine ||
			(!lq.Since.IsZero() && !lq.Until.IsZero() && lq.Until.Before(lq.Since)) {
			t.Fatalf("%q parsed as %+v", raw, lq)
		}
	})
}
