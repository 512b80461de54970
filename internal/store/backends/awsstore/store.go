package awsstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/spool-run/spool/internal/store"
)

// DynamoDB's item size limit, and what is kept free in an event item for
// the attributes beside the payload (keys, line numbers, ttl: under 200
// bytes in practice).
const (
	dynamoItemLimit = 400 << 10
	itemOverhead    = 1 << 10
	// MaxItemBytes is the largest encoded event the store accepts.
	MaxItemBytes = dynamoItemLimit - itemOverhead
)

// Store is the SQS + DynamoDB JobStore. It is safe for concurrent use, and
// any number of Stores (one per server replica) may share the same queues
// and tables.
type Store struct {
	cfg     Config
	clients clients
	// sqs gathers sends, deletes and visibility changes into batches.
	sqs    sqsGatherers
	log    *slog.Logger
	queues *queueDir
	// prio finds the SQS queues of priorities (see priority.go).
	prio priorityDir
	// limits caches which queues have no max_running (see limits.go).
	limits limitCache
	// promoting lets one PromoteScheduled of this Store run at a time:
	// two at once would both send the messages of the same due jobs.
	promoting sync.Mutex
	// waits is what promotions remember of the jobs waiting for others.
	waits  afterWait
	watch  *watcher
	shares *shares
	dlq    deadLetterClock
	hooks  hooks
	// rollForwardAfter is the const of that name; tests shorten it.
	rollForwardAfter time.Duration
	// listScan and listRounds are the consts of those names; tests
	// shorten them. statsScan, endedScan and endedRounds too.
	listScan, listRounds              int
	statsScan, endedScan, endedRounds int
	// abandonAfter and patience are ingestAbandonAfter and
	// ingestPatience; tests shorten them.
	abandonAfter, patience time.Duration
	// sources remembers the job each source was last seen ingesting into.
	sources openJobs
	// sweep is where EndedBefore goes on from.
	sweep sweepCursor
	// replica names this Store among those sharing the tables.
	replica string
	// ended keeps what EndedPerMinute walked for each queue a while.
	ended endedCache

	closeOnce sync.Once
}

// hooks let tests stop an operation between two of its steps, as a crash
// or a stalled server would. They are nil outside tests.
type hooks struct {
	// afterMarker runs once Enqueue has written a request marker; an error
	// abandons the enqueue there.
	afterMarker func(ctx context.Context) error
	// beforeWrite runs once Append has read the job and planned its
	// items, afterWrite once it has written them; an error abandons the
	// append there.
	beforeWrite func(ctx context.Context) error
	afterWrite  func(ctx context.Context) error
	// beforeLease runs once Dequeue has read a queued job, before it
	// leases it.
	beforeLease func(ctx context.Context) error
	// afterScatterBatches runs once CreateScatter has written the batches,
	// before the record; an error abandons the create there.
	afterScatterBatches func(ctx context.Context) error
	// afterIngestReserve runs once Ingest has reserved its range,
	// afterIngestWrite once it has written its items and markers; an
	// error abandons the call there.
	afterIngestReserve func(ctx context.Context) error
	afterIngestWrite   func(ctx context.Context) error
}

func runHook(ctx context.Context, h func(ctx context.Context) error) error {
	if h == nil {
		return nil
	}
	return h(ctx)
}

var _ store.JobStore = (*Store)(nil)

// Open connects to the queues and tables cfg names. The tables must exist
// (Provision creates them); queues are looked up when first used.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg)
}

// open is Open with extra SDK middleware (tests count requests with it).
func open(ctx context.Context, cfg Config, extra ...func(*middleware.Stack) error) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c, err := newClients(ctx, cfg, extra...)
	if err != nil {
		return nil, err
	}
	s := newStore(cfg, c)
	for _, table := range []string{cfg.JobsTable, cfg.EventsTable} {
		if _, err := c.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			return nil, awsErr(err, "open DynamoDB table %s", table)
		}
	}
	return s, nil
}

// newStore assembles a Store on clients for cfg (defaults applied).
func newStore(cfg Config, c clients) *Store {
	s := &Store{cfg: cfg, clients: c, log: slog.Default().With("store", "aws"), rollForwardAfter: rollForwardAfter, replica: newReplicaID(),
		listScan: listScan, listRounds: listRounds,
		statsScan: statsScan, endedScan: endedScan, endedRounds: endedRounds, abandonAfter: ingestAbandonAfter, patience: ingestPatience,
		ended: endedCache{fresh: endedFresh}}
	s.sqs = newSQSGatherers(c.sqs)
	s.queues = newQueueDir(s)
	s.watch = newWatcher(s)
	s.shares = newShares(s)
	return s
}

// Config returns the store's configuration, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// feedGrowth: a query costs at least a read unit (4 KB: several batches
// of output), however few items it returns, so a feed's pages grow
// eightfold: a replay of the last thousand lines of a job is three queries
// (one item, then 8, then the rest), not five (1, 2, 4, 8, 16).
const feedGrowth = 8

// Limits implements store.JobStore.
func (s *Store) Limits() store.Limits {
	return store.Limits{MaxItemBytes: MaxItemBytes, Codec: s.cfg.codec(), FeedGrowth: feedGrowth}
}

// Capabilities implements store.JobStore: followers (see shares) and
// polling workers (see pollers.go) shared between replicas, a ping for the
// readiness probe, the count of the SDK's retries, and a completion's last
// events committed in the completion's own update of the job (Finish),
// nothing else. Leases are SQS's visibility timeouts, which run whether a
// server does or not; and DynamoDB gives space back by itself.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{WatchSharer: s, Pinger: s, RetryReporter: s, Finisher: s, PollerSharer: s}
}

// Watch implements store.JobStore: see watcher.
func (s *Store) Watch(ctx context.Context, jobID string) <-chan struct{} {
	return s.watch.Watch(ctx, jobID)
}

// Close implements store.JobStore. It stops watching other servers'
// changes and wakes everyone waiting in Watch.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.shares.close()
		s.watch.close()
	})
	return nil
}
