// Package config is the server's configuration: defaults, a YAML file,
// SPOOL_* environment overrides, and validation that names the bad field.
//
// Precedence, lowest first: defaults, the file, the environment, then the
// command line flags the caller applies.
package config

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/blob/s3blob"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/setting"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
)

// Config is everything `spool server` can be told.
type Config struct {
	Server    Server    `yaml:"server"`
	Store     Store     `yaml:"store"`
	Jobs      Jobs      `yaml:"jobs"`
	Execution Execution `yaml:"execution"`
	Auth      Auth      `yaml:"auth"`
	Ingest    Ingest    `yaml:"ingest"`
	Log       Log       `yaml:"log"`
	// Queues configure single queues, by name.
	Queues map[string]Queue `yaml:"queues"`
	// Notify is how the server tells webhooks of jobs' ends.
	Notify Notify `yaml:"notify"`
	// Schedules are the defaults of periodic jobs.
	Schedules Schedules `yaml:"schedules"`
	// Blobs is where files kept beside jobs are stored.
	Blobs Blobs `yaml:"blobs"`
	// Scatter is how the server reads scatters' items from users' S3
	// buckets.
	Scatter Scatter `yaml:"scatter"`
	// Artifacts bounds the files jobs keep.
	Artifacts Artifacts `yaml:"artifacts"`

	// Warnings are what reading the configuration found to be said at
	// start (an old name of a setting); they are not settings.
	Warnings []string `yaml:"-"`
}

// Server is how the server listens and where it keeps its files.
type Server struct {
	// Addr is host:port to listen on; loopback unless you mean otherwise.
	Addr string `yaml:"addr"`
	// DataDir holds the SQLite database and the generated token key.
	DataDir string `yaml:"data_dir"`
	// TokenKey signs task tokens: base64 of at least 32 bytes. Empty: a key
	// is generated into the data directory. Replicas sharing a store must
	// share the key.
	TokenKey string `yaml:"token_key"`
	// ShutdownGraceSeconds is how long SIGTERM waits for requests (streams
	// included) to finish before closing them.
	ShutdownGraceSeconds int `yaml:"shutdown_grace_seconds"`
	// PublicHosts are the names clients use to reach the server (behind a
	// proxy, say spool.example.com). A request whose Host is not one of
	// them, localhost or an IP address is refused: that is what stops a
	// web page from re-pointing its own name at the server (DNS rebinding).
	PublicHosts []string `yaml:"public_hosts"`
	// CORSOrigins are web origins (https://ci.example.com) whose pages may
	// call the API from a browser. None by default: only the server's own
	// pages may.
	CORSOrigins []string `yaml:"cors_origins"`
	// TLS, when set, serves HTTPS (and gRPC over TLS) instead of plain HTTP.
	TLS TLS `yaml:"tls"`
}

// TLS is the server's certificate.
type TLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether TLS is configured.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// Auth says who may call the server: every call needs an API key (spool
// keys create), unless auth is disabled.
type Auth struct {
	// Disabled lets anyone who can reach the server do anything. The server
	// refuses it unless it listens on loopback, and warns at every start.
	Disabled bool `yaml:"disabled"`
	// AdminKey, when set, is the secret of an admin key named "admin"
	// created at start; otherwise, on first start with no keys, one is
	// generated into data_dir/admin.key.
	AdminKey string `yaml:"admin_key"`
	// SessionHours is how long a web UI login lasts.
	SessionHours int `yaml:"session_hours"`
}

// Store selects and configures the backend.
type Store struct {
	// Type is sqlite (the default), memory (nothing survives a restart),
	// postgres (several servers on one database; see docs/scaling.md), or
	// aws (SQS carries jobs, DynamoDB holds the truth; see docs/aws.md).
	Type     string          `yaml:"type"`
	SQLite   SQLite          `yaml:"sqlite"`
	Postgres pgstore.Config  `yaml:"postgres"`
	AWS      awsstore.Config `yaml:"aws"`
}

