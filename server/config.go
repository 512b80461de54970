package server

import (
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool/internal/config"
)

// Config is the server's whole configuration. Each field says the setting
// of the YAML file (`spool server --config`) it is, and its default; a
// setting's environment variable is SPOOL_ and its YAML path in capitals
// (jobs.lease_seconds is SPOOL_JOBS_LEASE_SECONDS). Durations are whole
// seconds in the file, whole hours or days where the setting's name says
// so, and must be whole units here too.
//
// Start from DefaultConfig or LoadConfig rather than from zero: a zero
// field is taken as given, and most are refused.
type Config struct {
	// Server is how the server listens, and where it keeps its files and
	// keys. YAML: server.
	Server Serving
	// Store is where jobs and their logs are kept. YAML: store.
	Store Store
	// Jobs holds what applies to every job. YAML: jobs.
	Jobs Jobs
	// Execution is sent to workers with each job and stored with it: a
	// change applies to jobs enqueued after it. YAML: execution.
	Execution Execution
	// Auth says who may call the server. YAML: auth.
	Auth Auth
	// Ingest is how the server takes the logs of programs it did not
	// start (POST /api/v1/ingest/firehose and /api/v1/ingest/lines): each
	// source becomes an external job. YAML: ingest.
	Ingest Ingest
	// Queues configure single queues, by name: the webhooks told of
	// every job of the queue, and the key that signs them. YAML: queues
	// (queues.NAME.notify, queues.NAME.notify_secret).
	Queues map[string]QueueConfig
	// Notify is how webhooks of jobs' ends are sent. YAML: notify.
	Notify Notify
	// Schedules are the defaults of periodic jobs. YAML: schedules.
	Schedules Schedules
	// Blobs is where files kept beside jobs are stored. YAML: blobs.
	Blobs Blobs
	// Scatter is how the server reads scatters' items from users' S3
	// buckets. YAML: scatter.
	Scatter Scatter
	// Artifacts bounds the files jobs keep. YAML: artifacts.
	Artifacts Artifacts

	// Logger receives the server's structured logs (nil: discarded).
	// LoadConfig sets it to a logger writing to standard error at the
	// file's log.level (debug, info, warn or error; default info) in its
	// log.format (text or json; default text), as `spool server` logs.
	Logger *slog.Logger
	// Meters makes the server's metrics (nil: the server keeps its own,
	// with the Go runtime's and the process's, and serves them on
	// /metrics to keys that may read them). When set, /metrics answers
	// 404: the program exports its metrics its own way. docs/metrics.md
	// lists them; the meter is "spool/server".
	Meters metric.MeterProvider

	// warnings are what LoadConfig found to say at start (a setting
	// given under its old name); Start logs them.
	warnings []string
}

// Serving is how the server listens, and where it keeps its files and
// keys.
type Serving struct {
	// Addr is the host:port to listen on; loopback unless you mean
	// otherwise. Port 0 picks a free one (Server.URL says which).
	// YAML: server.addr. Default: 127.0.0.1:7070.
	Addr string
	// DataDir holds the SQLite database, the generated token key and the
	// first admin key. YAML: server.data_dir. Default: ./spool-data.
	DataDir string
	// TokenKey signs task tokens, sessions and tickets, and seals jobs'
	// secrets: base64 of at least 32 bytes. Empty: a key is generated
	// into DataDir. Servers sharing a store must share the key.
	// YAML: server.token_key.
	TokenKey string
	// ShutdownGrace is how long a stop waits for requests (streams
	// included) to finish before closing them. YAML:
	// server.shutdown_grace_seconds (0-3600). Default: 30s.
	ShutdownGrace time.Duration
	// PublicHosts are the names clients use to reach the server (behind
	// a proxy, say spool.example.com). A request whose Host is not one of
	// them, localhost or an IP address is refused: that is what stops a
	// web page from re-pointing its own name at the server (DNS
	// rebinding). YAML: server.public_hosts.
	PublicHosts []string
	// CORSOrigins are web origins (https://ci.example.com) whose pages
	// may call the API from a browser. None by default: only the server's
	// own pages may. YAML: server.cors_origins.
	CORSOrigins []string
	// TLS, when set, serves HTTPS (and gRPC over TLS) instead of plain
	// HTTP. YAML: server.tls.
	TLS TLS
}

// TLS is the server's certificate: set both files, or neither.
type TLS struct {
	// CertFile is the certificate (PEM), with its chain.
	// YAML: server.tls.cert_file.
	CertFile string
	// KeyFile is the certificate's private key (PEM).
	// YAML: server.tls.key_file.
	KeyFile string
}

