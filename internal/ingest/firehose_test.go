package ingest_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/ingest"
)

var t0 = time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC) // 1700000000000 ms

// A realistic delivery: a record with three events of an ECS task, as
// CloudWatch writes them (the messages of programs often end in a
// newline), and the control message of the subscription.
func TestDecodeFirehose(t *testing.T) {
	data := dataMessage(t, "/ecs/app", "ecs/app/0f1e2d3c",
		cwEvent{ID: "37946526328745961376149548432437045430347361563385921536", Timestamp: 1700000000000, Message: "listening on :8080\n"},
		cwEvent{ID: "37946526328745961376149548432437045430347361563385921537", Timestamp: 1700000000123, Message: "GET /health 200\r\n"},
		cwEvent{ID: "37946526328745961376149548432437045430347361563385921538", Timestamp: 1699999999999, Message: "panic: boom\n\ngoroutine 1 [running]:\n"},
	)
	body := firehoseBody(t, record(t, data), record(t, controlMessage))

	got, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != requestID || !got.Timestamp.Equal(time.UnixMilli(requestMsec)) || got.Timestamp.Location() != time.UTC {
		t.Errorf("request %q at %v", got.RequestID, got.Timestamp)
	}
	if got.Records != 2 || got.ControlMessages != 1 {
		t.Errorf("%d records, %d control messages; want 2, 1", got.Records, got.ControlMessages)
	}
	const source = "/ecs/app:ecs/app/0f1e2d3c"
	checkEvents(t, got.Events, []ingest.Event{
		{Source: source, ID: "37946526328745961376149548432437045430347361563385921536", Timestamp: t0, Message: "listening on :8080"},
		{Source: source, ID: "37946526328745961376149548432437045430347361563385921537", Timestamp: t0.Add(123 * time.Millisecond), Message: "GET /health 200"},
		// Out of order in time, in order in the request: kept so.
		{Source: source, ID: "37946526328745961376149548432437045430347361563385921538", Timestamp: t0.Add(-time.Millisecond), Message: "panic: boom\n\ngoroutine 1 [running]:"},
	})
}

func TestDecodeFirehoseOnlyControl(t *testing.T) {
	got, err := ingest.DecodeFirehose(bytes.NewReader(firehoseBody(t, record(t, controlMessage))), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 0 || got.Records != 1 || got.ControlMessages != 1 {
		t.Errorf("got %+v", got)
	}
}

// More than one gzip member in a record is still one gzip stream, as
// gzip(1) reads it.
func TestDecodeFirehoseGzipMembers(t *testing.T) {
	msg := dataMessage(t, "g", "s", cwEvent{ID: "1", Timestamp: 1700000000000, Message: "hello"})
	half := len(msg) / 2
	data := append(gzipped(t, []byte(msg[:half])), gzipped(t, []byte(msg[half:]))...)
	body := firehoseBody(t, base64.StdEncoding.EncodeToString(data))
	got, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, got.Events, []ingest.Event{{Source: "g:s", ID: "1", Timestamp: t0, Message: "hello"}})
}