// Blobs chooses and configures the store of files kept beside jobs.
type Blobs struct {
	// Type is dir (files under a directory), postgres (the database of
	// store.postgres) or s3 (a bucket). Empty follows store.type: dir for
	// sqlite and memory (for memory a temporary directory, gone at stop),
	// postgres for postgres, and s3 for aws once blobs.s3.bucket is set
	// (without it, a server on AWS keeps no blobs).
	Type string `yaml:"type"`
	// Dir is the directory of the dir type; empty means <data_dir>/blobs.
	Dir string `yaml:"dir"`
	// S3 configures the s3 type. Its region and endpoint, when empty, are
	// store.aws's.
	S3 s3blob.Config `yaml:"s3"`
}

// Scatter configures what the server does for scatters.
type Scatter struct {
	// S3 reaches the buckets of scatters whose items are in S3 (spool
	// scatter --items s3://...). Its region and endpoint, when empty, are
	// store.aws's; credentials are the AWS SDK's default chain.
	S3 s3items.Config `yaml:"s3"`
}

// Artifacts bounds the files a job keeps (spool submit --artifacts,
// spool artifact upload). An upload past a bound is refused, naming it,
// and leaves nothing behind.
type Artifacts struct {
	// MaxFileBytes bounds one artifact.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxJobBytes bounds a job's artifacts together.
	MaxJobBytes int64 `yaml:"max_job_bytes"`
	// MaxFiles bounds how many artifacts a job keeps.
	MaxFiles int `yaml:"max_files"`
}

// MaxArtifactBytes is the largest artifacts.max_file_bytes and
// artifacts.max_job_bytes: 5 TiB, S3's largest object.
const MaxArtifactBytes = 5 << 40

// Blob store types.
const (
	BlobsDir      = "dir"
	BlobsPostgres = "postgres"
	BlobsS3       = "s3"
)

// BlobsType is the blob store the configuration chooses: Blobs.Type, or
// the one that goes with store.type; "" when there is none (a server on
// AWS without a bucket).
func (c *Config) BlobsType() string {
	if c.Blobs.Type != "" {
		return c.Blobs.Type
	}
	switch c.Store.Type {
	case "postgres":
		return BlobsPostgres
	case "aws":
		if c.Blobs.S3.Bucket == "" {
			return ""
		}
		return BlobsS3
	}
	return BlobsDir
}

// SQLite configures the embedded store.
type SQLite struct {
	// Path of the database file; empty means DataDir/spool.db.
	Path string `yaml:"path"`
	// Synchronous is full (the default: acknowledged writes are on disk)
	// or normal (faster; the last writes may be lost on power failure).
	Synchronous string `yaml:"synchronous"`
}

// Jobs holds the defaults applied to jobs.
type Jobs struct {
	// MaxAttempts is how many leases a job may be given before it is failed.
	MaxAttempts int `yaml:"max_attempts"`
	// LeaseSeconds is the default lease length; workers extend it with
	// heartbeats.
	LeaseSeconds int `yaml:"lease_seconds"`
	// OldLeaseSeconds is lease_seconds under its old name (SQS's), still
	// read and moved to LeaseSeconds with a warning (renamed.go).
	OldLeaseSeconds *int `yaml:"visibility_timeout_seconds,omitempty"`
	// RetentionDays is how long finished jobs and their logs are kept
	// after they end; 0 keeps everything.
	RetentionDays int `yaml:"retention_days"`
	// MaxStdinBytes bounds a job's stdin uploaded to the blob store (a
	// stdin too large for the job record): an upload past it is refused
	// and nothing of it kept.
	MaxStdinBytes int64 `yaml:"max_stdin_bytes"`
}

// Bounds of jobs.max_stdin_bytes: at least what a job record holds
// inline, at most what no job's input sensibly is.
const (
	MinStdinBytesLimit = 1 << 20
	MaxStdinBytesLimit = 1 << 40
)

// Execution is sent to workers with each job and stored with it.
type Execution struct {
	Batching                 Batching `yaml:"batching"`
	HeartbeatIntervalSeconds int      `yaml:"heartbeat_interval_seconds"`
}

