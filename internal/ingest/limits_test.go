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
	body := firehoseBody(t, record(t, msg))
	if _, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{MaxDecodedBytes: int64(len(msg))}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{MaxDecodedBytes: int64(len(msg) - 1)})
	checkError(t, err, ingest.ErrTooLarge, fmt.Sprintf("record 0: the decompressed data is over %d bytes (the limit, all records together)", len(msg)-1))
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
