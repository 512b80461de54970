package ingest_test

import (
	"encoding/base64"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
)

// gzipped compresses data as CloudWatch Logs does its subscription data.
func gzipped(_ testing.TB, data []byte) []byte { return ingesttest.Gzip(data) }

// record is the data of a Firehose record holding msg, a CloudWatch Logs
// message: gzipped, then base64-encoded.
func record(_ testing.TB, msg string) string { return ingesttest.Record([]byte(msg)) }

// decodedSize is what a record's data counts against MaxDecodedBytes: its
// gzip data and its message.
func decodedSize(t testing.TB, data, msg string) int64 {
	t.Helper()
	gz, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(gz) + len(msg))
}

const (
	requestID   = "8f6a2b9c-1d4e-4f5a-9b3c-7e2d1a0f6c58"
	requestMsec = 1700000000500
)

// firehoseBody is a Firehose delivery of records with the given data.
func firehoseBody(_ testing.TB, data ...string) []byte {
	return ingesttest.FirehoseBody(requestID, requestMsec, data...)
}

type cwEvent = ingesttest.Event

// dataMessage is a CloudWatch Logs DATA_MESSAGE as CloudWatch writes it.
func dataMessage(_ testing.TB, group, stream string, events ...cwEvent) string {
	return string(ingesttest.DataMessage(group, stream, events...))
}

// dataMessageRaw is a DATA_MESSAGE of /ecs/app whose log events are the
// given JSON texts, for events that CloudWatch would never write.
func dataMessageRaw(events ...string) string {
	return `{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"/ecs/app",` +
		`"logStream":"ecs/app/abc","subscriptionFilters":["to-spool"],"logEvents":[` +
		strings.Join(events, ",") + `]}`
}

// controlMessage is the message CloudWatch sends when a subscription is
// set up.
const controlMessage = ingesttest.ControlMessage

// checkError fails unless err wraps kind and reads want; a want ending in
// ":" need only start the message, for errors that carry the standard
// library's words after it.
func checkError(t *testing.T, err, kind error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", err, kind)
	}
	other := ingest.ErrMalformed
	if kind == ingest.ErrMalformed {
		other = ingest.ErrTooLarge
	}
	if errors.Is(err, other) {
		t.Errorf("error %q wraps %v too", err, other)
	}
	got := err.Error()
	if strings.HasSuffix(want, ":") {
		if !strings.HasPrefix(got, want) {
			t.Errorf("error %q, want it to start with %q", got, want)
		}
	} else if got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// checkEvents fails unless got is want, timestamps (and their location)
// included.
func checkEvents(t *testing.T, got, want []ingest.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Source != w.Source || g.ID != w.ID || g.Message != w.Message ||
			!g.Timestamp.Equal(w.Timestamp) || g.Timestamp.Location() != time.UTC {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// checkAccepted fails unless every event follows the rules the package
// documents for what it accepts.
func checkAccepted(t *testing.T, events []ingest.Event, limits ingest.Limits) {
	t.Helper()
	if len(events) > limits.MaxEvents {
		t.Fatalf("%d events, over the limit of %d", len(events), limits.MaxEvents)
	}
	name := func(what, s string, max int) {
		t.Helper()
		if s == "" || len(s) > max || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
			t.Fatalf("accepted %s %q (limit %d)", what, s, max)
		}
	}
	for _, e := range events {
		name("source", e.Source, limits.MaxSourceBytes)
		name("id", e.ID, limits.MaxIDBytes)
		if !utf8.ValidString(e.Message) || len(e.Message) > limits.MaxMessageBytes {
			t.Fatalf("accepted message %q (limit %d)", e.Message, limits.MaxMessageBytes)
		}
		ts := e.Timestamp
		if ts.UnixMilli() <= 0 || ts.Year() > 9999 || ts.Location() != time.UTC || ts.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("accepted timestamp %v", ts)
		}
	}
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

// allocatedBy is how many bytes f allocated on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
