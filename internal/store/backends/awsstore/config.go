package awsstore

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool/internal/events"
)

// Config is the AWS backend's configuration, embedded in the server's
// configuration under store.aws. Only the queues need thought; every other
// field has a working default.
type Config struct {
	// Region of the queues and tables. Empty: the SDK's usual sources
	// (AWS_REGION, the shared config file); with an endpoint override and
	// no region anywhere, us-east-1.
	Region string `yaml:"region"`
	// Endpoint overrides both services' endpoints (a local test server, a
	// VPC endpoint). DynamoDBEndpoint and SQSEndpoint override one each.
	Endpoint         string `yaml:"endpoint"`
	DynamoDBEndpoint string `yaml:"dynamodb_endpoint"`
	SQSEndpoint      string `yaml:"sqs_endpoint"`

	// Queues maps spool queue names to SQS queue URLs. A queue not listed
	// here is looked up by name: QueuePrefix + its name.
	Queues map[string]string `yaml:"queues"`
	// QueuePrefix names the SQS queues of spool queues (and, with "-dlq"
	// added, their dead-letter queues). Default "spool-".
	QueuePrefix string `yaml:"queue_prefix"`
	// QueueNames are the spool queues Provision creates (default: the
	// "default" queue).
	QueueNames []string `yaml:"queue_names"`
	// AutoCreateQueues creates the SQS queue (and its dead-letter queue) of
	// a spool queue the first time it is used. Handy in development; in
	// production leave it off and provision queues explicitly, so a typo in
	// a queue name is an error instead of a new queue.
	AutoCreateQueues bool `yaml:"auto_create_queues"`
	// MaxReceiveCount is how often SQS may hand out a message before moving
	// it to the dead-letter queue (default 100). spool counts attempts
	// itself, so this is only a backstop; keep it well above any job's
	// max_attempts.
	MaxReceiveCount int `yaml:"max_receive_count"`

	// JobsTable and EventsTable name the DynamoDB tables (default
	// "spool_jobs" and "spool_job_events").
	JobsTable   string `yaml:"jobs_table"`
	EventsTable string `yaml:"events_table"`
	// EventsTTLDays is how long stored events are kept (default 30).
	// DynamoDB deletes expired items within a few days of expiry.
	EventsTTLDays int `yaml:"events_ttl_days"`
	// Compression is how the events' items are compressed: zstd (the
	// default) or s2. DynamoDB bills writes and reads by the kilobyte and
	// storage by the byte, and zstd makes output that does not repeat
	// itself about half S2's size, for a little more of the server's CPU
	// (workers send S2, which the server recodes). Items written with
	// either are read whatever this says.
	Compression string `yaml:"compression"`
	// JobTTL, when above 0, is how long a final job is kept after its
	// last change: every write that makes a job final gives its item a
	// ttl that far on, so DynamoDB deletes jobs nobody sweeps. 0 keeps
	// them. The server sets it from its jobs retention setting, so it has
	// no key of its own in the configuration file.
	JobTTL time.Duration `yaml:"-"`

	// WatchPollInterval is how often the jobs followed on this server are
	// checked for changes made through other servers (default 50ms): it is
	// most of the wait of a follower on another replica than the worker's.
	// Other watched jobs (a heartbeat waiting for a cancel) are checked
	// five times less often.
	WatchPollInterval time.Duration `yaml:"watch_poll_interval"`
	// DeadLetterCheckInterval is how often ExpireLeases looks into the
	// dead-letter queues (default 1m; 0 keeps the default, a negative value
	// checks on every call).
	DeadLetterCheckInterval time.Duration `yaml:"dead_letter_check_interval"`
	// MaxRetries is how many times a throttled or failed AWS request is
	// retried, with backoff, before giving up (default 8).
	MaxRetries int `yaml:"max_retries"`
}

// Defaults for the fields left empty.
const (
	DefaultQueuePrefix             = "spool-"
	DefaultJobsTable               = "spool_jobs"
	DefaultEventsTable             = "spool_job_events"
	DefaultEventsTTLDays           = 30
	DefaultMaxReceiveCount         = 100
	DefaultWatchPollInterval       = 50 * time.Millisecond
	DefaultDeadLetterCheckInterval = time.Minute
	DefaultMaxRetries              = 8
	DefaultCompression             = "zstd"
	// DeadLetterSuffix is added to a queue's SQS name for its dead-letter
	// queue.
	DeadLetterSuffix = "-dlq"
)

// SQS and DynamoDB naming rules.
var (
	sqsNameRE   = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	tableNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
)

// sqsNameMax is SQS's limit on a queue name.
const sqsNameMax = 80

