// Package cwlogs reads CloudWatch Logs events back for spool: the events a
// log group (or one of its streams) holds over a span of time, with the
// ids CloudWatch gives them, as ingest.Events of the source
// "<logGroup>:<logStream>", which is what a CloudWatch Logs subscription
// delivers through Firehose. Backfill sends what it reads to spool, whose
// store keeps each id of a source once, so what a subscription delivered
// already is not added again.
package cwlogs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/spool-run/spool/internal/ingest"
)

// API is the call of the CloudWatch Logs client that reading needs.
type API interface {
	FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// Config says where CloudWatch Logs is.
type Config struct {
	// Region is the log group's ("": the AWS SDK's usual sources,
	// AWS_REGION and the shared configuration).
	Region string
	// Endpoint is a URL to call instead of AWS's (a compatible server such
	// as moto); "": AWS's, or AWS_ENDPOINT_URL_CLOUDWATCH_LOGS /
	// AWS_ENDPOINT_URL when set.
	Endpoint string
}

// NewClient is a CloudWatch Logs client with credentials from the AWS
// SDK's usual sources (environment, shared configuration, instance role).
func NewClient(ctx context.Context, cfg Config) (*cloudwatchlogs.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading the AWS configuration: %w", err)
	}
	if ac.Region == "" {
		return nil, errors.New("no AWS region: give the log group's (--region, or AWS_REGION)")
	}
	return cloudwatchlogs.NewFromConfig(ac, func(o *cloudwatchlogs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// Query is what to read: the events of LogGroup (or of its stream
// LogStream) stamped from Since to Until, both included.
type Query struct {
	LogGroup  string
	LogStream string // "": every stream of the group
	Since     time.Time
	Until     time.Time
}

// Check says what is wrong with q, in the words of the command line.
func (q Query) Check() error {
	switch {
	case q.LogGroup == "":
		return errors.New("name the log group to read (--log-group)")
	case strings.Contains(q.LogGroup, ":"):
		// CloudWatch allows no ":" in a group's name; one here is most
		// likely a source ("group:stream") given as the group.
		return fmt.Errorf("a log group's name has no \":\" (%q looks like a source, group:stream: give --log-group and --log-stream)", q.LogGroup)
	case q.Since.IsZero():
		return errors.New("say from when to read (--since)")
	case !q.Until.IsZero() && q.Until.Before(q.Since):
		return fmt.Errorf("--until (%s) is before --since (%s)", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	return nil
}

// PageEvents is the most events asked for in one FilterLogEvents call.
// CloudWatch also stops a page at 1 MB, so a page is bounded both ways and
// is what reading holds at once.
const PageEvents = 1000

// Read calls page with the events of q, one page of FilterLogEvents at a
// time, in CloudWatch's order: by timestamp, then by when CloudWatch took
// them in, which keeps each stream's events in the order it was given
// them. An event CloudWatch gives without an id, a stream or a time, or
// whose message is over limits.MaxMessageBytes, stops the reading with an
// error naming it: spool would refuse it too, and skipping it would leave
// a gap no one hears of.
func Read(ctx context.Context, api API, q Query, limits ingest.Limits, page func([]ingest.Event) error) error {
	if err := q.Check(); err != nil {
		return err
	}
	maxMessage := limits.MaxMessageBytes
	if maxMessage <= 0 {
		maxMessage = ingest.DefaultMaxMessageBytes
	}
	// FilterLogEvents, not GetLogEvents: only it gives each event's id,
	// which is what lets spool tell an event it has from one it lacks.
	in := &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName:  aws.String(q.LogGroup),
		StartTime:     aws.Int64(q.Since.UnixMilli()),
		StartFromHead: aws.Bool(true),
		Limit:         aws.Int32(PageEvents),
	}
	if !q.Until.IsZero() {
		in.EndTime = aws.Int64(q.Until.UnixMilli())
	}
	if q.LogStream != "" {
		in.LogStreamNames = []string{q.LogStream}
	}
	for {
		out, err := api.FilterLogEvents(ctx, in)
		if err != nil {
			return fmt.Errorf("reading log group %s from CloudWatch Logs: %w", q.LogGroup, err)
		}
		if len(out.Events) > PageEvents {
			return fmt.Errorf("CloudWatch Logs gave %d events in one page of log group %s, over the %d asked for", len(out.Events), q.LogGroup, PageEvents)
		}
		evs := make([]ingest.Event, 0, len(out.Events))
		for _, ce := range out.Events {
			e, err := event(q.LogGroup, ce.LogStreamName, ce.EventId, ce.Timestamp, ce.Message, maxMessage)
			if err != nil {
				return err
			}
			evs = append(evs, e)
		}
		if len(evs) > 0 {
			if err := page(evs); err != nil {
				return err
			}
		}
		next := aws.ToString(out.NextToken)
		if next == "" {
			return nil
		}
		// The token just used, given again, would read the same page for
		// ever.
		if next == aws.ToString(in.NextToken) {
			return fmt.Errorf("CloudWatch Logs gave the same page token twice while reading log group %s", q.LogGroup)
		}
		in.NextToken = aws.String(next)
	}
}

// event is a CloudWatch event as spool takes it from a subscription.
func event(group string, stream, id *string, ms *int64, msg *string, maxMessage int) (ingest.Event, error) {
	source := group + ":" + aws.ToString(stream)
	switch {
	case aws.ToString(stream) == "":
		return ingest.Event{}, fmt.Errorf("CloudWatch Logs gave an event of log group %s without its stream", group)
	case aws.ToString(id) == "":
		return ingest.Event{}, fmt.Errorf("CloudWatch Logs gave an event of %s without an id", source)
	case ms == nil:
		return ingest.Event{}, fmt.Errorf("CloudWatch Logs gave event %s of %s without a time", *id, source)
	case len(aws.ToString(msg)) > maxMessage+len("\r\n"):
		return ingest.Event{}, fmt.Errorf("event %s of %s is over %d bytes, more than spool keeps of one event", *id, source, maxMessage)
	}
	return ingest.Event{Source: source, ID: *id, Timestamp: time.UnixMilli(*ms).UTC(), Message: aws.ToString(msg)}, nil
}