// Auth says who may call the server: every call needs an API key (spool
// keys create), unless auth is disabled.
type Auth struct {
	// Disabled lets anyone who can reach the server do anything. The
	// server refuses it unless it listens on loopback, and warns at every
	// start. YAML: auth.disabled.
	Disabled bool
	// AdminKey, when set (at least 32 characters), is the secret of an
	// admin key named "admin" created at start; otherwise, on the first
	// start with no keys, one is generated into DataDir/admin.key.
	// YAML: auth.admin_key.
	AdminKey string
	// SessionLength is how long a web UI sign-in lasts. YAML:
	// auth.session_hours (whole hours, 1-2160). Default: 12h.
	SessionLength time.Duration
}

// Store selects and configures where jobs and their logs are kept.
type Store struct {
	// Type is sqlite (embedded, in DataDir), memory (nothing survives a
	// restart), postgres (several servers on one database; see
	// docs/scaling.md) or aws (SQS carries jobs, DynamoDB holds the
	// truth; see docs/aws.md). YAML: store.type. Default: sqlite.
	Type string
	// SQLite configures the embedded store. YAML: store.sqlite.
	SQLite SQLite
	// Postgres configures the PostgreSQL store. YAML: store.postgres.
	Postgres Postgres
	// AWS configures the SQS and DynamoDB store. YAML: store.aws.
	AWS AWS
}

// SQLite configures the embedded store.
type SQLite struct {
	// Path is the database file ("": DataDir/spool.db).
	// YAML: store.sqlite.path.
	Path string
	// Synchronous is full (an acknowledged write is on disk) or normal
	// (faster; the last writes may be lost if the machine loses power).
	// YAML: store.sqlite.synchronous. Default: full.
	Synchronous string
}

// Postgres configures the PostgreSQL store. Servers sharing a database must
// share Serving.TokenKey.
type Postgres struct {
	// URL is the database, as a postgres:// URL or a libpq key=value
	// string (postgres://spool:secret@db.internal:5432/spool?sslmode=verify-full).
	// YAML: store.postgres.url.
	URL string
	// MaxConns is the most connections the server opens to the database,
	// besides the one it listens for changes on. Several servers share
	// the database's max_connections. YAML: store.postgres.max_conns.
	// 0: 16.
	MaxConns int
	// MinConns are kept open while idle. YAML: store.postgres.min_conns.
	// 0: 2.
	MinConns int
	// MaxConnLifetime closes a connection this old once it is idle, so
	// the pool moves to a new database address after a failover.
	// YAML: store.postgres.max_conn_lifetime (a duration, like 1h). 0: 1h.
	MaxConnLifetime time.Duration
	// MaxConnIdleTime closes a connection idle this long.
	// YAML: store.postgres.max_conn_idle_time. 0: 10m.
	MaxConnIdleTime time.Duration
	// ConnectTimeout bounds each attempt to connect.
	// YAML: store.postgres.connect_timeout. 0: 10s.
	ConnectTimeout time.Duration
}

