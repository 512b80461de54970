package ingest

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendLine appends e to dst as DecodeLines reads it: one JSON object
// ({"source", "id", "timestamp", "message"}, the timestamp in
// milliseconds) and a newline. It is how spool itself sends events it
// read elsewhere (a backfill from CloudWatch Logs) through the lines
// endpoint, so that they are stored as their senders would have stored
// them. Text that is not valid UTF-8 is refused rather than sent with its
// bad bytes replaced, as the decoders refuse it: a changed line is worse
// than a missing one.
func AppendLine(dst []byte, e Event) ([]byte, error) {
	for _, f := range [...]struct{ name, s string }{{"source", e.Source}, {"id", e.ID}, {"message", e.Message}} {
		if !utf8.ValidString(f.s) {
			return dst, malformed("the %s of event %s is not valid UTF-8", f.name, shown([]byte(e.ID)))
		}
	}
	b, err := json.Marshal(struct {
		Source    string `json:"source"`
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"`
		Message   string `json:"message"`
	}{e.Source, e.ID, e.Timestamp.UnixMilli(), e.Message})
	if err != nil {
		// Strings and a number always marshal.
		return dst, err
	}
	return append(append(dst, b...), '\n'), nil
}
