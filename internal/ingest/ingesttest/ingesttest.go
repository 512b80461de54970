// Package ingesttest builds what the senders of logs from elsewhere send:
// Amazon Data Firehose deliveries of CloudWatch Logs subscription data,
// and shippers' JSON lines, for tests and benchmarks of spool's ingestion.
package ingesttest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
)

// Event is a CloudWatch Logs log event as a subscription message holds it.
type Event struct {
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"` // Unix milliseconds
	Message   string `json:"message"`
}

// DataMessage is a CloudWatch Logs DATA_MESSAGE as CloudWatch writes it.
func DataMessage(group, stream string, events ...Event) []byte {
	if events == nil {
		events = []Event{}
	}
	return mustJSON(map[string]any{
		"messageType":         "DATA_MESSAGE",
		"owner":               "123456789012",
		"logGroup":            group,
		"logStream":           stream,
		"subscriptionFilters": []string{"to-spool"},
		"logEvents":           events,
	})
}

// ControlMessage is the message CloudWatch sends when a subscription is
// set up, to check that its destination answers.
const ControlMessage = `{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logGroup":"","logStream":"",` +
	`"subscriptionFilters":[],"logEvents":[{"id":"","timestamp":1700000000000,` +
	`"message":"CWL CONTROL MESSAGE: Checking health of destination Firehose."}]}`

// Gzip compresses data as CloudWatch Logs compresses its subscription data.
func Gzip(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data) // a bytes.Buffer takes everything
	_ = zw.Close()
	return buf.Bytes()
}

// Record is the data of a Firehose record holding a CloudWatch Logs
// message: gzip-compressed, then base64-encoded.
func Record(message []byte) string {
	return base64.StdEncoding.EncodeToString(Gzip(message))
}

// FirehoseBody is a Firehose HTTP endpoint delivery of records (each a
// Record), sent at timestampMs.
func FirehoseBody(requestID string, timestampMs int64, records ...string) []byte {
	type rec struct {
		Data string `json:"data"`
	}
	recs := make([]rec, len(records))
	for i, d := range records {
		recs[i].Data = d
	}
	return mustJSON(map[string]any{"requestId": requestID, "timestamp": timestampMs, "records": recs})
}

// Line is one event as a log shipper sends it.
type Line struct {
	Source    string `json:"source"`
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"` // Unix milliseconds
	Message   string `json:"message"`
}

// Lines is newline-delimited JSON of lines, as Vector's and Fluent Bit's
// HTTP outputs send it.
func Lines(lines ...Line) []byte {
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(mustJSON(l))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// mustJSON marshals values that always marshal (maps and structs of
// strings and numbers).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