// AWS configures the store on SQS (which carries job ids) and DynamoDB
// (which holds the truth). Servers sharing it must share Serving.TokenKey.
type AWS struct {
	// Region of the queues and tables. Empty: the SDK's usual sources
	// (AWS_REGION, the shared config file); with an endpoint override and
	// no region anywhere, us-east-1. YAML: store.aws.region.
	Region string
	// Endpoint overrides both services' endpoints (a local test server,
	// a VPC endpoint). YAML: store.aws.endpoint.
	Endpoint string
	// DynamoDBEndpoint overrides DynamoDB's endpoint alone.
	// YAML: store.aws.dynamodb_endpoint.
	DynamoDBEndpoint string
	// SQSEndpoint overrides SQS's endpoint alone.
	// YAML: store.aws.sqs_endpoint.
	SQSEndpoint string
	// Queues maps spool queue names to SQS queue URLs. A queue not
	// listed is looked up by name: QueuePrefix and its name.
	// YAML: store.aws.queues.
	Queues map[string]string
	// QueuePrefix names the SQS queues of spool queues (and, with "-dlq"
	// added, their dead-letter queues). YAML: store.aws.queue_prefix.
	// "": spool-.
	QueuePrefix string
	// QueueNames are the spool queues `spool aws init` creates.
	// YAML: store.aws.queue_names. None: the "default" queue.
	QueueNames []string
	// AutoCreateQueues creates the SQS queue (and its dead-letter queue)
	// of a spool queue the first time it is used: handy in development;
	// in production provision queues, so that a misspelt queue name is an
	// error rather than a new queue. YAML: store.aws.auto_create_queues.
	AutoCreateQueues bool
	// MaxReceiveCount is how often SQS may hand out a message before it
	// moves it to the dead-letter queue: a backstop, since spool counts
	// attempts itself; keep it well above any job's attempts.
	// YAML: store.aws.max_receive_count. 0: 100.
	MaxReceiveCount int
	// JobsTable names the DynamoDB table of jobs.
	// YAML: store.aws.jobs_table. "": spool_jobs.
	JobsTable string
	// EventsTable names the DynamoDB table of jobs' events.
	// YAML: store.aws.events_table. "": spool_job_events.
	EventsTable string
	// EventsTTL is how long stored events are kept; DynamoDB deletes
	// expired items within a few days of their expiry.
	// YAML: store.aws.events_ttl_days (whole days). 0: 30 days.
	EventsTTL time.Duration
	// Compression is how stored output is compressed: zstd, about half
	// S2's size on output that does not repeat itself (DynamoDB bills by
	// the kilobyte), or s2, lighter on the server's CPU. Either is read
	// whatever this says. YAML: store.aws.compression. "": zstd.
	Compression string
	// WatchPollInterval is how often the jobs followed on this server
	// are checked for changes made through other servers (at least 10ms);
	// other watched jobs are checked five times less often.
	// YAML: store.aws.watch_poll_interval. 0: 50ms.
	WatchPollInterval time.Duration
	// DeadLetterCheckInterval is how often the dead-letter queues are
	// looked into (negative: at every sweep of leases).
	// YAML: store.aws.dead_letter_check_interval. 0: 1m.
	DeadLetterCheckInterval time.Duration
	// MaxRetries is how often a throttled or failed AWS request is
	// retried, with backoff, before it fails.
	// YAML: store.aws.max_retries. 0: 8.
	MaxRetries int
}

// Jobs holds what applies to every job.
type Jobs struct {
	// MaxAttempts is how many leases a job gets before it fails when its
	// workers keep vanishing; a job's own max_attempts wins.
	// YAML: jobs.max_attempts (1-100). Default: 3.
	MaxAttempts int
	// Lease is how long a lease lasts unless its worker's heartbeats
	// extend it: a worker that vanished is noticed after it. At least
	// twice Execution.HeartbeatInterval, so that one late heartbeat does
	// not lose it. YAML: jobs.lease_seconds (2-43200; its old name
	// jobs.visibility_timeout_seconds is still read). Default: 2m.
	Lease time.Duration
	// Retention is how long a finished job and its log are kept after it
	// ends (0: for ever). YAML: jobs.retention_days (whole days).
	// Default: 30 days.
	Retention time.Duration
	// MaxStdinBytes bounds a job's stdin too large for the job record,
	// uploaded to the blob store ahead of the job. YAML:
	// jobs.max_stdin_bytes (1 MiB to 1 TiB). Default: 1 GiB.
	MaxStdinBytes int64
}

// Execution is sent to workers with each job and stored with it.
type Execution struct {
	// Batching is how workers cut output into stored batches.
	// YAML: execution.batching.
	Batching Batching
	// HeartbeatInterval is how often a worker renews its lease; at most
	// half of Jobs.Lease. YAML: execution.heartbeat_interval_seconds
	// (1-3600). Default: 30s.
	HeartbeatInterval time.Duration
}

// Batching is how workers cut output into stored batches: it is stored
// with each job, and every later read of the job's log uses it.
type Batching struct {
	// FlushInterval is the longest a worker holds output before sending
	// it; while someone follows the job it sends every 20ms anyway.
	// YAML: execution.batching.flush_interval_seconds (1-60).
	// Default: 2s.
	FlushInterval time.Duration
	// MaxBatchSize is the most lines in one stored batch: larger batches
	// mean fewer writes and coarser seeks.
	// YAML: execution.batching.max_batch_size (1-10000). Default: 50.
	MaxBatchSize int
	// MaxBatchBytes is the most output bytes in one stored batch; on aws
	// a batch must fit a DynamoDB item, and the server says at start the
	// most that fits. YAML: execution.batching.max_batch_bytes
	// (1024-8388608). Default: 262144.
	MaxBatchBytes int64
	// PlaybackInterval spaces replayed lines that carry no time stamps.
	// YAML: execution.batching.playback_interval_millis (whole
	// milliseconds, 0-10000). Default: 50ms.
	PlaybackInterval time.Duration
	// JobMinFlushInterval is the shortest flush interval a job may ask
	// for itself (spool submit --flush-interval); a job asking for less
	// is refused. Each flush is a store write.
	// YAML: execution.batching.job_min_flush_interval_millis (whole
	// milliseconds, 1-60000). Default: 100ms.
	JobMinFlushInterval time.Duration
	// JobMaxFlushInterval is the longest flush interval a job may ask for
	// itself. YAML: execution.batching.job_max_flush_interval_seconds
	// (1-3600). Default: 60s.
	JobMaxFlushInterval time.Duration
	// JobMaxBatchSize is the most lines a batch a job may ask for itself
	// (spool submit --batch-lines).
	// YAML: execution.batching.job_max_batch_size (1-10000). Default: 1000.
	JobMaxBatchSize int
}

