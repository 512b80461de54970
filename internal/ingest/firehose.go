package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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

// DecodeFirehose decodes the body of a request of Amazon Data Firehose's
// HTTP endpoint delivery whose records are CloudWatch Logs subscription
// data, as a subscription filter with Firehose as its destination sends
// it: each record's data is a base64-encoded, gzip-compressed CloudWatch
// Logs message. (Firehose's own decompression of CloudWatch Logs records
// must be off: its records are not gzip data, and are refused.) It is
// ReadFirehose, then Decode.
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
	d, err := ReadFirehose(body, limits)
	if err != nil {
		return FirehoseRequest{RequestID: d.RequestID}, err
	}
	return d.Decode()
}

// FirehoseDelivery is a Firehose request read and checked as far as its
// records' data: each is base64 of gzip data, and what it decodes to is
// known, but none of it is held decoded yet. What decoding it will take
// (DecodedBytes) can so be reserved before it is taken (Decode).
type FirehoseDelivery struct {
	// RequestID is the request's id, kept with an error when the body
	// is a JSON object with a valid requestId.
	RequestID string
	timestamp time.Time
	limits    Limits
	records   []json.RawMessage
	// messages are the lengths of the records' messages, decompressed.
	messages []int64
	// decoded is what the records decode to, all together: their gzip
	// data and their messages.
	decoded int64
}

// firehoseBody is the body of a request. Its requestId and timestamp are
// raw so that each one is checked, and reported, on its own: encoding/json
// would stop at the first value of a wrong type, with an error that is
// hard to tie to a field.
type firehoseBody struct {
	RequestID json.RawMessage   `json:"requestId"`
	Timestamp json.RawMessage   `json:"timestamp"`
	Records   []json.RawMessage `json:"records"`
}

// ReadFirehose reads the body of a Firehose request within
// limits.MaxBodyBytes and checks it up to its records' data, whose gzip
// data it decompresses as a stream, keeping nothing, only to measure it:
// a record of a few KiB that stands for gigabytes costs no more memory
// here than any other, and the request is refused as soon as its records
// together decode to more than limits.MaxDecodedBytes. Errors are
// DecodeFirehose's, which the result's RequestID comes with when it is
// known.
func ReadFirehose(body io.Reader, limits Limits) (FirehoseDelivery, error) {
	limits = limits.withDefaults()
	data, err := readBody(body, limits)
	if err != nil {
		return FirehoseDelivery{}, err
	}
	var b firehoseBody
	recordsNotList := false
	if err := json.Unmarshal(data, &b); err != nil {
		typ, ok := errors.AsType[*json.UnmarshalTypeError](err)
		switch {
		case ok && strings.EqualFold(typ.Field, "records"):
			// The rest of the body was read all the same; its id
			// goes back with the error.
			recordsNotList = true
		case ok:
			return FirehoseDelivery{}, malformed("the body is not a JSON object")
		default:
			return FirehoseDelivery{}, malformedCause(err, "the body is not JSON")
		}
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return FirehoseDelivery{}, malformed("the body is not a JSON object")
	}
	if uniqueKeys(data) != nil {
		return FirehoseDelivery{}, malformed("the body names a field twice")
	}
	id, err := text("requestId", b.RequestID)
	if err == nil && id == "" {
		err = malformed("requestId is empty")
	}
	if err != nil {
		return FirehoseDelivery{}, err
	}
	// From here on, a refused request still carries its id.
	d := FirehoseDelivery{RequestID: id, limits: limits}
	if d.timestamp, err = millis("timestamp", b.Timestamp); err != nil {
		return d, err
	}
	switch {
	case recordsNotList:
		return d, malformed("records is not a list")
	case b.Records == nil:
		return d, malformed("no records")
	}
	d.records, d.messages = b.Records, make([]int64, len(b.Records))
	var gz gzip.Reader // reused from record to record: each one allocates its window
	for i, rec := range d.records {
		if d.messages[i], err = d.measure(rec, &gz); err != nil {
			return FirehoseDelivery{RequestID: id}, at(fmt.Sprintf("record %d", i), err)
		}
	}
	return d, nil
}

