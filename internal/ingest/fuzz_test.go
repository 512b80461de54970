package ingest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/ingest"
)

// fuzzLimits are the limits a fuzzer decodes with: the defaults, or, when
// small is set, limits small enough for short inputs to reach them.
func fuzzLimits(small bool) ingest.Limits {
	if !small {
		return ingest.Limits{
			MaxBodyBytes:    ingest.DefaultMaxBodyBytes,
			MaxDecodedBytes: ingest.DefaultMaxDecodedBytes,
			MaxEvents:       ingest.DefaultMaxEvents,
			MaxMessageBytes: ingest.DefaultMaxMessageBytes,
			MaxSourceBytes:  ingest.DefaultMaxSourceBytes,
			MaxIDBytes:      ingest.DefaultMaxIDBytes,
		}
	}
	return ingest.Limits{MaxBodyBytes: 2048, MaxDecodedBytes: 1024, MaxEvents: 3, MaxMessageBytes: 16, MaxSourceBytes: 24, MaxIDBytes: 6}
}

// checkRefused fails unless err is an input error: decoding bytes from
// memory has no other way to fail.
func checkRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ingest.ErrMalformed) && !errors.Is(err, ingest.ErrTooLarge) {
		t.Fatalf("error %q wraps neither ErrMalformed nor ErrTooLarge", err)
	}
	if errors.Is(err, ingest.ErrMalformed) && errors.Is(err, ingest.ErrTooLarge) {
		t.Fatalf("error %q wraps both ErrMalformed and ErrTooLarge", err)
	}
}