// withDefaults returns c with empty fields filled in.
func (c Config) withDefaults() Config {
	if c.QueuePrefix == "" {
		c.QueuePrefix = DefaultQueuePrefix
	}
	if len(c.QueueNames) == 0 {
		c.QueueNames = []string{"default"}
	}
	if c.MaxReceiveCount == 0 {
		c.MaxReceiveCount = DefaultMaxReceiveCount
	}
	if c.JobsTable == "" {
		c.JobsTable = DefaultJobsTable
	}
	if c.EventsTable == "" {
		c.EventsTable = DefaultEventsTable
	}
	if c.EventsTTLDays == 0 {
		c.EventsTTLDays = DefaultEventsTTLDays
	}
	if c.WatchPollInterval == 0 {
		c.WatchPollInterval = DefaultWatchPollInterval
	}
	if c.DeadLetterCheckInterval == 0 {
		c.DeadLetterCheckInterval = DefaultDeadLetterCheckInterval
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	return c
}

// Validate reports the first field that cannot work, by its name in the
// server's configuration file. Empty fields are fine: they get defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, e := range []struct{ field, url string }{
		{"endpoint", c.Endpoint}, {"dynamodb_endpoint", c.DynamoDBEndpoint}, {"sqs_endpoint", c.SQSEndpoint},
	} {
		if e.url != "" {
			if err := checkURL(e.url); err != nil {
				return fieldError(e.field, "%v", err)
			}
		}
	}
	if !sqsNameRE.MatchString(c.QueuePrefix) {
		return fieldError("queue_prefix", "%q may only hold letters, digits, '-' and '_' (SQS queue name rules)", c.QueuePrefix)
	}
	for _, name := range sortedKeys(c.Queues) {
		if name == "" {
			return fieldError("queues", "a queue has an empty name")
		}
		if err := checkURL(c.Queues[name]); err != nil {
			return fieldError("queues."+name, "%v", err)
		}
	}
	for _, name := range c.QueueNames {
		if _, ok := c.Queues[name]; ok {
			continue
		}
		if _, err := c.sqsName(name); err != nil {
			return fieldError("queue_names", "%v", err)
		}
	}
	switch {
	case c.MaxReceiveCount < 1 || c.MaxReceiveCount > 1000:
		return fieldError("max_receive_count", "must be between 1 and 1000 (SQS's range), got %d", c.MaxReceiveCount)
	case !tableNameRE.MatchString(c.JobsTable):
		return fieldError("jobs_table", "%q is not a DynamoDB table name (3-255 letters, digits, '_', '-', '.')", c.JobsTable)
	case !tableNameRE.MatchString(c.EventsTable):
		return fieldError("events_table", "%q is not a DynamoDB table name (3-255 letters, digits, '_', '-', '.')", c.EventsTable)
	case c.JobsTable == c.EventsTable:
		return fieldError("events_table", "must differ from jobs_table (%q)", c.JobsTable)
	case c.EventsTTLDays < 1:
		return fieldError("events_ttl_days", "must be at least 1, got %d", c.EventsTTLDays)
	case c.JobTTL < 0:
		return fmt.Errorf("store.aws: the jobs' time to live must not be negative, got %v", c.JobTTL)
	case c.WatchPollInterval < 10*time.Millisecond:
		return fieldError("watch_poll_interval", "must be at least 10ms, got %v", c.WatchPollInterval)
	case c.MaxRetries < 0:
		return fieldError("max_retries", "must not be negative, got %d", c.MaxRetries)
	}
	if _, err := events.ParseCodec(c.Compression); err != nil {
		return fieldError("compression", "%v", err)
	}
	return nil
}

// codec is the codec of Compression (with defaults filled in: Validate
// has accepted it).
func (c Config) codec() events.Codec {
	codec, _ := events.ParseCodec(c.Compression)
	return codec
}

// sqsName is the SQS queue name of a spool queue found by prefix.
func (c Config) sqsName(queue string) (string, error) {
	name := c.QueuePrefix + queue
	switch {
	case queue == "":
		return "", fmt.Errorf("a queue has an empty name")
	case !sqsNameRE.MatchString(queue):
		return "", fmt.Errorf("queue %q cannot be an SQS queue name: use letters, digits, '-' and '_'", queue)
	case len(name)+len(DeadLetterSuffix) > sqsNameMax:
		return "", fmt.Errorf("queue %q makes the SQS name %q, longer than SQS allows with %q added (%d)", queue, name, DeadLetterSuffix, sqsNameMax)
	}
	return name, nil
}

// eventsTTL is how long events are kept.
func (c Config) eventsTTL() time.Duration {
	return time.Duration(c.EventsTTLDays) * 24 * time.Hour
}

// jobExpiry is the ttl of a job that became final (or last changed, once
// final) at t; ok is false when jobs are kept (JobTTL 0). DynamoDB's TTL
// counts in Unix seconds.
func (c Config) jobExpiry(t time.Time) (ttl types.AttributeValue, ok bool) {
	if c.JobTTL <= 0 {
		return nil, false
	}
	return num(t.Add(c.JobTTL).Unix()), true
}

// endpoints returns each service's endpoint override ("" for none).
func (c Config) endpoints() (dynamo, sqs string) {
	dynamo, sqs = c.Endpoint, c.Endpoint
	if c.DynamoDBEndpoint != "" {
		dynamo = c.DynamoDBEndpoint
	}
	if c.SQSEndpoint != "" {
		sqs = c.SQSEndpoint
	}
	return dynamo, sqs
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}

func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("store.aws.%s: %s", field, fmt.Sprintf(format, args...))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
