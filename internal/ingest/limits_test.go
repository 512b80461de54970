package ingest_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/ingest"
)

// Each limit takes input exactly at it and refuses input one over it.
func TestLimitsBoundaries(t *testing.T) {
	line := func(source, id, msg string) string {
		return fmt.Sprintf(`{"source":%q,"id":%q,"timestamp":1700000000000,"message":%q}`, source, id, msg) + "\n"
	}
	tests := []struct {
		name     string
		limits   ingest.Limits
		at, over string
	}{
		{"source", ingest.Limits{MaxSourceBytes: 4}, line("wéb", "1", "m"), line("wéb1", "1", "m")},
		{"id", ingest.Limits{MaxIDBytes: 3}, line("s", "123", "m"), line("s", "1234", "m")},
		{"message, its newline aside", ingest.Limits{MaxMessageBytes: 3}, line("s", "1", "abc\r\n"), line("s", "1", "abcd")},
		{"events", ingest.Limits{MaxEvents: 2}, line("s", "1", "m") + "\n" + line("s", "2", "m"), line("s", "1", "m") + line("s", "2", "m") + line("s", "3", "m")},
		{"body", ingest.Limits{MaxBodyBytes: int64(len(line("s", "1", "m")))}, line("s", "1", "m"), line("s", "1", "m") + " "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ingest.DecodeLines(strings.NewReader(tc.at), tc.limits); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			_, err := ingest.DecodeLines(strings.NewReader(tc.over), tc.limits)
			if err == nil {
				t.Fatal("over the limit: no error")
			}
			checkError(t, err, ingest.ErrTooLarge, err.Error())
		})
	}
}

func TestLimitsDecodedBoundary(t *testing.T) {
	msg := dataMessage(t, "g", "s", cwEvent{ID: "1", Timestamp: 1700000000000, Message: "m"})
	rec := record(t, msg)
	size := decodedSize(t, rec, msg)
	body := firehoseBody(t, rec)
	if _, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{MaxDecodedBytes: size}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{MaxDecodedBytes: size - 1})
	checkError(t, err, ingest.ErrTooLarge, fmt.Sprintf("record 0: the records decode to over %d bytes, base64 and gzip undone, all records together (the limit)", size-1))
}

// The zero Limits are the documented defaults.
func TestLimitsDefaults(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"body", strings.Repeat(" ", ingest.DefaultMaxBodyBytes+1), "the body is over 16777216 bytes (the limit)"},
		{"source", fmt.Sprintf(`{"source":%q,"id":"1","timestamp":1,"message":""}`, strings.Repeat("s", 1026)), `line 1: "source" is over 1025 bytes (the limit)`},
		{"id", fmt.Sprintf(`{"source":"s","id":%q,"timestamp":1,"message":""}`, strings.Repeat("i", 257)), `line 1: "id" is over 256 bytes (the limit)`},
		{"message", fmt.Sprintf(`{"source":"s","id":"1","timestamp":1,"message":%q}`, strings.Repeat("m", 1<<20+1)), `line 1: "message" is over 1048576 bytes (the limit)`},
		{"events", strings.Repeat(`{"source":"s","id":"1","timestamp":1,"message":""}`+"\n", 100_001), `line 100001: over 100000 events in the body (the limit)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.DecodeLines(strings.NewReader(tc.body), ingest.Limits{})
			checkError(t, err, ingest.ErrTooLarge, tc.want)
		})
	}
	// Negative limits take the defaults too, rather than refusing all.
	_, err := ingest.DecodeLines(strings.NewReader(`{"source":"s","id":"1","timestamp":1,"message":""}`), ingest.Limits{MaxBodyBytes: -1, MaxEvents: -1, MaxIDBytes: -1})
	if err != nil {
		t.Error(err)
	}
}

// A limit the caller names is named in the error, so that a sender's
// operator knows which setting refused it.
func TestLimitsNamedSettings(t *testing.T) {
	named := ingest.Limits{MaxBodyBytes: 100, BodySetting: "ingest.max_body_bytes", DecodedSetting: "ingest.max_decoded_bytes"}
	_, err := ingest.DecodeLines(strings.NewReader(strings.Repeat(" ", 101)), named)
	checkError(t, err, ingest.ErrTooLarge, "the body is over 100 bytes (ingest.max_body_bytes)")

	msg := dataMessage(t, "g", "s", cwEvent{ID: "1", Timestamp: 1700000000000, Message: "m"})
	named.MaxBodyBytes, named.MaxDecodedBytes = 0, 10
	_, err = ingest.DecodeFirehose(bytes.NewReader(firehoseBody(t, record(t, msg))), named)
	checkError(t, err, ingest.ErrTooLarge, "record 0: the records decode to over 10 bytes, base64 and gzip undone, all records together (ingest.max_decoded_bytes)")
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A body over the limit is read up to the limit and dropped, held once:
// not grown as a slice that is copied every time it fills.
func TestLimitsBodyHeldOnce(t *testing.T) {
	const limit = 8 << 20
	allocated := allocatedBy(func() {
		_, err := ingest.DecodeLines(endless{}, ingest.Limits{MaxBodyBytes: limit})
		checkError(t, err, ingest.ErrTooLarge, "the body is over 8388608 bytes (the limit)")
	})
	t.Logf("reading a body over %d MiB allocated %.1f MiB", limit>>20, float64(allocated)/(1<<20))
	if allocated > limit+limit/4 {
		t.Errorf("reading a body over %d MiB allocated %.1f MiB", limit>>20, float64(allocated)/(1<<20))
	}
}
