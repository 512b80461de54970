package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// FirehoseRequest is what an Amazon Data Firehose HTTP endpoint delivery
// of CloudWatch Logs subscription data carries.
type FirehoseRequest struct {
	RequestID       string    // Firehose's id of the delivery, to echo in the response
	Timestamp       time.Time // when Firehose sent it (ms precision), UTC
	Events          []Event   // the events of every DATA_MESSAGE, in the order of the request
	Records         int       // records in the request
	ControlMessages int       // records that were CloudWatch Logs control messages
}

// The two kinds of CloudWatch Logs subscription messages. CloudWatch sends
// a control message when a subscription is set up, to see that the
// destination can be reached; it carries no log events of a program.
const (
	dataMessage    = "DATA_MESSAGE"
	controlMessage = "CONTROL_MESSAGE"
)

// The fields are raw so that each one is checked, and reported, on its
// own: encoding/json would stop at the first value of a wrong type, with
// an error that is hard to tie to a record and event.
type (
	firehoseBody struct {
		RequestID json.RawMessage `json:"requestId"`
		Timestamp json.RawMessage `json:"timestamp"`
		Records   json.RawMessage `json:"records"`
	}
	firehoseRecord struct {
		Data json.RawMessage `json:"data"`
	}
	// cloudWatchMessage is a CloudWatch Logs subscription message. Its
	// owner and subscriptionFilters are of no use here.
	cloudWatchMessage struct {
		MessageType json.RawMessage `json:"messageType"`
		LogGroup    json.RawMessage `json:"logGroup"`
		LogStream   json.RawMessage `json:"logStream"`
		LogEvents   json.RawMessage `json:"logEvents"`
	}
	cloudWatchEvent struct {
		ID        json.RawMessage `json:"id"`
		Timestamp json.RawMessage `json:"timestamp"`
		Message   json.RawMessage `json:"message"`
	}
)

// DecodeFirehose decodes the body of a request of Amazon Data Firehose's
// HTTP endpoint delivery whose records are CloudWatch Logs subscription
// data, as a subscription filter with Firehose as its destination sends
// it: each record's data is a base64-encoded, gzip-compressed CloudWatch
// Logs message. (Firehose's own decompression of CloudWatch Logs records
// must be off: its records are not gzip data, and are refused.)
//
// Control messages are counted and otherwise ignored. Any problem
// in any record refuses the whole request: the error wraps ErrMalformed
// or ErrTooLarge and names the record (and event) and what is wrong.
//
// The response needs the request id even when the request is refused, so
// with an error the result still holds the RequestID when the body is a
// JSON object with a valid requestId, and nothing else. When it does not,
// RequestID is empty; Firehose also sends the id in the
// X-Amz-Firehose-Request-Id header.
func DecodeFirehose(body io.Reader, limits Limits) (FirehoseRequest, error) {
	limits = limits.withDefaults()
	data, err := readBody(body, limits)
	if err != nil {
		return FirehoseRequest{}, err
	}
	var b firehoseBody
	if err := unmarshalStrictObject(data, &b); err != nil {
		switch err {
		case errNotObject:
			return FirehoseRequest{}, malformed("the body is not a JSON object")
		case errTwice:
			return FirehoseRequest{}, malformed("the body names a field twice")
		}
		return FirehoseRequest{}, malformedCause(err, "the body is not JSON")
	}
	id, err := text("requestId", b.RequestID)
	if err == nil && id == "" {
		err = malformed("requestId is empty")
	}
	if err != nil {
		return FirehoseRequest{}, err
	}
	// From here on, a refused request still carries its id.
	refuse := func(err error) (FirehoseRequest, error) {
		return FirehoseRequest{RequestID: id}, err
	}
	ts, err := millis("timestamp", b.Timestamp)
	if err != nil {
		return refuse(err)
	}
	if len(b.Records) == 0 || string(b.Records) == "null" {
		return refuse(malformed("no records"))
	}
	var records []json.RawMessage
	if err := json.Unmarshal(b.Records, &records); err != nil {
		return refuse(malformed("records is not a list"))
	}
	d := firehoseDecoder{limits: limits}
	for i, rec := range records {
		if err := d.record(rec); err != nil {
			return refuse(at(fmt.Sprintf("record %d", i), err))
		}
	}
	return FirehoseRequest{
		RequestID:       id,
		Timestamp:       ts,
		Events:          d.events,
		Records:         len(records),
		ControlMessages: d.controls,
	}, nil
}

// firehoseDecoder holds what the records of one request share: the
// limits, the bytes decompressed so far, the events so far.
type firehoseDecoder struct {
	limits   Limits
	gz       *gzip.Reader // reused from record to record: each one allocates its window
	decoded  int64
	events   []Event
	controls int
}