func TestDecodeFirehoseErrors(t *testing.T) {
	goodMsg := dataMessage(t, "/ecs/app", "ecs/app/abc", cwEvent{ID: "1", Timestamp: 1700000000000, Message: "ok"})
	good := record(t, goodMsg)
	goodSize := decodedSize(t, good, goodMsg)
	// second is a delivery whose record 1, after a good one, has the
	// given data.
	second := func(data string) []byte { return firehoseBody(t, good, data) }
	event := func(ev string) []byte {
		return second(record(t, dataMessageRaw(`{"id":"0","timestamp":1700000000000,"message":"fine"}`, ev)))
	}
	gz := gzipped(t, []byte(dataMessageRaw(`{"id":"1","timestamp":1700000000000,"message":"x"}`)))
	b64 := base64.StdEncoding.EncodeToString

	tests := []struct {
		name   string
		body   []byte
		limits ingest.Limits
		kind   error
		want   string
		id     string // the RequestID that still comes with the error
	}{
		// The body.
		{name: "not JSON", body: []byte(`{"requestId": "r1", "records": [`), want: "the body is not JSON:"},
		{name: "empty body", body: nil, want: "the body is not JSON:"},
		{name: "JSON then more", body: []byte(`{"requestId":"r1"} {}`), want: "the body is not JSON:"},
		{name: "not an object", body: []byte(`[{"requestId":"r1"}]`), want: "the body is not a JSON object"},
		{name: "null", body: []byte(`null`), want: "the body is not a JSON object"},
		{name: "no requestId", body: []byte(`{"timestamp":1700000000000,"records":[]}`), want: "no requestId"},
		{name: "null requestId", body: []byte(`{"requestId":null,"timestamp":1700000000000,"records":[]}`), want: "no requestId"},
		{name: "empty requestId", body: []byte(`{"requestId":"","timestamp":1700000000000,"records":[]}`), want: "requestId is empty"},
		{name: "requestId not a string", body: []byte(`{"requestId":7,"timestamp":1700000000000,"records":[]}`), want: "requestId is not a string"},
		{name: "requestId not UTF-8", body: []byte("{\"requestId\":\"r\xff\",\"timestamp\":1700000000000,\"records\":[]}"), want: "requestId is not valid UTF-8"},
		{name: "no timestamp", body: []byte(`{"requestId":"r1","records":[]}`), want: "no timestamp", id: "r1"},
		{name: "timestamp a string", body: []byte(`{"requestId":"r1","timestamp":"1700000000000","records":[]}`), want: `timestamp "\"1700000000000\"" is not a positive integer`, id: "r1"},
		{name: "timestamp negative", body: []byte(`{"requestId":"r1","timestamp":-1,"records":[]}`), want: `timestamp "-1" is not a positive integer`, id: "r1"},
		{name: "timestamp zero", body: []byte(`{"requestId":"r1","timestamp":0,"records":[]}`), want: `timestamp "0" is not a positive integer`, id: "r1"},
		{name: "timestamp fraction", body: []byte(`{"requestId":"r1","timestamp":1700000000000.5,"records":[]}`), want: `timestamp "1700000000000.5" is not a positive integer`, id: "r1"},
		{name: "timestamp exponent", body: []byte(`{"requestId":"r1","timestamp":1.7e12,"records":[]}`), want: `timestamp "1.7e12" is not a positive integer`, id: "r1"},
		{name: "timestamp too late", body: []byte(`{"requestId":"r1","timestamp":99999999999999999999,"records":[]}`), want: `timestamp "99999999999999999999" is after the year 9999`, id: "r1"},
		{name: "no records", body: []byte(`{"requestId":"r1","timestamp":1700000000000}`), want: "no records", id: "r1"},
		{name: "records not a list", body: []byte(`{"requestId":"r1","timestamp":1700000000000,"records":{"data":""}}`), want: "records is not a list", id: "r1"},

		// A record.
		{name: "record not an object", body: []byte(`{"requestId":"r1","timestamp":1700000000000,"records":[{"data":"` + good + `"},"x"]}`), want: "record 1: not a JSON object", id: "r1"},
		{name: "no data", body: []byte(`{"requestId":"r1","timestamp":1700000000000,"records":[{"data":"` + good + `"},{}]}`), want: "record 1: no data", id: "r1"},
		{name: "data not a string", body: []byte(`{"requestId":"r1","timestamp":1700000000000,"records":[{"data":"` + good + `"},{"data":[]}]}`), want: "record 1: data is not a string", id: "r1"},
		{name: "not base64", body: second("H4sI!!!!"), want: "record 1: not valid base64:", id: requestID},
		{name: "base64url", body: second(strings.NewReplacer("+", "-", "/", "_").Replace(b64(bytes.Repeat([]byte{0xfb, 0xff}, 30)))), want: "record 1: not valid base64:", id: requestID},
		{name: "empty data", body: second(""), want: "record 1: not gzip data:", id: requestID},
		{name: "not gzip", body: second(b64([]byte(dataMessageRaw()))), want: "record 1: not gzip data:", id: requestID},
		{name: "gzip cut short", body: second(b64(gz[:len(gz)-6])), want: "record 1: the gzip data is corrupt:", id: requestID},
		{name: "gzip checksum", body: second(b64(append(gz[:len(gz)-8:len(gz)-8], 0, 0, 0, 0, 0, 0, 0, 0))), want: "record 1: the gzip data is corrupt:", id: requestID},
		{name: "gzip then garbage", body: second(b64(append(gz[:len(gz):len(gz)], "garbage"...))), want: "record 1: the gzip data is corrupt:", id: requestID},
		{name: "decompressed not JSON", body: second(record(t, `{"messageType":"DATA_MESSAGE",`)), want: "record 1: the decompressed data is not JSON:", id: requestID},
		{name: "decompressed two objects", body: second(record(t, controlMessage+"\n"+controlMessage)), want: "record 1: the decompressed data is not JSON:", id: requestID},
		{name: "decompressed not an object", body: second(record(t, `[]`)), want: "record 1: the decompressed data is not a JSON object", id: requestID},
		{name: "no messageType", body: second(record(t, `{"logGroup":"g","logStream":"s","logEvents":[]}`)), want: "record 1: no messageType", id: requestID},
		{name: "unknown messageType", body: second(record(t, `{"messageType":"DATA","logGroup":"g","logStream":"s","logEvents":[]}`)), want: `record 1: unknown messageType "DATA"`, id: requestID},
		{name: "long unknown messageType", body: second(record(t, `{"messageType":"`+strings.Repeat("X", 1000)+`"}`)), want: `record 1: unknown messageType "` + strings.Repeat("X", 40) + `"...`, id: requestID},
		{name: "no logGroup", body: second(record(t, `{"messageType":"DATA_MESSAGE","logStream":"s","logEvents":[]}`)), want: "record 1: no logGroup", id: requestID},
		{name: "empty logGroup", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"","logStream":"s","logEvents":[]}`)), want: "record 1: logGroup is empty", id: requestID},
		{name: "no logStream", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logEvents":[]}`)), want: "record 1: no logStream", id: requestID},
		{name: "empty logStream", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"","logEvents":[]}`)), want: "record 1: logStream is empty", id: requestID},
		{name: "logStream not a string", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":1,"logEvents":[]}`)), want: "record 1: logStream is not a string", id: requestID},
		{name: "control character in logStream", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"a\u001b[31m","logEvents":[]}`)), want: "record 1: the source (logGroup:logStream) has a control character (U+001B)", id: requestID},
		{name: "no logEvents", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"s"}`)), want: "record 1: no logEvents", id: requestID},
		{name: "logEvents not a list", body: second(record(t, `{"messageType":"DATA_MESSAGE","logGroup":"g","logStream":"s","logEvents":{}}`)), want: "record 1: logEvents is not a list", id: requestID},

		// An event.
		{name: "event not an object", body: event(`"hello"`), want: "record 1, event 1: not a JSON object", id: requestID},
		{name: "event field twice", body: event(`{"id":"1","timestamp":1700000000000,"message":0,"Message":"x"}`), want: "record 1, event 1: names a field twice", id: requestID},
		{name: "body field twice", body: []byte(`{"requestId":"r1","RequestID":"r2","timestamp":1700000000000,"records":[]}`), want: "the body names a field twice"},
		{name: "event null", body: event(`null`), want: "record 1, event 1: not a JSON object", id: requestID},
		{name: "no id", body: event(`{"timestamp":1700000000000,"message":"m"}`), want: "record 1, event 1: no id", id: requestID},
		{name: "empty id", body: event(`{"id":"","timestamp":1700000000000,"message":"m"}`), want: "record 1, event 1: the id is empty", id: requestID},
		{name: "id not a string", body: event(`{"id":12,"timestamp":1700000000000,"message":"m"}`), want: "record 1, event 1: id is not a string", id: requestID},
		{name: "id with a newline", body: event(`{"id":"1\n2","timestamp":1700000000000,"message":"m"}`), want: "record 1, event 1: the id has a control character (U+000A)", id: requestID},
		{name: "id with C1 control", body: event(`{"id":"1\u00852","timestamp":1700000000000,"message":"m"}`), want: "record 1, event 1: the id has a control character (U+0085)", id: requestID},
		{name: "no timestamp", body: event(`{"id":"1","message":"m"}`), want: "record 1, event 1: no timestamp", id: requestID},
		{name: "timestamp null", body: event(`{"id":"1","timestamp":null,"message":"m"}`), want: "record 1, event 1: no timestamp", id: requestID},
		{name: "timestamp a string", body: event(`{"id":"1","timestamp":"now","message":"m"}`), want: `record 1, event 1: timestamp "\"now\"" is not a positive integer`, id: requestID},
		{name: "timestamp negative", body: event(`{"id":"1","timestamp":-5,"message":"m"}`), want: `record 1, event 1: timestamp "-5" is not a positive integer`, id: requestID},
		{name: "timestamp zero", body: event(`{"id":"1","timestamp":0,"message":"m"}`), want: `record 1, event 1: timestamp "0" is not a positive integer`, id: requestID},
		{name: "timestamp fraction", body: event(`{"id":"1","timestamp":1.5,"message":"m"}`), want: `record 1, event 1: timestamp "1.5" is not a positive integer`, id: requestID},
		{name: "timestamp year 10000", body: event(`{"id":"1","timestamp":253402300800000,"message":"m"}`), want: `record 1, event 1: timestamp "253402300800000" is after the year 9999`, id: requestID},
		{name: "no message", body: event(`{"id":"1","timestamp":1700000000000}`), want: "record 1, event 1: no message", id: requestID},
		{name: "message null", body: event(`{"id":"1","timestamp":1700000000000,"message":null}`), want: "record 1, event 1: no message", id: requestID},
		{name: "message not a string", body: event(`{"id":"1","timestamp":1700000000000,"message":{"level":"info"}}`), want: "record 1, event 1: message is not a string", id: requestID},
		{name: "message not UTF-8", body: event("{\"id\":\"1\",\"timestamp\":1700000000000,\"message\":\"caf\xe9\"}"), want: "record 1, event 1: message is not valid UTF-8", id: requestID},
		{name: "message lone high surrogate", body: event(`{"id":"1","timestamp":1700000000000,"message":"a\ud83dz"}`), want: "record 1, event 1: message is not valid Unicode (an unpaired surrogate escape)", id: requestID},
		{name: "message lone low surrogate", body: event(`{"id":"1","timestamp":1700000000000,"message":"\ude00"}`), want: "record 1, event 1: message is not valid Unicode (an unpaired surrogate escape)", id: requestID},
		{name: "message surrogates reversed", body: event(`{"id":"1","timestamp":1700000000000,"message":"\ude00\ud83d"}`), want: "record 1, event 1: message is not valid Unicode (an unpaired surrogate escape)", id: requestID},

		// Limits.
		{name: "body", body: second(good), limits: ingest.Limits{MaxBodyBytes: 100}, kind: ingest.ErrTooLarge, want: "the body is over 100 bytes (the limit)"},
		{name: "decoded", body: second(good), limits: ingest.Limits{MaxDecodedBytes: goodSize + 10}, kind: ingest.ErrTooLarge, want: fmt.Sprintf("record 1: the records decode to over %d bytes, base64 and gzip undone, all records together (the limit)", goodSize+10), id: requestID},
		{name: "events", body: event(`{"id":"1","timestamp":1700000000000,"message":"m"}`), limits: ingest.Limits{MaxEvents: 2}, kind: ingest.ErrTooLarge, want: "record 1, event 1: over 2 events in the request (the limit)", id: requestID},
		{name: "message", body: event(`{"id":"1","timestamp":1700000000000,"message":"12345\n"}`), limits: ingest.Limits{MaxMessageBytes: 4}, kind: ingest.ErrTooLarge, want: "record 1, event 1: the message is over 4 bytes (the limit)", id: requestID},
		{name: "id", body: event(`{"id":"1234","timestamp":1700000000000,"message":"m"}`), limits: ingest.Limits{MaxIDBytes: 3}, kind: ingest.ErrTooLarge, want: "record 1, event 1: the id is over 3 bytes (the limit)", id: requestID},
		{name: "source", body: second(record(t, dataMessage(t, "/ecs/app", "ecs/app/abcd"))), limits: ingest.Limits{MaxSourceBytes: 20}, kind: ingest.ErrTooLarge, want: "record 1: the source (logGroup:logStream) is over 20 bytes (the limit)", id: requestID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			if kind == nil {
				kind = ingest.ErrMalformed
			}
			got, err := ingest.DecodeFirehose(bytes.NewReader(tc.body), tc.limits)
			checkError(t, err, kind, tc.want)
			if want := (ingest.FirehoseRequest{RequestID: tc.id}); got.RequestID != want.RequestID || !got.Timestamp.IsZero() ||
				got.Events != nil || got.Records != 0 || got.ControlMessages != 0 {
				t.Errorf("with the error, got %+v, want %+v", got, want)
			}
		})
	}
}