// DecodedBytes is what the delivery's records decode to, all together:
// about what Decode holds while it runs.
func (d FirehoseDelivery) DecodedBytes() int64 { return d.decoded }

// measure checks a record's data and returns the length of its message,
// decompressed, adding its gzip data and its message to d.decoded.
func (d *FirehoseDelivery) measure(raw json.RawMessage, gz *gzip.Reader) (int64, error) {
	compressed, err := recordData(raw)
	if err != nil {
		return 0, err
	}
	left := d.limits.MaxDecodedBytes - d.decoded - int64(len(compressed))
	if left < 0 {
		return 0, d.tooMuchDecoded()
	}
	if err := gz.Reset(bytes.NewReader(compressed)); err != nil {
		return 0, malformedCause(err, "not gzip data")
	}
	// Reading to the end also checks the gzip checksum and size, and that
	// nothing but more gzip members follows.
	n, err := io.Copy(io.Discard, io.LimitReader(gz, left+1))
	switch {
	case n > left:
		return 0, d.tooMuchDecoded()
	case err != nil:
		return 0, malformedCause(err, "the gzip data is corrupt")
	}
	d.decoded += int64(len(compressed)) + n
	return n, nil
}

func (d *FirehoseDelivery) tooMuchDecoded() error {
	return tooLarge("the records decode to over %d bytes, base64 and gzip undone, all records together (%s)",
		d.limits.MaxDecodedBytes, named(d.limits.DecodedSetting))
}

// recordData is the gzip data of a record: its data, base64 undone.
func recordData(raw json.RawMessage) ([]byte, error) {
	var rec struct {
		Data json.RawMessage `json:"data"`
	}
	if err := unmarshalStrictObject(raw, &rec); err != nil {
		return nil, malformed("%s", objectProblem(err))
	}
	data, err := text("data", rec.Data)
	if err != nil {
		return nil, err
	}
	compressed, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, malformedCause(err, "not valid base64")
	}
	return compressed, nil
}

// Decode decodes the records that ReadFirehose measured. Each message is
// decompressed into memory of the size it was measured at; the records'
// data, once decoded, is not held beyond its record.
func (d FirehoseDelivery) Decode() (FirehoseRequest, error) {
	dec := firehoseDecoder{limits: d.limits}
	for i, rec := range d.records {
		if err := dec.record(rec, d.messages[i]); err != nil {
			return FirehoseRequest{RequestID: d.RequestID}, at(fmt.Sprintf("record %d", i), err)
		}
	}
	return FirehoseRequest{
		RequestID:       d.RequestID,
		Timestamp:       d.timestamp,
		Events:          dec.events,
		Records:         len(d.records),
		ControlMessages: dec.controls,
	}, nil
}

// The CloudWatch Logs message of a record, with its fields raw for the
// same reason as firehoseBody's. Its owner and subscriptionFilters are of
// no use here.
type (
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

// firehoseDecoder holds what the records of one request share: the
// limits, the events so far.
type firehoseDecoder struct {
	limits   Limits
	gz       gzip.Reader // reused from record to record: each one allocates its window
	events   []Event
	controls int
}

// record decodes a record whose message is size bytes long.
func (d *firehoseDecoder) record(raw json.RawMessage, size int64) error {
	msg, err := d.message(raw, size)
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

// message is a record's message, decompressed into size bytes. The
// record was measured, so its data is known to be base64 of gzip data
// that decompresses to exactly that.
func (d *firehoseDecoder) message(raw json.RawMessage, size int64) ([]byte, error) {
	compressed, err := recordData(raw)
	if err != nil {
		return nil, err
	}
	if err := d.gz.Reset(bytes.NewReader(compressed)); err != nil {
		return nil, malformedCause(err, "not gzip data")
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(&d.gz, msg); err != nil {
		return nil, malformedCause(err, "the gzip data is corrupt")
	}
	var more [1]byte
	if n, err := d.gz.Read(more[:]); n != 0 || err != io.EOF {
		return nil, malformed("the gzip data is corrupt")
	}
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