// Ingest is how the server takes the logs of programs it did not start.
type Ingest struct {
	// Queue is the queue external jobs are listed under; no worker runs
	// them. YAML: ingest.queue. Default: external.
	Queue string
	// IdleTimeout ends a source's job once no new event has come for
	// this long (0: only an explicit complete ends it); later events of
	// the source start a new job. YAML: ingest.idle_timeout_seconds.
	// Default: 10m.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds one request's body, as sent and, when the
	// sender compressed it, decompressed. YAML: ingest.max_body_bytes
	// (1024-67108864). Default: 16777216.
	MaxBodyBytes int64
	// MaxDecodedBytes bounds what one Firehose request's records decode
	// to, all together (base64 undone, gzip decompressed): a gzip bomb is
	// refused by it. At least MaxBodyBytes.
	// YAML: ingest.max_decoded_bytes (up to 1073741824). Default: 67108864.
	MaxDecodedBytes int64
	// MaxDecodingBytes bounds what the requests being decoded at once
	// decode to, all together, server-wide: a request that does not fit
	// waits for others to be stored. At least MaxDecodedBytes.
	// YAML: ingest.max_decoding_bytes. Default: 134217728.
	MaxDecodingBytes int64
	// Backfill reads CloudWatch Logs log groups again on a schedule, by
	// name, and adds the events spool lacks, as `spool ingest backfill`
	// does by hand (docs/ingest.md). YAML: ingest.backfill.
	Backfill map[string]Backfill
}

// Backfill is one CloudWatch Logs log group (or stream) read again on a
// schedule. Each round is run by one of the servers sharing the store,
// with the AWS SDK's usual credentials, which need logs:FilterLogEvents.
type Backfill struct {
	// LogGroup is the log group to read.
	// YAML: ingest.backfill.NAME.log_group.
	LogGroup string
	// LogStream reads only this stream ("": all).
	// YAML: ingest.backfill.NAME.log_stream.
	LogStream string
	// Every is how often the group is read (whole seconds, at least
	// 10). YAML: ingest.backfill.NAME.every_seconds. Default: 15m.
	Every time.Duration
	// Lookback is how far back each round reads, at least Every.
	// YAML: ingest.backfill.NAME.lookback_seconds. Default: an hour, or
	// twice Every.
	Lookback time.Duration
	// Region is the log group's ("": Store.AWS.Region, then the SDK's
	// usual sources). YAML: ingest.backfill.NAME.region.
	Region string
	// Endpoint is a CloudWatch Logs URL to call instead of AWS's (a
	// compatible server such as moto).
	// YAML: ingest.backfill.NAME.endpoint.
	Endpoint string
}

// DefaultConfig is the configuration used when nothing is set: SQLite in
// ./spool-data, listening on 127.0.0.1:7070, logs discarded.
func DefaultConfig() *Config { return fromFile(config.Default()) }

