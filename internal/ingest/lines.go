package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// DecodeLines decodes newline-delimited JSON as log shippers send it over
// HTTP (Vector's http sink with the json codec and newline-delimited
// framing, Fluent Bit's http output with format json_lines): one JSON
// object per line,
//
//	{"source": "web-1", "id": "abc", "timestamp": 1700000000000, "message": "text"}
//
// source, id and message are required strings; timestamp is required, a
// number of milliseconds since the epoch or an RFC 3339 string. Other
// fields are ignored, since shippers add their own. Blank lines are
// skipped, and lines may end in "\r\n".
//
// A problem on any line refuses the whole body: the error wraps
// ErrMalformed or ErrTooLarge and names the line (from 1) and what is
// wrong.
func DecodeLines(body io.Reader, limits Limits) ([]Event, error) {
	limits = limits.withDefaults()
	data, err := readBody(body, limits)
	if err != nil {
		return nil, err
	}
	var events []Event
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		// Only JSON's own white space makes a line blank: anything else
		// there is a line that is not JSON, and is reported as such.
		line = bytes.Trim(line, " \t\r")
		if len(line) == 0 {
			continue
		}
		if len(events) >= limits.MaxEvents {
			return nil, tooLarge("line %d: over %d events in the body (the limit)", n, limits.MaxEvents)
		}
		e, err := decodeLine(line, limits)
		if err != nil {
			return nil, at(fmt.Sprintf("line %d", n), err)
		}
		events = append(events, e)
	}
	return events, nil
}

func decodeLine(line []byte, limits Limits) (Event, error) {
	// A map, not a struct: encoding/json matches struct fields without
	// regard to case, so a shipper's own "Source" or "ID" field would
	// quietly take the place of ours.
	var fields map[string]json.RawMessage
	if err := unmarshalObject(line, &fields); err != nil {
		if err == errNotObject {
			return Event{}, malformed("not a JSON object")
		}
		return Event{}, malformedCause(err, "not JSON")
	}
	source, err := text(`"source"`, fields["source"])
	if err != nil {
		return Event{}, err
	}
	if err := checkName(`"source"`, source, limits.MaxSourceBytes); err != nil {
		return Event{}, err
	}
	id, err := text(`"id"`, fields["id"])
	if err != nil {
		return Event{}, err
	}
	if err := checkName(`"id"`, id, limits.MaxIDBytes); err != nil {
		return Event{}, err
	}
	ts, err := lineTimestamp(fields["timestamp"])
	if err != nil {
		return Event{}, err
	}
	msg, err := text(`"message"`, fields["message"])
	if err != nil {
		return Event{}, err
	}
	msg, err = message(`"message"`, msg, limits.MaxMessageBytes)
	if err != nil {
		return Event{}, err
	}
	return Event{Source: source, ID: id, Timestamp: ts, Message: msg}, nil
}

// lineTimestamp reads a line's timestamp: a number of milliseconds since
// the epoch, or an RFC 3339 string. The string is there for Vector, which
// by default encodes timestamps that way ("2023-11-14T22:13:20.123456789Z")
// rather than as numbers; its precision beyond the millisecond is dropped,
// as events keep milliseconds.
func lineTimestamp(raw json.RawMessage) (time.Time, error) {
	const name = `"timestamp"`
	if len(raw) == 0 || raw[0] != '"' {
		return millis(name, raw)
	}
	s, err := text(name, raw)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, malformed("%s %s is neither milliseconds since the epoch nor an RFC 3339 time", name, shown([]byte(s)))
	}
	ms := t.UnixMilli()
	if ms <= 0 {
		return time.Time{}, malformed("%s %s is before 1970-01-01T00:00:00.001Z", name, shown([]byte(s)))
	}
	return time.UnixMilli(ms).UTC(), nil
}