// A record whose data decompresses to far more than MaxDecodedBytes is
// refused once the limit is passed, without the rest being decompressed,
// and without what was decompressed being held in memory; the error names
// the limit as the caller's configuration does.
func TestDecodeFirehoseGzipBomb(t *testing.T) {
	const limit = 1 << 20
	// 256 MiB of JSON white space in a record of a few hundred KiB: 64
	// gzip members of 4 MiB each, which makes one gzip stream (RFC 1952)
	// and costs one compression to build, where compressing 256 MiB
	// would take the race detector a minute.
	member := gzipped(t, bytes.Repeat([]byte{' '}, 4<<20))
	bomb := bytes.Repeat(member, 64)
	body := firehoseBody(t, base64.StdEncoding.EncodeToString(bomb))
	t.Logf("a %d-byte body that decompresses to 256 MiB", len(body))

	allocated := allocatedBy(func() {
		_, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{MaxDecodedBytes: limit, DecodedSetting: "ingest.max_decoded_bytes"})
		checkError(t, err, ingest.ErrTooLarge, "record 0: the records decode to over 1048576 bytes, base64 and gzip undone, all records together (ingest.max_decoded_bytes)")
	})
	// The body, its record and the record's gzip data take about a MiB;
	// the decompressed data is measured as it comes and never held, not
	// even the MiB up to the limit.
	t.Logf("decoding allocated %.1f MiB", float64(allocated)/(1<<20))
	if allocated > 4<<20 {
		t.Errorf("decoding allocated %.1f MiB", float64(allocated)/(1<<20))
	}
}