// LoadConfig reads a YAML configuration file ("" for none) over the
// defaults, applies the SPOOL_* environment variables, and validates the
// result; an error names the setting that is wrong by its YAML path. The
// Logger it sets writes to standard error as the file's log settings say.
func LoadConfig(path string) (*Config, error) {
	fc, err := config.Load(path, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	cfg := fromFile(fc)
	cfg.Logger = fc.Log.NewLogger(os.Stderr)
	return cfg, nil
}

// QueueConfig is what one queue is configured with in the file.
type QueueConfig struct {
	// Notify are URLs POSTed the end of every job of the queue, besides
	// the job's own (at most 5 together). YAML: queues.NAME.notify.
	Notify []string
	// NotifySecret signs the queue's webhooks instead of Notify.Secret.
	// YAML: queues.NAME.notify_secret.
	NotifySecret string
}

// Notify is how webhooks are sent (docs/webhooks.md).
type Notify struct {
	// Secret signs every webhook (its Spool-Signature header) whose
	// queue has no secret of its own. Empty: such webhooks go unsigned.
	// YAML: notify.secret.
	Secret string
	// BaseURL is where people reach the server, for the links in
	// webhooks. Empty: the server's own address. YAML: notify.base_url.
	BaseURL string
	// AllowPrivateAddresses lets webhooks go to loopback, private and
	// link-local addresses, which are refused by default: whoever may
	// submit a job names the URL, and the server often reaches what the
	// submitter cannot. YAML: notify.allow_private_addresses.
	AllowPrivateAddresses bool
	// Timeout is how long one POST may take. YAML:
	// notify.timeout_seconds. Default: 10s.
	Timeout time.Duration
}

// Schedules are the defaults of periodic jobs.
type Schedules struct {
	// Missed is what a schedule that does not say does with the ticks
	// that passed while no server ran: "run_once" (the latest of them;
	// also when empty) or "skip". YAML: schedules.missed.
	Missed string
}

// Artifacts bounds the files a job keeps (docs/artifacts.md): an upload
// past a bound is refused, naming it, and leaves nothing behind.
type Artifacts struct {
	// MaxFileBytes bounds one artifact. YAML: artifacts.max_file_bytes.
	// Default: 5 GiB.
	MaxFileBytes int64
	// MaxJobBytes bounds a job's artifacts together, at least
	// MaxFileBytes. YAML: artifacts.max_job_bytes. Default: 20 GiB.
	MaxJobBytes int64
	// MaxFiles bounds how many artifacts a job keeps.
	// YAML: artifacts.max_files (1-1000000). Default: 10000.
	MaxFiles int
}

// Blobs chooses and configures the store of files kept beside jobs
// (docs/configuration.md, "Files beside jobs").
type Blobs struct {
	// Type is dir (files under a directory), postgres (the database of
	// Store.Postgres) or s3 (a bucket). Empty follows Store.Type: dir for
	// sqlite and memory (for memory a temporary directory, removed at
	// stop), postgres for postgres, and s3 for aws once S3.Bucket is set
	// (without it, no blobs). YAML: blobs.type.
	Type string
	// Dir is the directory of the dir type ("": DataDir/blobs).
	// YAML: blobs.dir.
	Dir string
	// S3 configures the s3 type. YAML: blobs.s3.
	S3 BlobsS3
}

// BlobsS3 configures blobs in an S3 bucket.
type BlobsS3 struct {
	// Bucket holds the blobs; spool does not create it.
	// YAML: blobs.s3.bucket.
	Bucket string
	// Prefix is put before every object's name, to share a bucket: blobs
	// go under Prefix+"blobs/", uploads in progress under
	// Prefix+"uploads/". YAML: blobs.s3.prefix.
	Prefix string
	// Region of the bucket ("": Store.AWS.Region, then the SDK's usual
	// sources). YAML: blobs.s3.region.
	Region string
	// Endpoint overrides S3's ("": Store.AWS.Endpoint, then S3's own).
	// YAML: blobs.s3.endpoint.
	Endpoint string
	// PathStyle names the bucket in the path rather than the host name,
	// for servers that need it (moto_server, MinIO).
	// YAML: blobs.s3.path_style.
	PathStyle bool
	// PartSizeMB is the size of each part of a large upload, and so the
	// memory one upload holds (at least 5). YAML: blobs.s3.part_size_mb.
	// 0: 8.
	PartSizeMB int
}

// Scatter configures what the server does for scatters.
type Scatter struct {
	// S3 reaches the buckets of scatters whose items are in S3 (spool
	// scatter --items s3://...). YAML: scatter.s3.
	S3 ScatterS3
}

// ScatterS3 says how the server reaches users' buckets; credentials are
// the AWS SDK's default chain (the environment, the shared files, the
// instance's role).
type ScatterS3 struct {
	// Region of the buckets ("": Store.AWS.Region, then the SDK's usual
	// sources). YAML: scatter.s3.region.
	Region string
	// Endpoint overrides S3's ("": Store.AWS.Endpoint, then S3's own).
	// YAML: scatter.s3.endpoint.
	Endpoint string
	// PathStyle names the bucket in the path rather than the host name,
	// for servers that need it (moto_server, MinIO).
	// YAML: scatter.s3.path_style.
	PathStyle bool
}
