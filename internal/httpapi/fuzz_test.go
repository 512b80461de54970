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

// Any schedule body either becomes a request the core can judge (its
// policies known, its job's time and timeout within what a duration
// holds) or is refused; and a job's request shown back reads as the same
// request.
func FuzzScheduleBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"n","cron":"@hourly","job":{"argv":["x"]}}`, `{"overlap":"skip","missed":"run_once"}`,
		`{"overlap":"sometimes"}`, `{"job":{"run_in_seconds":-1}}`, `{"job":{"run_in_seconds":1e300}}`, `{"job":{"timeout_seconds":0.5,"priority":3,"notify":["https://x"]}}`,
		`{"job":{"run_at":"2026-11-28T03:00:00Z","after":["a"]}}`, `{"job":{"stdin_upload":"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}}`, `{"job":{"batching":{"flush_interval_seconds":0.2}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b scheduleBody
		if json.Unmarshal(data, &b) != nil {
			return
		}
		req, err := b.request()
		if err != nil {
			return
		}
		sc := req.GetSchedule()
		if _, ok := spoolv1.Overlap_name[int32(sc.GetOverlap())]; !ok {
			t.Fatalf("overlap %v", sc.GetOverlap())
		}
		if in := sc.GetJob().GetRunIn(); in != nil && (in.CheckValid() != nil || in.AsDuration() < 0) {
			t.Fatalf("run_in %v", in)
		}
		if to := sc.GetJob().GetParams().GetTimeout(); to != nil && (to.CheckValid() != nil || to.AsDuration() <= 0) {
			t.Fatalf("timeout %v", to)
		}
		shown := enqueueJobOf(sc.GetJob())
		again, err := shown.request()
		if err != nil {
			t.Fatalf("a job's request shown back is refused: %v", err)
		}
		if again.GetQueue() != sc.GetJob().GetQueue() || again.GetPriority() != sc.GetJob().GetPriority() ||
			len(again.GetParams().GetArgv()) != len(sc.GetJob().GetParams().GetArgv()) {
			t.Fatalf("shown back as %v, from %v", again, sc.GetJob())
		}
	})
}

// Any configure body either decodes to a max_running to give the core or
// is refused.
func FuzzConfigureQueueBody(f *testing.F) {
	for _, s := range []string{`{}`, `{"max_running":5}`, `{"max_running":-1}`, `{"max_running":1e10}`, `{"max_running":null}`, `{"other":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b configureQueueBody
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&b) != nil {
			return
		}
		if b.MaxRunning != nil && bytes.Contains(data, []byte("null")) && *b.MaxRunning != 0 {
			t.Fatalf("null decoded to %d", *b.MaxRunning)
		}
	})
}