// The limit holds for all records together, not each one.
func TestDecodeFirehoseDecodedAcrossRecords(t *testing.T) {
	msg := dataMessage(t, "g", "s", cwEvent{ID: "1", Timestamp: 1700000000000, Message: strings.Repeat("x", 500)})
	rec := record(t, msg)
	limit := 2*decodedSize(t, rec, msg) + 10
	if _, err := ingest.DecodeFirehose(bytes.NewReader(firehoseBody(t, rec, rec)), ingest.Limits{MaxDecodedBytes: limit}); err != nil {
		t.Fatalf("two records within the limit: %v", err)
	}
	_, err := ingest.DecodeFirehose(bytes.NewReader(firehoseBody(t, rec, rec, rec)), ingest.Limits{MaxDecodedBytes: limit})
	checkError(t, err, ingest.ErrTooLarge, fmt.Sprintf("record 2: the records decode to over %d bytes, base64 and gzip undone, all records together (the limit)", limit))
}

// A reader's own error is returned as it is, for the caller to judge.
func TestDecodeFirehoseReadError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := ingest.DecodeFirehose(&failingReader{err: boom}, ingest.Limits{})
	if !errors.Is(err, boom) || errors.Is(err, ingest.ErrMalformed) || errors.Is(err, ingest.ErrTooLarge) {
		t.Errorf("error %v", err)
	}
}