// Batching is how workers batch output: it becomes the BatchingConfig
// stored with each job.
type Batching struct {
	FlushIntervalSeconds   int   `yaml:"flush_interval_seconds"`
	MaxBatchSize           int   `yaml:"max_batch_size"`
	MaxBatchBytes          int64 `yaml:"max_batch_bytes"`
	PlaybackIntervalMillis int   `yaml:"playback_interval_millis"`
	// The bounds of what a job may ask for itself (its params' batching):
	// a flush interval from JobMinFlushIntervalMillis to
	// JobMaxFlushIntervalSeconds, at most JobMaxBatchSize lines a batch.
	// A short interval costs a store write per flush, so the floor is the
	// operator's to set; a request beyond them is refused, not clamped.
	JobMinFlushIntervalMillis  int `yaml:"job_min_flush_interval_millis"`
	JobMaxFlushIntervalSeconds int `yaml:"job_max_flush_interval_seconds"`
	JobMaxBatchSize            int `yaml:"job_max_batch_size"`
}

// JobMinFlushInterval is execution.batching.job_min_flush_interval_millis.
func (b Batching) JobMinFlushInterval() time.Duration {
	return time.Duration(b.JobMinFlushIntervalMillis) * time.Millisecond
}

// JobMaxFlushInterval is execution.batching.job_max_flush_interval_seconds.
func (b Batching) JobMaxFlushInterval() time.Duration { return seconds(b.JobMaxFlushIntervalSeconds) }

// MaxBatchBytesLimit is the largest max_batch_bytes a configuration may
// set. A worker puts at most 8 MiB of events in one publish, or a single
// batch when it is larger, and the server accepts publishes of up to twice
// that (service.MaxPublishRequestBytes): a full batch, with its lines'
// numbers and times, always fits.
const MaxBatchBytesLimit = 8 << 20

// MaxIngestBodyBytes is the largest ingest.max_body_bytes: Firehose sends
// at most 64 MiB in one request (as configured on its side, usually far
// less), and a body is held in memory whole while it is checked.
const MaxIngestBodyBytes = 64 << 20

// MaxIngestDecodedBytes is the largest ingest.max_decoded_bytes, and
// MaxIngestDecodingBytes the largest ingest.max_decoding_bytes: a request's
// events are held in memory until they are stored.
const (
	MaxIngestDecodedBytes  = 1 << 30
	MaxIngestDecodingBytes = 64 << 30
)

// Ingest is how the server takes the logs of programs it did not start
// (POST /api/v1/ingest/firehose and /api/v1/ingest/lines): each source
// becomes an external job.
type Ingest struct {
	// Queue is the queue external jobs are listed under. No worker runs
	// them.
	Queue string `yaml:"queue"`
	// IdleTimeoutSeconds ends a source's job once no new event has come
	// for this long (0: only an explicit complete ends it). Later events
	// of the source start a new job.
	IdleTimeoutSeconds int `yaml:"idle_timeout_seconds"`
	// MaxBodyBytes bounds one request's body, as sent and, when the
	// sender compressed it, decompressed.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxDecodedBytes bounds what one Firehose request's records decode
	// to, all records together: their data with its base64 undone, and
	// that gzip data decompressed. A gzip bomb is refused by it.
	MaxDecodedBytes int64 `yaml:"max_decoded_bytes"`
	// MaxDecodingBytes bounds what the requests being decoded at once
	// decode to, all together, server-wide: a request that does not fit
	// waits for others to be stored.
	MaxDecodingBytes int64 `yaml:"max_decoding_bytes"`
	// Backfill reads CloudWatch Logs log groups on a schedule, by name,
	// and adds the events spool lacks, as `spool ingest backfill` does
	// by hand: a subscription's delivery that was lost leaves a hole only
	// until the next round.
	Backfill map[string]Backfill `yaml:"backfill"`
}

