package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/ingest"
)

// A body as Vector's http sink sends it with the json codec: its own
// fields besides ours, timestamps in RFC 3339 (Vector's default, with
// nanoseconds) or, once remapped, in milliseconds; with "\r\n" endings,
// blank lines and a last line without a newline.
func TestDecodeLines(t *testing.T) {
	body := `{"source":"web-1","id":"a1","timestamp":"2023-11-14T22:13:20.123456789Z","message":"GET / 200\n","host":"ip-10-0-0-1","source_type":"file"}` + "\r\n" +
		"\r\n" +
		`{"source":"web-1","id":"a2","timestamp":1700000000000,"message":"two\nlines"}` + "\n" +
		"  \t\n" +
		`  {"message":"tz\r\n","timestamp":"2023-11-14T23:13:20+01:00","id":"a3","source":"web-2","Source":"not this"}  ` + "\n" +
		`{"source":"web-1","id":"a4","timestamp":1699999999999,"message":""}` + "\n" +
		`{"source":"web-1","id":"a5","timestamp":1700000000000,"message":"progress 50%\r"}` + "\n" +
		`{"source":"web-1","id":"a6","timestamp":1700000000000,"message":"two newlines\n\n"}`
	got, err := ingest.DecodeLines(strings.NewReader(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, got, []ingest.Event{
		{Source: "web-1", ID: "a1", Timestamp: t0.Add(123 * time.Millisecond), Message: "GET / 200"},
		{Source: "web-1", ID: "a2", Timestamp: t0, Message: "two\nlines"},
		{Source: "web-2", ID: "a3", Timestamp: t0, Message: "tz"},
		{Source: "web-1", ID: "a4", Timestamp: t0.Add(-time.Millisecond), Message: ""},
		{Source: "web-1", ID: "a5", Timestamp: t0, Message: "progress 50%\r"},
		{Source: "web-1", ID: "a6", Timestamp: t0, Message: "two newlines\n"},
	})
}

func TestDecodeLinesEmpty(t *testing.T) {
	for _, body := range []string{"", "\n", "\r\n\r\n", " \n\t\n"} {
		got, err := ingest.DecodeLines(strings.NewReader(body), ingest.Limits{})
		if err != nil || len(got) != 0 {
			t.Errorf("%q: %v, %v", body, got, err)
		}
	}
}

func TestDecodeLinesErrors(t *testing.T) {
	const ok = `{"source":"s","id":"1","timestamp":1700000000000,"message":"m"}`
	tests := []struct {
		name   string
		line   string // line 3 of a body, after a good line and a blank one
		limits ingest.Limits
		kind   error
		want   string
	}{
		{name: "not JSON", line: `{"source":"s",`, want: "line 3: not JSON:"},
		{name: "text", line: `GET / 200`, want: "line 3: not JSON:"},
		{name: "two objects", line: ok + ok, want: "line 3: not JSON:"},
		{name: "object over two lines", line: "{\"source\":\"s\",\n\"id\":\"1\"}", want: "line 3: not JSON:"},
		{name: "not an object", line: `["s","1",1700000000000,"m"]`, want: "line 3: not a JSON object"},
		{name: "null", line: `null`, want: "line 3: not a JSON object"},
		{name: "no source", line: `{"id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: no "source"`},
		{name: "source only in capitals", line: `{"Source":"s","id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: no "source"`},
		{name: "source null", line: `{"source":null,"id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: no "source"`},
		{name: "source empty", line: `{"source":"","id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: "source" is empty`},
		{name: "source not a string", line: `{"source":{"host":"h"},"id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: "source" is not a string`},
		{name: "source not UTF-8", line: "{\"source\":\"\xc3\",\"id\":\"1\",\"timestamp\":1700000000000,\"message\":\"m\"}", want: `line 3: "source" is not valid UTF-8`},
		{name: "source with a tab", line: `{"source":"a\tb","id":"1","timestamp":1700000000000,"message":"m"}`, want: `line 3: "source" has a control character (U+0009)`},
		{name: "source with DEL", line: "{\"source\":\"a\x7f\",\"id\":\"1\",\"timestamp\":1700000000000,\"message\":\"m\"}", want: `line 3: "source" has a control character (U+007F)`},
		{name: "no id", line: `{"source":"s","timestamp":1700000000000,"message":"m"}`, want: `line 3: no "id"`},
		{name: "id a number", line: `{"source":"s","id":1,"timestamp":1700000000000,"message":"m"}`, want: `line 3: "id" is not a string`},
		{name: "id empty", line: `{"source":"s","id":"","timestamp":1700000000000,"message":"m"}`, want: `line 3: "id" is empty`},
		{name: "id lone surrogate", line: `{"source":"s","id":"\udfff","timestamp":1700000000000,"message":"m"}`, want: `line 3: "id" is not valid Unicode (an unpaired surrogate escape)`},
		{name: "no timestamp", line: `{"source":"s","id":"1","message":"m"}`, want: `line 3: no "timestamp"`},
		{name: "timestamp seconds with a fraction", line: `{"source":"s","id":"1","timestamp":1700000000.123,"message":"m"}`, want: `line 3: "timestamp" "1700000000.123" is not a positive integer`},
		{name: "timestamp negative", line: `{"source":"s","id":"1","timestamp":-1,"message":"m"}`, want: `line 3: "timestamp" "-1" is not a positive integer`},
		{name: "timestamp bool", line: `{"source":"s","id":"1","timestamp":true,"message":"m"}`, want: `line 3: "timestamp" "true" is not a positive integer`},
		{name: "timestamp not RFC 3339", line: `{"source":"s","id":"1","timestamp":"14 Nov 23 22:13 UTC","message":"m"}`, want: `line 3: "timestamp" "14 Nov 23 22:13 UTC" is neither milliseconds since the epoch nor an RFC 3339 time`},
		{name: "timestamp digits in a string", line: `{"source":"s","id":"1","timestamp":"1700000000000","message":"m"}`, want: `line 3: "timestamp" "1700000000000" is neither milliseconds since the epoch nor an RFC 3339 time`},
		{name: "timestamp at the epoch", line: `{"source":"s","id":"1","timestamp":"1970-01-01T00:00:00.0009Z","message":"m"}`, want: `line 3: "timestamp" "1970-01-01T00:00:00.0009Z" is before 1970-01-01T00:00:00.001Z`},
		{name: "timestamp before the epoch", line: `{"source":"s","id":"1","timestamp":"1969-07-20T20:17:40Z","message":"m"}`, want: `line 3: "timestamp" "1969-07-20T20:17:40Z" is before 1970-01-01T00:00:00.001Z`},
		{name: "timestamp year 10000", line: `{"source":"s","id":"1","timestamp":253402300800000,"message":"m"}`, want: `line 3: "timestamp" "253402300800000" is after the year 9999`},
		{name: "no message", line: `{"source":"s","id":"1","timestamp":1700000000000}`, want: `line 3: no "message"`},
		{name: "message not a string", line: `{"source":"s","id":"1","timestamp":1700000000000,"message":["a"]}`, want: `line 3: "message" is not a string`},
		{name: "message not UTF-8", line: "{\"source\":\"s\",\"id\":\"1\",\"timestamp\":1700000000000,\"message\":\"\xff\xfe\"}", want: `line 3: "message" is not valid UTF-8`},

		{name: "source over", line: `{"source":"abcde","id":"1","timestamp":1700000000000,"message":"m"}`, limits: ingest.Limits{MaxSourceBytes: 4}, kind: ingest.ErrTooLarge, want: `line 3: "source" is over 4 bytes (the limit)`},
		{name: "id over", line: `{"source":"s","id":"123","timestamp":1700000000000,"message":"m"}`, limits: ingest.Limits{MaxIDBytes: 2}, kind: ingest.ErrTooLarge, want: `line 3: "id" is over 2 bytes (the limit)`},
		{name: "message over", line: `{"source":"s","id":"1","timestamp":1700000000000,"message":"abc\r\n"}`, limits: ingest.Limits{MaxMessageBytes: 2}, kind: ingest.ErrTooLarge, want: `line 3: "message" is over 2 bytes (the limit)`},
		{name: "events over", line: ok, limits: ingest.Limits{MaxEvents: 1}, kind: ingest.ErrTooLarge, want: `line 3: over 1 events in the body (the limit)`},
		{name: "body over", line: ok, limits: ingest.Limits{MaxBodyBytes: 100}, kind: ingest.ErrTooLarge, want: `the body is over 100 bytes (the limit)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			if kind == nil {
				kind = ingest.ErrMalformed
			}
			got, err := ingest.DecodeLines(strings.NewReader(ok+"\n\n"+tc.line+"\n"+ok+"\n"), tc.limits)
			checkError(t, err, kind, tc.want)
			if got != nil {
				t.Errorf("with the error, got %+v", got)
			}
		})
	}
}