func TestNewFirehoseResponse(t *testing.T) {
	now := time.Date(2023, 11, 14, 23, 13, 21, 999_999_999, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, `{"requestId":"r1","timestamp":1700000001999}`},
		{"failure", errors.New(`record 3: not valid base64`), `{"requestId":"r1","timestamp":1700000001999,"errorMessage":"record 3: not valid base64"}`},
		{"empty error", errors.New(""), `{"requestId":"r1","timestamp":1700000001999,"errorMessage":"failed"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(ingest.NewFirehoseResponse("r1", now, tc.err))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}

	t.Run("long error", func(t *testing.T) {
		r := ingest.NewFirehoseResponse("r1", now, errors.New(strings.Repeat("é", 2000)))
		if len(r.ErrorMessage) > 1100 || !strings.HasSuffix(r.ErrorMessage, "é...") {
			t.Errorf("%d bytes: ...%q", len(r.ErrorMessage), r.ErrorMessage[len(r.ErrorMessage)-10:])
		}
	})
}

// ReadFirehose measures what the records decode to, which is what Decode
// then gives, the same as DecodeFirehose.
func TestReadFirehoseMeasures(t *testing.T) {
	one := dataMessage(t, "g", "s", cwEvent{ID: "1", Timestamp: 1700000000000, Message: "hello"})
	two := dataMessage(t, "g", "t", cwEvent{ID: "2", Timestamp: 1700000000001, Message: strings.Repeat("x", 3000)})
	recs := []string{record(t, one), record(t, controlMessage), record(t, two)}
	body := firehoseBody(t, recs...)
	d, err := ingest.ReadFirehose(bytes.NewReader(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := decodedSize(t, recs[0], one) + decodedSize(t, recs[1], controlMessage) + decodedSize(t, recs[2], two)
	if d.RequestID != requestID || d.DecodedBytes() != want {
		t.Errorf("read %q, %d bytes decoded; want %q, %d", d.RequestID, d.DecodedBytes(), requestID, want)
	}
	got, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	all, err := ingest.DecodeFirehose(bytes.NewReader(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != all.RequestID || !got.Timestamp.Equal(all.Timestamp) || got.Records != 3 || got.ControlMessages != 1 {
		t.Errorf("Decode gave %+v, DecodeFirehose %+v", got, all)
	}
	checkEvents(t, got.Events, all.Events)
	checkEvents(t, got.Events, []ingest.Event{
		{Source: "g:s", ID: "1", Timestamp: t0, Message: "hello"},
		{Source: "g:t", ID: "2", Timestamp: t0.Add(time.Millisecond), Message: strings.Repeat("x", 3000)},
	})
}
