package awsstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (awsstore.Config{}).Validate(); err != nil {
		t.Fatalf("the empty config (all defaults) is refused: %v", err)
	}
	good := awsstore.Config{
		Region:   "eu-west-1",
		Endpoint: "http://localhost:4566",
		Queues:   map[string]string{"default": "https://sqs.eu-west-1.amazonaws.com/123456789012/spool-default"},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good config is refused: %v", err)
	}
	bad := map[string]func(c *awsstore.Config){
		"store.aws.endpoint":          func(c *awsstore.Config) { c.Endpoint = "localhost:4566" },
		"store.aws.sqs_endpoint":      func(c *awsstore.Config) { c.SQSEndpoint = "ftp://x" },
		"store.aws.queues.gpu":        func(c *awsstore.Config) { c.Queues = map[string]string{"gpu": "not a url"} },
		"store.aws.queue_prefix":      func(c *awsstore.Config) { c.QueuePrefix = "spool." },
		"store.aws.queue_names":       func(c *awsstore.Config) { c.QueueNames = []string{"has space"} },
		"store.aws.max_receive_count": func(c *awsstore.Config) { c.MaxReceiveCount = 1001 },
		"store.aws.jobs_table":        func(c *awsstore.Config) { c.JobsTable = "x" },
		"store.aws.events_table":      func(c *awsstore.Config) { c.EventsTable = c.JobsTable },
		"store.aws.events_ttl_days":   func(c *awsstore.Config) { c.EventsTTLDays = -1 },
		"store.aws.watch_poll_interval": func(c *awsstore.Config) {
			c.WatchPollInterval = time.Millisecond
		},
		"store.aws.max_retries": func(c *awsstore.Config) { c.MaxRetries = -2 },
		"store.aws.compression": func(c *awsstore.Config) { c.Compression = "gzip" },
	}
	for field, breakIt := range bad {
		c := good
		c.JobsTable = "spool_jobs"
		breakIt(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("breaking %s: got %v, want an error naming it", field, err)
		}
	}
	long := good
	long.QueueNames = []string{strings.Repeat("q", 80)}
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "longer than SQS allows") {
		t.Errorf("a queue name too long for SQS: %v", err)
	}
}

func TestOpenWithoutTables(t *testing.T) {
	t.Parallel()
	srv := awstest.Shared(t)
	_, err := awsstore.Open(context.Background(), awsstore.Config{DynamoDBEndpoint: srv.DynamoDB, SQSEndpoint: srv.SQS, JobsTable: "never-made"})
	if err == nil || !strings.Contains(err.Error(), "never-made") || !strings.Contains(err.Error(), "spool aws init") {
		t.Fatalf("Open on missing tables: %v; want an error naming the table and how to create it", err)
	}
}

func TestUnconfiguredQueue(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	cfg.AutoCreateQueues = false
	s := openStore(t, cfg)
	_, _, err := s.Enqueue(context.Background(), newJob("nowhere"))
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), `queue "nowhere" is not configured`) ||
		!strings.Contains(err.Error(), "store.aws.queues") {
		t.Fatalf("enqueue on an unknown queue: %v", err)
	}
	// Provision made the default queue: that one works.
	if _, _, err := s.Enqueue(context.Background(), newJob("default")); err != nil {
		t.Fatalf("enqueue on the provisioned queue: %v", err)
	}
}

func TestThrottlingBecomesErrThrottled(t *testing.T) {
	t.Parallel()
	for code, throttled := range map[string]bool{
		"ProvisionedThroughputExceededException": true,
		"ThrottlingException":                    true,
		"RequestLimitExceeded":                   true,
		"ValidationException":                    false,
		"InternalServerError":                    false,
	} {
		err := awsstore.AWSErr(&smithy.GenericAPIError{Code: code, Message: "m"}, "write job %s", "j1")
		if errors.Is(err, spool.ErrThrottled) != throttled {
			t.Errorf("%s: throttled=%v, want %v (%v)", code, !throttled, throttled, err)
		}
		if !strings.HasPrefix(err.Error(), "write job j1: ") {
			t.Errorf("%s: message %q does not say what failed", code, err)
		}
	}
	if err := awsstore.AWSErr(context.Canceled, "read job %s", "j1"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v", err)
	}
}
