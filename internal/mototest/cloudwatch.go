package mototest

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/spool-run/spool/internal/cwlogs"
	"github.com/spool-run/spool/internal/ingest/ingesttest"
)

// CloudWatch is a CloudWatch Logs client of a server of t's own (For),
// with this process's AWS settings pointed at it (SetEnv): code under test
// finds it as it would find AWS, through the SDK's usual sources, given
// the endpoint URL also returned.
func CloudWatch(t *testing.T) (*cloudwatchlogs.Client, string) {
	t.Helper()
	endpoint := For(t).URL
	SetEnv(t)
	cw, err := cwlogs.NewClient(t.Context(), cwlogs.Config{Endpoint: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	return cw, endpoint
}

// PutLogEvents writes messages to a new stream of group, one millisecond
// apart from at, and returns them as CloudWatch gives them back, with
// their ids.
func PutLogEvents(t *testing.T, cw *cloudwatchlogs.Client, group, stream string, at time.Time, messages ...string) []ingesttest.Event {
	t.Helper()
	ctx := t.Context()
	if _, err := cw.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	var in []types.InputLogEvent
	for i, m := range messages {
		in = append(in, types.InputLogEvent{Timestamp: aws.Int64(at.UnixMilli() + int64(i)), Message: aws.String(m)})
	}
	if _, err := cw.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: in}); err != nil {
		t.Fatal(err)
	}
	out, err := cw.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(group), LogStreamNames: []string{stream}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []ingesttest.Event
	for _, e := range out.Events {
		evs = append(evs, ingesttest.Event{ID: aws.ToString(e.EventId), Timestamp: aws.ToInt64(e.Timestamp), Message: aws.ToString(e.Message)})
	}
	if len(evs) != len(messages) {
		t.Fatalf("CloudWatch gave back %d events of %s, want %d", len(evs), stream, len(messages))
	}
	return evs
}
