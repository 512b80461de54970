// Package service is spool's application core: every rule about jobs, leases
// and logs lives here once, and every entrance adapts to it. The Connect API
// (gRPC, gRPC-Web, JSON), the REST API, the WebSocket log stream and the web
// UI only translate their requests into calls of Service and its answers
// back; none of them talks to the store.
//
// What the core owns:
//
//   - validation and limits of every request (validate.go), with errors of
//     spool's kinds that each entrance reports as its own code or status;
//   - the job and lease operations over the JobStore (jobs.go, leases.go)
//     and task tokens, which fence a lease to one attempt;
//   - reading logs: replay-then-follow feeds and pages of lines (logs.go),
//     search in a log and the raw download (logsearch.go, reading through
//     package logsearch);
//   - the logs of programs spool did not start: external jobs, their
//     sources, their end and the rebuild of their logs (ingest.go);
//   - the "someone is watching" signal that makes workers flush promptly
//     (watchers.go);
//   - the job-level metrics (metrics.go);
//   - scatters: who may create, read and cancel them (scatter.go, with
//     their rules in package scatter), and the input each of their jobs
//     reads (input.go);
//   - the rules the server's background chores (package maintenance)
//     share with the requests: deleting a job (RemoveJob) and ending an
//     external one (EndExternal);
//   - draining: on shutdown, long polls and follows end at once so clients
//     resume elsewhere or later;
//   - readiness: whether the store answers, for the server's /readyz
//     (ready.go);
//   - when jobs run: a job's time, priority, the jobs it runs after and
//     its webhook URLs as it is enqueued, and the alarm that wakes the
//     promoter early (timing.go); queues' limits (ConfigureQueue in
//     queues.go);
//   - periodic jobs: schedules, their checks and roles, and the ticks
//     the ticker has the core run, one job per tick (schedules.go).
package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// Options are what the core is built from.
type Options struct {
	// Store holds the jobs and their logs. The core does not close it.
	Store store.JobStore
	// Signer signs and checks task tokens.
	Signer *token.Signer
	// Sealer seals and opens jobs' secrets (nil: jobs with secrets are
	// refused). The server derives it from the same key as Signer.
	Sealer *seal.Sealer
	// Config supplies job defaults (attempts, lease length, batching).
	Config *config.Config
	// Log receives the core's structured events (nil: discarded).
	Log *slog.Logger
	// Meter makes the core's instruments (nil: no metrics).
	Meter metric.Meter
	// Outages hears of every call that found the store away (nil: no
	// one): the reaper gives leases grace after them (maintenance.Outage).
	Outages Outages
	// Blobs holds files kept beside jobs (nil: none configured). The core
	// does not close it.
	Blobs blob.Store
	// ScatterS3 reads the items of scatters whose items are in S3 (nil:
	// such scatters are refused).
	ScatterS3 *s3items.Client
}

// Outages records store calls that found the store away.
type Outages interface {
	Saw()
}

// Service is the application core. Its methods are safe for concurrent use.
type Service struct {
	store   store.JobStore
	signer  *token.Signer
	sealer  *seal.Sealer
	cfg     *config.Config
	log     *slog.Logger
	metrics *metrics
	outages Outages
	blobs   blob.Store
	// watchers counts live followers, reported to publishing workers.
	watchers watchers
	// pollWatch is how long a page read keeps a running job watched
	// (the constant pollWatch; shorter in tests).
	pollWatch time.Duration
	// awaiting, when set (by tests), is called as a read of lines starts
	// to wait for one.
	awaiting func()
	touched  touches
	keyCache keyCache
	// scatters runs scatters' rounds.
	scatters *scatter.Driver
	// pollers are the workers polling each queue, here and at the
	// servers sharing the store.
	pollers pollers
	// decoding bounds what ingested deliveries decode to at once.
	decoding decodeBudget
	// ready is the store's last answer to the readiness probe (ready.go).
	ready readiness
	// alarm wakes the promoter early (timing.go).
	alarm *alarm
	// backfills are the rounds of scheduled backfills (backfill.go).
	backfills backfills

	drainOnce sync.Once
	drain     chan struct{} // closed when the server starts shutting down
}

// New returns the core over o.Store.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Meter == nil {
		o.Meter = noop.NewMeterProvider().Meter("spool")
	}
	if o.Outages == nil {
		o.Outages = noOutages{}
	}
	s := &Service{store: o.Store, signer: o.Signer, sealer: o.Sealer, cfg: o.Config, log: o.Log, outages: o.Outages, blobs: o.Blobs, drain: make(chan struct{}), pollWatch: pollWatch, alarm: newAlarm()}
	s.metrics = newMetrics(o.Meter, &s.watchers)
	observeQueues(o.Meter, o.Store)
	s.scatters = scatter.NewDriver(scatter.DriverOptions{Store: o.Store, Execution: s.execution, Log: o.Log, Metrics: s.metrics.scatter, Blobs: o.Blobs, S3: o.ScatterS3})
	if ws := o.Store.Capabilities().WatchSharer; ws != nil {
		s.watchers.shareWith(ws)
	}
	s.pollers.sharer, s.pollers.log = o.Store.Capabilities().PollerSharer, o.Log
	return s
}

// noOutages is Options.Outages when no one listens.
type noOutages struct{}

func (noOutages) Saw() {}

// Drain tells long polls and follows to end now: the server is shutting
// down, and their clients should resume elsewhere or after the restart.
func (s *Service) Drain() {
	s.drainOnce.Do(func() { close(s.drain) })
}

// Draining is closed once Drain has been called.
func (s *Service) Draining() <-chan struct{} { return s.drain }

func (s *Service) draining() bool {
	select {
	case <-s.drain:
		return true
	default:
		return false
	}
}

// untilDrain returns ctx, cancelled also when the server starts draining.
func (s *Service) untilDrain(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.drain:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// leaseDuration is the lease length a worker asked for, in seconds on the
// wire (0: the configured default). A lease must outlast the heartbeat
// interval, or every job would lose its lease between two heartbeats.
func (s *Service) leaseDuration(secs int32) (time.Duration, error) {
	if secs == 0 {
		return s.cfg.Jobs.Lease(), nil
	}
	v, err := checkSeconds("visibility_timeout_seconds", secs, 0, int32(minLease/time.Second), int32(maxLease/time.Second))
	return time.Duration(v) * time.Second, err
}

// Blobs is the store of files kept beside jobs, nil when the server has
// none (a server on AWS without blobs.s3.bucket).
func (s *Service) Blobs() blob.Store { return s.blobs }