func (d *firehoseDecoder) record(raw json.RawMessage) error {
	var rec firehoseRecord
	if err := unmarshalStrictObject(raw, &rec); err != nil {
		return malformed("%s", objectProblem(err))
	}
	data, err := text("data", rec.Data)
	if err != nil {
		return err
	}
	compressed, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return malformedCause(err, "not valid base64")
	}
	msg, err := d.decompress(compressed)
	if err != nil {
		return err
	}
	var m cloudWatchMessage
	if err := unmarshalStrictObject(msg, &m); err != nil {
		switch err {
		case errNotObject:
			return malformed("the decompressed data is not a JSON object")
		case errTwice:
			return malformed("the decompressed data names a field twice")
		}
		return malformedCause(err, "the decompressed data is not JSON")
	}
	typ, err := text("messageType", m.MessageType)
	if err != nil {
		return err
	}
	switch typ {
	case controlMessage:
		d.controls++
		return nil
	case dataMessage:
		return d.dataMessage(m)
	default:
		return malformed("unknown messageType %s", shown([]byte(typ)))
	}
}

// decompress gunzips one record's data, refusing it as soon as all the
// records so far come to more than MaxDecodedBytes: a few kilobytes of
// gzip can stand for gigabytes, and only what fits is ever decompressed.
func (d *firehoseDecoder) decompress(compressed []byte) ([]byte, error) {
	var err error
	if d.gz == nil {
		d.gz, err = gzip.NewReader(bytes.NewReader(compressed))
	} else {
		err = d.gz.Reset(bytes.NewReader(compressed))
	}
	if err != nil {
		return nil, malformedCause(err, "not gzip data")
	}
	left := d.limits.MaxDecodedBytes - d.decoded
	// Reading to the end also checks the gzip checksum and size, and that
	// nothing but more gzip members follows.
	msg, over, err := readAtMost(d.gz, left)
	switch {
	case over:
		return nil, tooLarge("the decompressed data is over %d bytes (the limit, all records together)", d.limits.MaxDecodedBytes)
	case err != nil:
		return nil, malformedCause(err, "the gzip data is corrupt")
	}
	d.decoded += int64(len(msg))
	return msg, nil
}

func (d *firehoseDecoder) dataMessage(m cloudWatchMessage) error {
	group, err := text("logGroup", m.LogGroup)
	if err != nil {
		return err
	}
	if group == "" {
		return malformed("logGroup is empty")
	}
	stream, err := text("logStream", m.LogStream)
	if err != nil {
		return err
	}
	if stream == "" {
		return malformed("logStream is empty")
	}
	// CloudWatch allows no ":" in the name of a log group, so the source
	// splits back at its first ":".
	source := group + ":" + stream
	if err := checkName("the source (logGroup:logStream)", source, d.limits.MaxSourceBytes); err != nil {
		return err
	}
	if len(m.LogEvents) == 0 || string(m.LogEvents) == "null" {
		return malformed("no logEvents")
	}
	var events []json.RawMessage
	if err := json.Unmarshal(m.LogEvents, &events); err != nil {
		return malformed("logEvents is not a list")
	}
	for j, raw := range events {
		if len(d.events) >= d.limits.MaxEvents {
			return at(fmt.Sprintf("event %d", j), tooLarge("over %d events in the request (the limit)", d.limits.MaxEvents))
		}
		e, err := d.event(source, raw)
		if err != nil {
			return at(fmt.Sprintf("event %d", j), err)
		}
		d.events = append(d.events, e)
	}
	return nil
}

func (d *firehoseDecoder) event(source string, raw json.RawMessage) (Event, error) {
	var ce cloudWatchEvent
	if err := unmarshalStrictObject(raw, &ce); err != nil {
		return Event{}, malformed("%s", objectProblem(err))
	}
	id, err := text("id", ce.ID)
	if err != nil {
		return Event{}, err
	}
	if err := checkName("the id", id, d.limits.MaxIDBytes); err != nil {
		return Event{}, err
	}
	ts, err := millis("timestamp", ce.Timestamp)
	if err != nil {
		return Event{}, err
	}
	msg, err := text("message", ce.Message)
	if err != nil {
		return Event{}, err
	}
	msg, err = message("the message", msg, d.limits.MaxMessageBytes)
	if err != nil {
		return Event{}, err
	}
	return Event{Source: source, ID: id, Timestamp: ts, Message: msg}, nil
}

// FirehoseResponse is the JSON body Firehose expects in answer to a
// request: the request's id and a timestamp, and on failure a message it
// shows in its error logs (with a status other than 200, which makes it
// retry the request and, in the end, back it up).
type FirehoseResponse struct {
	RequestID    string `json:"requestId"`
	Timestamp    int64  `json:"timestamp"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// maxErrorMessage bounds the errorMessage of a response: this package's
// errors are short, but err may come from anywhere, and a response the
// size of a request would help no one reading Firehose's error logs.
const maxErrorMessage = 1024

// NewFirehoseResponse is the response to a request with the given id,
// answered at now (to the millisecond), that failed with err (nil: it
// succeeded).
func NewFirehoseResponse(requestID string, now time.Time, err error) FirehoseResponse {
	r := FirehoseResponse{RequestID: requestID, Timestamp: now.UnixMilli()}
	if err != nil {
		msg := err.Error()
		if len(msg) > maxErrorMessage {
			cut := maxErrorMessage
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg = msg[:cut] + "..."
		}
		if msg == "" {
			// An empty message would vanish from the JSON (omitempty).
			msg = "failed"
		}
		r.ErrorMessage = msg
	}
	return r
}

// objectProblem says what is wrong with an array element that did not
// decode as an object.
func objectProblem(err error) string {
	if err == errTwice {
		return "names a field twice"
	}
	return "not a JSON object"
}