// Backfill is one log group (or stream) read again on a schedule.
type Backfill struct {
	// LogGroup is the CloudWatch Logs log group to read.
	LogGroup string `yaml:"log_group"`
	// LogStream reads only this stream of the group ("": all).
	LogStream string `yaml:"log_stream"`
	// EverySeconds is how often the group is read (0: every 15 minutes).
	// Each round is run by one of the servers sharing the store.
	EverySeconds int `yaml:"every_seconds"`
	// LookbackSeconds is how far back each round reads (0: an hour, or
	// twice EverySeconds if that is longer). Longer than EverySeconds, so
	// a round that failed or events that reached CloudWatch late are
	// read again by the next.
	LookbackSeconds int `yaml:"lookback_seconds"`
	// Region is the log group's ("": store.aws.region, then the AWS SDK's
	// usual sources).
	Region string `yaml:"region"`
	// Endpoint is a CloudWatch Logs endpoint URL to call instead of
	// AWS's (a compatible server such as moto).
	Endpoint string `yaml:"endpoint"`
}

// Default round and span of a scheduled backfill.
const (
	DefaultBackfillEvery    = 15 * time.Minute
	DefaultBackfillLookback = time.Hour
)

// Every is how often b runs.
func (b Backfill) Every() time.Duration {
	if b.EverySeconds <= 0 {
		return DefaultBackfillEvery
	}
	return time.Duration(b.EverySeconds) * time.Second
}

// Lookback is how far back each round of b reads.
func (b Backfill) Lookback() time.Duration {
	if b.LookbackSeconds > 0 {
		return time.Duration(b.LookbackSeconds) * time.Second
	}
	return max(DefaultBackfillLookback, 2*b.Every())
}

// IdleTimeout is ingest.idle_timeout_seconds (0: none).
func (i Ingest) IdleTimeout() time.Duration { return seconds(i.IdleTimeoutSeconds) }

// Queue is what one queue is configured with.
type Queue struct {
	// Notify are URLs told of the end of every job of the queue, besides
	// the job's own (at most store.MaxNotify together).
	Notify []string `yaml:"notify"`
	// NotifySecret signs the queue's webhooks instead of notify.secret.
	NotifySecret string `yaml:"notify_secret"`
}

// Notify is how webhooks are sent.
type Notify struct {
	// Secret signs every webhook (the Spool-Signature header) whose queue
	// has no notify_secret. Empty: such webhooks are sent unsigned, and
	// the log says so at the first.
	Secret string `yaml:"secret"`
	// BaseURL is where people reach the server (https://spool.example.com),
	// for the links in webhooks. Empty: http(s)://server.addr.
	BaseURL string `yaml:"base_url"`
	// AllowPrivateAddresses lets webhooks go to loopback, private and
	// link-local addresses. Off by default: whoever may submit a job
	// names the URL, and the server is often placed where it can reach
	// what the submitter cannot (a cloud's metadata service, an admin
	// port on localhost).
	AllowPrivateAddresses bool `yaml:"allow_private_addresses"`
	// TimeoutSeconds is how long one POST may take (0: 10).
	TimeoutSeconds int `yaml:"timeout_seconds"`
}

// NotifySecret is the key that signs the webhooks of queue's jobs (nil: none).
func (c *Config) NotifySecret(queue string) []byte {
	if s := c.Queues[queue].NotifySecret; s != "" {
		return []byte(s)
	}
	if c.Notify.Secret != "" {
		return []byte(c.Notify.Secret)
	}
	return nil
}

// NotifyBaseURL is notify.base_url, or the server's own address.
func (c *Config) NotifyBaseURL() string {
	if c.Notify.BaseURL != "" {
		return c.Notify.BaseURL
	}
	scheme := "http://"
	if c.Server.TLS.Enabled() {
		scheme = "https://"
	}
	return scheme + c.Server.Addr
}

// Timeout is notify.timeout_seconds.
func (n Notify) Timeout() time.Duration { return seconds(cmp.Or(n.TimeoutSeconds, 10)) }

// Schedules are the defaults of periodic jobs.
type Schedules struct {
	// Missed is what a schedule that does not say does with the ticks
	// that passed while no server ran: run_once (the latest of them; also
	// when empty) or skip.
	Missed string `yaml:"missed"`
}

