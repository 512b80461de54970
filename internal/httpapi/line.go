package httpapi

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// Line is one output line of a job's log (schema LogLine in openapi.yaml).
//
// Output is bytes, not necessarily UTF-8. Text is always valid UTF-8: the
// line itself when it is, else the line with each run of invalid bytes
// replaced by U+FFFD, and then TextBase64 carries the exact bytes.
type Line struct {
	LineNumber int64  `json:"line_number"`
	Timestamp  int64  `json:"timestamp"` // Unix milliseconds
	Stream     string `json:"stream"`    // "stdout" or "stderr"
	Text       string `json:"text"`
	TextBase64 string `json:"text_base64,omitempty"`
	// No newline followed the line: it goes on in the next line of the
	// same stream (it was longer than a stored batch may be), or it was the
	// process's last output.
	Partial bool  `json:"partial,omitempty"`
	Attempt int32 `json:"attempt"`
}

// linesOf returns the output lines an event of the log holds (none for
// events that are not output). Batches are unpacked with events.Unpack, so
// timestamps are what every other reader of the log sees.
func linesOf(ev *spoolv1.JobEvent) []Line {
	if !events.IsOutput(ev.GetEventType()) {
		return nil
	}
	evs := events.Unpack(ev)
	out := make([]Line, 0, len(evs))
	for _, e := range evs {
		if d := e.GetOutputData(); d != nil {
			out = append(out, lineOf(d, e.GetTimestamp().AsTime().UnixMilli(), e.GetAttempt()))
		}
	}
	return out
}

func lineOf(d *spoolv1.OutputEvent, ms int64, attempt int32) Line {
	l := Line{LineNumber: d.GetLineNumber(), Timestamp: ms, Stream: streamName(d.GetStream()), Partial: d.GetPartial(), Attempt: attempt}
	if b := d.GetOutput(); utf8.Valid(b) {
		l.Text = string(b)
	} else {
		l.Text = strings.ToValidUTF8(string(b), "\uFFFD")
		l.TextBase64 = base64.StdEncoding.EncodeToString(b)
	}
	return l
}

// streamName names a stream; lines from an unspecified stream are shown as
// stdout, which is what a process writes by default.
func streamName(s spoolv1.StreamType) string {
	if s == spoolv1.StreamType_STREAM_TYPE_STDERR {
		return "stderr"
	}
	return "stdout"
}
