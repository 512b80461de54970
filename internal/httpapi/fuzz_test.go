package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"unicode/utf8"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// Any output line survives the trip to JSON and back: text is valid UTF-8,
// and the exact bytes are recoverable (text itself, or text_base64).
func FuzzLineJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred\x1b[0m", "bad \xff\xfe", "\xc3", "tab\tand \"quotes\" <b>&", "\u2028\u2029"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		l := lineOf(&spoolv1.OutputEvent{Output: out, LineNumber: 7}, 1, 1)
		if !utf8.ValidString(l.Text) {
			t.Fatalf("text %q is not UTF-8", l.Text)
		}
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var back Line
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
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

// Any query either parses into a page request within bounds or is refused.
func FuzzLogQuery(f *testing.F) {
	for _, s := range []string{"", "limit=10", "after_line=5&before_line=9", "before_line=1", "limit=99999999999999999999",
		"after_line=-1", "limit=1&limit=2", "before_line=3&after_line=3", "after_line=%zz"} {
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
		if lq.limit < 1 || lq.limit > maxLogLimit || lq.after < 0 || lq.after > maxLine || (lq.before != 0 && lq.before <= lq.after) {
			t.Fatalf("%q parsed as %+v", raw, lq)
		}
	})
}