// Default returns the configuration used when nothing is set.
func Default() *Config {
	return &Config{
		Server: Server{Addr: "127.0.0.1:7070", DataDir: datadir.Default, ShutdownGraceSeconds: 30},
		Store:  Store{Type: "sqlite", SQLite: SQLite{Synchronous: "full"}},
		Jobs:   Jobs{MaxAttempts: 3, LeaseSeconds: 120, RetentionDays: 30, MaxStdinBytes: 1 << 30},
		Execution: Execution{
			Batching: Batching{
				FlushIntervalSeconds:   2,
				MaxBatchSize:           50,
				MaxBatchBytes:          256 << 10,
				PlaybackIntervalMillis: 50,

				JobMinFlushIntervalMillis:  100,
				JobMaxFlushIntervalSeconds: 60,
				JobMaxBatchSize:            1000,
			},
			HeartbeatIntervalSeconds: 30,
		},
		Auth:   Auth{SessionHours: 12},
		Ingest: Ingest{Queue: "external", IdleTimeoutSeconds: 600, MaxBodyBytes: 16 << 20, MaxDecodedBytes: 64 << 20, MaxDecodingBytes: 128 << 20},
		// Notify and Schedules are left zero: their zero values are their
		// defaults (a 10 s timeout, run_once).
		Log:       Log{Level: "info", Format: "text"},
		Artifacts: Artifacts{MaxFileBytes: 5 << 30, MaxJobBytes: 20 << 30, MaxFiles: 10000},
	}
}

// Load reads the file at path (none when empty) over the defaults, applies
// the environment (lookup is os.LookupEnv in production) and validates.
func Load(path string, lookup func(string) (string, bool)) (*Config, error) {
	cfg, err := Read(path, lookup)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, inFile(path, err)
	}
	return cfg, nil
}

// Read is Load without the final validation, for commands that use one
// section of the server's configuration (spool aws init) and check it
// themselves. A file that cannot be read is a *setting.Error for the
// setting "config".
func Read(path string, lookup func(string) (string, bool)) (*Config, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, setting.File("config", path, err)
		}
	}
	cfg, err := parse(data, lookup)
	if err != nil {
		return nil, inFile(path, err)
	}
	return cfg, nil
}

// inFile says which configuration file a problem was found with: once,
// by the function that read the file.
func inFile(path string, err error) error {
	if path == "" {
		return err
	}
	return fmt.Errorf("config %s: %w", path, err)
}

// Parse is Load for a file's contents.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	cfg, err := parse(data, lookup)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parse applies the file and the environment over the defaults.
func parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	cfg := Default()
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil {
			return nil, yamlError(data, err)
		}
		if err := renamedInFile(cfg, data); err != nil {
			return nil, err
		}
	}
	if lookup != nil {
		if err := applyEnv(cfg, lookup); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// Durations are whole seconds in the file (and on the wire); inside Go they
// are time.Duration, through these.

// ShutdownGrace is server.shutdown_grace_seconds.
func (s Server) ShutdownGrace() time.Duration { return seconds(s.ShutdownGraceSeconds) }

// Lease is jobs.lease_seconds: how long a lease lasts unless a heartbeat
// extends it.
func (j Jobs) Lease() time.Duration { return seconds(j.LeaseSeconds) }

// Retention is how long finished jobs are kept (0: for ever).
func (j Jobs) Retention() time.Duration { return time.Duration(j.RetentionDays) * 24 * time.Hour }

// HeartbeatInterval is execution.heartbeat_interval_seconds.
func (e Execution) HeartbeatInterval() time.Duration { return seconds(e.HeartbeatIntervalSeconds) }

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// ExecutionConfig is the ExecutionConfig stored with new jobs.
func (c *Config) ExecutionConfig() *spoolv1.ExecutionConfig {
	b := c.Execution.Batching
	return &spoolv1.ExecutionConfig{
		Batching: &spoolv1.BatchingConfig{
			FlushIntervalSeconds:   int32(b.FlushIntervalSeconds),
			MaxBatchSize:           int32(b.MaxBatchSize),
			MaxBatchBytes:          b.MaxBatchBytes,
			PlaybackIntervalMillis: int32(b.PlaybackIntervalMillis),
		},
		HeartbeatIntervalSeconds: int32(c.Execution.HeartbeatIntervalSeconds),
	}
}