// checkDedupe fails unless Dedupe(events) keeps the first of each (source,
// id), in order.
func checkDedupe(t *testing.T, events []ingest.Event) {
	t.Helper()
	type key struct{ source, id string }
	seen := map[key]bool{}
	var want []ingest.Event
	for _, e := range events {
		if k := (key{e.Source, e.ID}); !seen[k] {
			seen[k] = true
			want = append(want, e)
		}
	}
	got := ingest.Dedupe(events)
	if len(got) != len(want) {
		t.Fatalf("Dedupe kept %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Dedupe: event %d is %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzDecodeFirehose: whatever the body, DecodeFirehose refuses it with an
// input error and no events, or accepts it with events that follow the
// documented rules.
func FuzzDecodeFirehose(f *testing.F) {
	data := dataMessage(f, "/ecs/app", "ecs/app/abc",
		cwEvent{ID: "1", Timestamp: 1700000000000, Message: "hello\n"},
		cwEvent{ID: "2", Timestamp: 1700000000001, Message: "two\nlines\r\n"},
		cwEvent{ID: "1", Timestamp: 1700000000000, Message: "hello again"},
	)
	f.Add(firehoseBody(f, record(f, data), record(f, controlMessage)), false)
	f.Add(firehoseBody(f, record(f, data), record(f, controlMessage)), true)
	f.Add(firehoseBody(f, record(f, dataMessageRaw(`{"id":"x","timestamp":1,"message":"\ud83d\ude00"}`))), false)
	f.Add(firehoseBody(f, "H4sIAAAAAAAA/w=="), false)
	f.Add([]byte(`{"requestId":"r","timestamp":1,"records":[]}`), false)
	f.Add([]byte(`{"requestId":"r","timestamp":1,"records":[{"data":""}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, small bool) {
		limits := fuzzLimits(small)
		req, err := ingest.DecodeFirehose(bytes.NewReader(body), limits)
		if err != nil {
			checkRefused(t, err)
			if req.Events != nil || req.Records != 0 || req.ControlMessages != 0 || !req.Timestamp.IsZero() {
				t.Fatalf("refused with %q, yet gave %+v", err, req)
			}
			return
		}
		if req.RequestID == "" || req.Timestamp.UnixMilli() <= 0 || req.ControlMessages > req.Records {
			t.Fatalf("accepted %+v", req)
		}
		checkAccepted(t, req.Events, limits)
		checkDedupe(t, req.Events)
	})
}

// FuzzDecodeFirehoseMessage fuzzes what a record holds once decompressed,
// the CloudWatch Logs message, which random bodies for FuzzDecodeFirehose
// would almost never reach through base64 and gzip.
func FuzzDecodeFirehoseMessage(f *testing.F) {
	f.Add([]byte(dataMessage(f, "/ecs/app", "ecs/app/abc",
		cwEvent{ID: "1", Timestamp: 1700000000000, Message: "hello\n"},
		cwEvent{ID: "2", Timestamp: 1700000000001, Message: "two\nlines\r\n"},
	)), false)
	f.Add([]byte(controlMessage), false)
	f.Add([]byte(dataMessageRaw(`{"id":"1","timestamp":1,"message":"\ud83d\ude00 \\ud800 \"q\""}`, `{"id":"2","timestamp":2,"message":""}`)), true)
	f.Add([]byte(dataMessageRaw(`{"id":"1","timestamp":1700000000000,"message":"\ud800"}`)), false)
	f.Fuzz(func(t *testing.T, msg []byte, small bool) {
		limits := fuzzLimits(small)
		body := firehoseBody(t, record(t, string(msg)))
		req, err := ingest.DecodeFirehose(bytes.NewReader(body), limits)
		if err != nil {
			checkRefused(t, err)
			if req.RequestID != requestID || req.Events != nil {
				t.Fatalf("refused with %q, yet gave %+v", err, req)
			}
			return
		}
		if req.Records != 1 || req.ControlMessages > 1 {
			t.Fatalf("accepted %+v", req)
		}
		checkAccepted(t, req.Events, limits)
		checkDedupe(t, req.Events)
		if req.ControlMessages == 0 {
			checkMessageAsJSON(t, msg, req.Events)
		}
	})
}

// FuzzDecodeLines: whatever the body, DecodeLines refuses it with an input
// error and no events, or accepts it with events that follow the
// documented rules.
func FuzzDecodeLines(f *testing.F) {
	f.Add([]byte(`{"source":"web-1","id":"a1","timestamp":"2023-11-14T22:13:20.123456789Z","message":"GET / 200\n","host":"h"}`+"\r\n\r\n"+
		`{"source":"web-1","id":"a2","timestamp":1700000000000,"message":"two\nlines"}`+"\n"), false)
	f.Add([]byte(`{"source":"s","id":"1","timestamp":1,"message":"\ud83d\ude00"}`+"\n"+`{"source":"s","id":"1","timestamp":2,"message":"again"}`), true)
	f.Add([]byte(`{"source":"s","id":"1","timestamp":"1970-01-01T00:00:00.001+00:00","message":""}`), false)
	f.Add([]byte("\n \t\r\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, small bool) {
		limits := fuzzLimits(small)
		events, err := ingest.DecodeLines(bytes.NewReader(body), limits)
		if err != nil {
			checkRefused(t, err)
			if events != nil {
				t.Fatalf("refused with %q, yet gave %d events", err, len(events))
			}
			return
		}
		checkAccepted(t, events, limits)
		checkDedupe(t, events)
		checkLinesAsJSON(t, body, events)
	})
}

// checkLinesAsJSON fails unless events are what encoding/json reads in
// the lines of body that are not blank.
func checkLinesAsJSON(t *testing.T, body []byte, events []ingest.Event) {
	t.Helper()
	var want []ingest.Event
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		if line = bytes.Trim(line, " \t\r"); len(line) == 0 {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil {
			t.Fatalf("accepted %q: %v", line, err)
		}
		var e ingest.Event
		for name, v := range map[string]*string{"source": &e.Source, "id": &e.ID, "message": &e.Message} {
			if err := json.Unmarshal(fields[name], v); err != nil {
				t.Fatalf("accepted %q: %s: %v", line, name, err)
			}
		}
		e.Message = withoutNewline(e.Message)
		want = append(want, e)
	}
	if len(events) != len(want) {
		t.Fatalf("%d events, %d lines", len(events), len(want))
	}
	for i, e := range events {
		if w := want[i]; e.Source != w.Source || e.ID != w.ID || e.Message != w.Message {
			t.Fatalf("event %d is %+v, encoding/json reads %+v", i, e, w)
		}
	}
}

// withoutNewline is s without one trailing "\n" or "\r\n".
func withoutNewline(s string) string {
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}

// checkMessageAsJSON fails unless events are what encoding/json reads in
// msg, an accepted DATA_MESSAGE.
func checkMessageAsJSON(t *testing.T, msg []byte, events []ingest.Event) {
	t.Helper()
	var m struct {
		LogGroup  string
		LogStream string
		LogEvents []struct {
			ID        string
			Timestamp int64
			Message   string
		}
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("accepted %q: %v", msg, err)
	}
	if len(events) != len(m.LogEvents) {
		t.Fatalf("%d events, %d in the message", len(events), len(m.LogEvents))
	}
	for i, e := range events {
		w := m.LogEvents[i]
		if e.Source != m.LogGroup+":"+m.LogStream || e.ID != w.ID || e.Timestamp.UnixMilli() != w.Timestamp || e.Message != withoutNewline(w.Message) {
			t.Fatalf("event %d is %+v, encoding/json reads %+v", i, e, w)
		}
	}
}
