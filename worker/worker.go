// Package worker runs spool jobs: it leases them from a queue, runs each
// command with its output captured line by line and batched, keeps the lease
// alive with heartbeats, and reports how the command ended. Output goes
// through an on-disk outbox before it is sent, so a server that is away for
// a while loses nothing.
//
// `spool worker` is this package; a program that wants to run spool's jobs
// itself embeds it:
//
//	w, err := worker.New(worker.Config{Server: "http://127.0.0.1:7070", SpoolDir: "/var/lib/spool/worker"})
//	if err != nil {
//		return err
//	}
//	return w.Run(ctx) // until ctx ends, then a graceful stop
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/outbox"
	"github.com/spool-run/spool/internal/setting"
	"github.com/spool-run/spool/internal/wire"
)

// Config is how a worker runs. Server and SpoolDir are required; every
// other field has a default.
type Config struct {
	// Server is the spool server's address (http://host:port).
	Server string
	// Queue to lease from ("" is "default").
	Queue string
	// Concurrency is how many jobs run at once.
	Concurrency int
	// SpoolDir holds outboxes (output not yet acknowledged), checkouts and
	// the jobs' own directories. It is made its owner's only (0700; 0711
	// with RunAs, so that the job's user can pass through it to its own
	// directory, but not list it), and the files in it are 0600.
	SpoolDir string
	// WorkDir, when set, is where commands without a repository run (a
	// relative working_dir is taken inside it). "": each attempt runs in
	// an empty directory of its own, SpoolDir/jobs/JOB-aN, and a relative
	// working_dir is taken inside that. A directory that holds a server's
	// data (admin.key, token.key, spool.db) is refused.
	WorkDir string
	// KeepJobDirs keeps each attempt's own directory when it ends, to look
	// at what the command left there; by default it is removed.
	KeepJobDirs bool
	// RunAs runs every command, and the checkout of its repository, as
	// this user (a name or a uid), with the user's groups, in directories
	// the user owns: a job can then read only what that user may, not the
	// spool directory, nor a server's data or anyone's credentials that
	// are their owner's only. Linux only; the worker must run as root.
	RunAs string
	// UndeliveredMaxAge and UndeliveredMaxBytes bound the output kept in
	// SpoolDir/undelivered (output that could not be delivered: the job
	// had moved on to another attempt). Output kept longer is removed, and
	// the oldest first while more is kept. 0: 7 days and 1 GiB; negative:
	// no bound.
	UndeliveredMaxAge   time.Duration
	UndeliveredMaxBytes int64
	// CheckoutDir is where repositories are cloned ("": SpoolDir/checkouts).
	CheckoutDir string
	// ID names the worker in logs and PROCESS_START events (default:
	// host-pid).
	ID string
	// Lease is the lease length asked for, rounded up to whole seconds (0:
	// the server's). It must be longer than the server's heartbeat
	// interval.
	Lease time.Duration
	// ShutdownGrace is how long a graceful stop lets running jobs finish
	// before stopping them.
	ShutdownGrace time.Duration
	// KillGrace is how long a stopped command has between SIGTERM and
	// SIGKILL.
	KillGrace time.Duration
	// DrainTimeout is how long a stopping worker keeps sending output to an
	// unreachable server before leaving it on disk for the next start.
	DrainTimeout time.Duration
	// APIKey is sent with every call: a worker key (or an admin key).
	APIKey string
	// CAFile trusts only this CA (PEM) for an https:// server with a
	// certificate of a private CA.
	CAFile string
	// HTTPClient makes the requests to the server (nil: a pooled client).
	HTTPClient *http.Client
	// PassEnv names more of the worker's environment variables that jobs
	// get, beside DefaultPassEnv() (a name ending in * passes every
	// variable with that prefix). Nothing else of the worker's environment
	// reaches a job.
	PassEnv []string

	// Logger receives the worker's structured logs (nil: discarded).
	Logger *slog.Logger
	// Meters makes the worker's metrics (nil: none): the meter
	// "spool/worker" records spool.worker.jobs, spool.worker.jobs.running,
	// spool.worker.lines, spool.worker.batches and spool.worker.batch.lines
	// (docs/metrics.md says what each means).
	Meters metric.MeterProvider
}

func (c *Config) setDefaults() error {
	c.Queue = cmp.Or(c.Queue, "default")
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.SpoolDir == "" {
		return errors.New("worker: a spool directory is required")
	}
	if c.Server == "" {
		return errors.New("worker: the server's address is required")
	}
	c.CheckoutDir = cmp.Or(c.CheckoutDir, filepath.Join(c.SpoolDir, "checkouts"))
	// Commands run elsewhere (their own directories) and are told paths in
	// these ($SPOOL_BATCH_FILE, HOME): the paths must not depend on where
	// the worker runs.
	for _, dir := range []*string{&c.SpoolDir, &c.CheckoutDir, &c.WorkDir} {
		if *dir == "" {
			continue
		}
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return fmt.Errorf("worker: %s: %w", *dir, err)
		}
		*dir = abs
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d", cmp.Or(host, "worker"), os.Getpid())
	}
	c.ShutdownGrace = cmp.Or(c.ShutdownGrace, 30*time.Second)
	c.KillGrace = cmp.Or(c.KillGrace, 10*time.Second)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 15*time.Second)
	c.UndeliveredMaxAge = cmp.Or(c.UndeliveredMaxAge, DefaultUndeliveredMaxAge)
	c.UndeliveredMaxBytes = cmp.Or(c.UndeliveredMaxBytes, DefaultUndeliveredMaxBytes)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Worker leases and runs jobs.
type Worker struct {
	cfg Config
	rpc spoolv1connect.JobServiceClient
	// rest streams what a Connect message would hold whole (a large
	// stdin).
	rest *wire.REST
	// compressing is rpc with requests compressed, for events sent as
	// messages (encoded events are compressed already); nil: rpc.
	compressing spoolv1connect.JobServiceClient
	// files uploads jobs' artifacts, with each job's token.
	// completions gathers the results of attempts that end together.
	completions *completions
	log         *slog.Logger
	clock       batcher.Clock
	metrics     *workerMetrics

	slots  chan struct{} // one token per running command
	spares spareDirs
	// outboxes makes attempts' outboxes, of the files of removed ones
	// where it can (set by Run).
	outboxes *outbox.Spares
	spool    spoolHealth
	user     *jobUser // RunAs; nil: jobs run as the worker's user
	// keyRefused is closed once the server has refused the worker's key
	// (keyErr says how); see refuseKey.
	keyRefused chan struct{}
	keyErr     error
	refuseOnce sync.Once
	pruning    sync.Mutex // one pruneUndelivered at a time

	mu       sync.Mutex
	attempts map[*attempt]struct{}
	senders  map[*sender]struct{} // those sending now, for the metrics
	running  sync.WaitGroup       // commands
	sending  sync.WaitGroup       // senders (outlive their commands)

	// sendCtx ends the senders and heartbeats: at the end of a stop, or at
	// once when killed.
	sendCtx   context.Context
	stopSends context.CancelFunc
	killOnce  sync.Once
	killed    chan struct{}
}

// New returns a worker for cfg. It does nothing until Run.
func New(cfg Config) (*Worker, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	// Workers publish batches of output compressed: they cost a fraction
	// of the bandwidth and the server's read budget. Encoded events are
	// compressed one by one, as the server stores them; only events sent
	// as messages (to a server that does not take encoded ones) need the
	// request compressed.
	opts := wire.Options{HTTPClient: cfg.HTTPClient, APIKey: cfg.APIKey, CAFile: cfg.CAFile}
	rpc, err := wire.Dial(cfg.Server, opts)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	opts.Compress = true
	if opts.HTTPClient == nil {
		// Both clients share the connections.
		if opts.HTTPClient, err = wire.HTTPClient(opts); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	compressing, err := wire.Dial(cfg.Server, opts)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	rest, err := wire.NewREST(cfg.Server, opts)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w := &Worker{cfg: cfg, rpc: rpc, compressing: compressing, rest: rest, completions: &completions{rpc: rpc}, log: cfg.Logger, clock: batcher.SystemClock(), slots: make(chan struct{}, cfg.Concurrency),
		spares:   spareDirs{free: make(chan string, cfg.Concurrency)},
		attempts: map[*attempt]struct{}{}, killed: make(chan struct{}), keyRefused: make(chan struct{}), spool: spoolHealth{dir: cfg.SpoolDir}}
	w.metrics = newWorkerMetrics(cfg.Meters, w.waiting)
	if err := w.prepareDirs(); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.sendCtx, w.stopSends = context.WithCancel(context.Background())
	return w, nil
}

// Run leases and runs jobs until ctx ends, then stops gracefully: no new
// leases, running jobs get ShutdownGrace to finish (then are stopped, their
// output sent, and handed back to the queue for another worker), and output
// is sent for up to DrainTimeout. Kill ends it at once. It returns an error
// (after the same stop) when the server refuses its requests for jobs as
// they are made, a Lease shorter than the server allows for one: asking
// again would only be refused again. When the server refuses the worker's
// key, in answer to any call, Run stops its commands at once, sends
// nothing more, and returns an error that is spool.ErrUnauthenticated or
// spool.ErrPermissionDenied (see refuseKey).
func (w *Worker) Run(ctx context.Context) error {
	unlock, err := lockSpoolDir(w.cfg.SpoolDir)
	if err != nil {
		return err
	}
	defer unlock()
	w.clearJobDirs()
	// Room for spares of four times the slots: ended jobs' outboxes wait
	// for the server's acknowledgement while their slots run the next
	// jobs, and they come back in bursts (with room for one slot's worth,
	// one outbox in ten was still a new file).
	w.outboxes = outbox.NewSpares(w.cfg.SpoolDir, 4*w.cfg.Concurrency)
	defer w.outboxes.Drop()
	w.pruneUndelivered()
	if err := w.resumeOutboxes(); err != nil {
		return err
	}
	w.warnExposed()
	w.log.Info("worker started", "queue", w.cfg.Queue, "concurrency", w.cfg.Concurrency, "server", w.cfg.Server, "id", w.cfg.ID, "run_as", w.cfg.RunAs)
	// Kill ends the polling too, as a dying process would, and so does a
	// refused key.
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go func() {
		prune := time.NewTicker(time.Hour)
		defer prune.Stop()
		for {
			select {
			case <-w.killed:
				stopPolling()
				return
			case <-w.keyRefused:
				stopPolling()
				return
			case <-prune.C:
				w.pruneUndelivered()
			case <-pollCtx.Done():
				return
			}
		}
	}()
	refused := w.pollAll(pollCtx, stopPolling)
	if refused == nil {
		refused = w.keyError()
	}

	w.log.Info("worker stopping: no new jobs; waiting for running ones", "running", w.count(), "grace", w.cfg.ShutdownGrace)
	if !waitFor(&w.running, w.cfg.ShutdownGrace, w.killed) {
		w.stopAll("the worker is shutting down; the job goes back to its queue", true)
		waitFor(&w.running, w.cfg.KillGrace+pipeDrain+time.Second, w.killed)
	}
	if !waitFor(&w.sending, w.cfg.DrainTimeout, w.killed) {
		w.log.Warn("output not yet acknowledged is left in the spool directory; the next worker started on it sends it", "dir", w.cfg.SpoolDir)
	}
	w.stopSends()
	w.sending.Wait()
	w.dropSpareDirs()
	w.log.Info("worker stopped")
	return refused
}

// Kill stops every command now (SIGKILL) and ends Run without waiting for
// output to be sent; it stays on disk for the next start.
func (w *Worker) Kill() {
	w.killOnce.Do(func() {
		close(w.killed)
		w.mu.Lock()
		for a := range w.attempts {
			a.mu.Lock()
			a.retry = true
			if a.proc != nil {
				a.proc.kill()
			}
			a.mu.Unlock()
		}
		w.mu.Unlock()
		w.stopSends()
	})
}

// isKilled reports whether Kill was called: from then on nothing more is
// written, as if the worker's process had died.
func (w *Worker) isKilled() bool {
	select {
	case <-w.killed:
		return true
	default:
		return false
	}
}

// waitFor waits for wg up to d (or until abort closes); it reports whether
// wg finished.
func waitFor(wg *sync.WaitGroup, d time.Duration, abort <-chan struct{}) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-abort:
	}
	return false
}

func (w *Worker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.attempts)
}

// stopAll stops every running command.
func (w *Worker) stopAll(why string, retry bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for a := range w.attempts {
		a.mu.Lock()
		a.retry = a.retry || retry
		a.mu.Unlock()
		a.stop(why)
	}
}

// maxLeasesPerCall is the most jobs one DequeueJobs call leases (the
// server's bound on max_jobs).
const maxLeasesPerCall = 500

// pollers is how many poll loops a worker runs. Each call asks for all the
// free slots its loop holds, so one loop could fill any worker's slots up
// to maxLeasesPerCall; a second lets a call go out for the slots that free
// while the first is under way, instead of leaving them empty for its
// round trip. Short jobs free their slots faster than a lease comes back:
// a worker of no-op jobs with one loop ran about half as many a second as
// with two.
func (w *Worker) pollers() int {
	return max(min(w.cfg.Concurrency, 2), (w.cfg.Concurrency+maxLeasesPerCall-1)/maxLeasesPerCall)
}

// pollAll runs the poll loops side by side. The first takes the free slots
// before the others start, so a worker's first call asks for all of them
// (up to maxLeasesPerCall); after that, each loop takes the slots that are
// free when it asks. The first refusal stops them all.
func (w *Worker) pollAll(ctx context.Context, stop context.CancelFunc) error {
	n := w.pollers()
	errs := make([]error, n)
	first := make(chan struct{})
	var once sync.Once
	took := func() { once.Do(func() { close(first) }) }
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			if i > 0 {
				select {
				case <-first:
				case <-ctx.Done():
					return
				}
			}
			if errs[i] = w.poll(ctx, took); errs[i] != nil {
				stop()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// poll leases jobs while there are free slots, until ctx ends or the
// server refuses the worker's request as it is made (then it says why).
// took is called each time it has taken the slots of a call.
func (w *Worker) poll(ctx context.Context, took func()) error {
	bo := backoff.New(500*time.Millisecond, 30*time.Second)
	warned := false
	for {
		if !w.spoolWritable(ctx) {
			return nil
		}
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		free := 1
	fill:
		for free < min(w.cfg.Concurrency, maxLeasesPerCall) {
			select {
			case w.slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		took()
		resp, err := w.rpc.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{
			Queue: w.cfg.Queue, MaxJobs: int32(free), WaitSeconds: 20,
			VisibilityTimeoutSeconds: w.leaseSeconds(), WorkerId: w.cfg.ID,
		}))
		var leases []*spoolv1.JobLease
		if err == nil {
			leases = resp.Msg.GetLeases()
		}
		for range free - len(leases) {
			<-w.slots
		}
		switch {
		case ctx.Err() != nil:
			for range leases {
				<-w.slots
			}
			w.abandonLeases(leases, "leased as its worker was stopping")
			return nil
		case connect.CodeOf(err) == connect.CodeInvalidArgument:
			return w.refused(err)
		case errors.Is(err, http.ErrSchemeMismatch):
			// The address will not change by asking again.
			plain := strings.Replace(w.cfg.Server, "https://", "http://", 1)
			return fmt.Errorf("worker: the server at %s speaks plain HTTP, not HTTPS: start the worker with --server %s (or set SPOOL_SERVER to it): %w",
				w.cfg.Server, plain, spool.ErrInvalidArgument)
		case isKeyRefusal(err):
			w.refuseKey(err)
			return w.keyError()
		case err != nil:
			if !warned {
				w.log.Warn("cannot lease jobs; retrying with backoff", "server", w.cfg.Server, "error", err)
				warned = true
			}
			_ = bo.Wait(ctx)
			continue
		}
		if warned {
			w.log.Info("leasing jobs again", "server", w.cfg.Server)
			warned = false
		}
		bo.Reset()
		for _, l := range leases {
			w.start(l)
		}
	}
}

// refused is the error that ends a worker whose requests for jobs the
// server refuses as they are made: asking again would be refused again.
func (w *Worker) refused(err error) error {
	why := err.Error()
	var ce *connect.Error
	if errors.As(err, &ce) {
		why = ce.Message()
	}
	// The server's words replace its error, and spool.ErrInvalidArgument
	// stays for errors.Is.
	if w.cfg.Lease > 0 && strings.Contains(why, "visibility_timeout_seconds") {
		return fmt.Errorf("worker: %w", setting.Refused("Lease", w.cfg.Lease.String(), why, spool.ErrInvalidArgument))
	}
	return fmt.Errorf("worker: the server refuses to lease jobs to this worker (%w): %s", spool.ErrInvalidArgument, why)
}

// abandonLeases hands back leases the worker cannot run (it is stopping, or
// cannot write its spool directory), so another worker takes them at once.
// The attempts count against nothing: the jobs did nothing wrong.
func (w *Worker) abandonLeases(leases []*spoolv1.JobLease, why string) {
	for _, l := range leases {
		w.log.Info("handing back a job it cannot run", "job_id", l.GetJob().GetJobId(), "reason", why)
		ctx, cancel := context.WithTimeout(w.sendCtx, 5*time.Second)
		_, err := w.rpc.ReleaseJob(ctx, connect.NewRequest(&spoolv1.ReleaseJobRequest{TaskToken: l.GetTaskToken(), Reason: why}))
		cancel()
		if err != nil {
			w.log.Warn("could not hand back a job; it goes back to its queue when its lease runs out", "job_id", l.GetJob().GetJobId(), "error", err)
		}
	}
}

// spoolWritable returns once the spool directory can be written (at once,
// normally), probing it with backoff after a write failed, or false when
// ctx ends first.
func (w *Worker) spoolWritable(ctx context.Context) bool {
	bo := backoff.New(time.Second, 30*time.Second)
	warned := false
	for {
		err := w.spool.check()
		if err == nil {
			if warned {
				w.log.Info("the spool directory can be written again; taking jobs", "dir", w.cfg.SpoolDir)
			}
			return true
		}
		if !warned {
			w.log.Error("not taking jobs: the spool directory cannot be written", "dir", w.cfg.SpoolDir, "error", err)
			warned = true
		}
		if bo.Wait(ctx) != nil {
			return false
		}
	}
}

// start runs a leased job in the background; its slot is taken. The
// outbox is created in the job's own goroutine: creating it is a few file
// system calls, and on the poll loop they would delay every next lease. A
// job leased while the spool directory cannot be written goes straight
// back, before the poll loop goes on to say it takes no jobs.
func (w *Worker) start(lease *spoolv1.JobLease) {
	if err := w.spool.check(); err != nil {
		w.abandonLeases([]*spoolv1.JobLease{lease}, "its worker's spool directory cannot be written")
		<-w.slots
		return
	}
	w.running.Add(1)
	w.sending.Add(1)
	go func() {
		defer w.sending.Done()
		a := w.open(lease)
		if a == nil {
			<-w.slots
			w.running.Done()
			return
		}
		w.run(a)
	}()
}

// publisher is the client that sends out: requests of messages go
// compressed.
func (w *Worker) publisher(out outgoing) spoolv1connect.JobServiceClient {
	if out.messages != nil && w.compressing != nil {
		return w.compressing
	}
	return w.rpc
}

// open makes the attempt of a leased job, with its outbox. It returns nil
// when the job is not to run: handed back because its outbox cannot be
// created, or left because the worker was killed.
func (w *Worker) open(lease *spoolv1.JobLease) *attempt {
	job := lease.GetJob()
	log := w.log.With("job_id", job.GetJobId(), "attempt", job.GetAttempt())
	b := job.GetExecutionConfig().GetBatching()
	ob, err := w.outboxes.Create(outbox.Header{JobID: job.GetJobId(), Queue: job.GetQueue(), Attempt: job.GetAttempt(),
		Token: lease.GetTaskToken(), Server: w.cfg.Server, Created: time.Now(),
		Batch:     outbox.BatchLimits{MaxLines: int(b.GetMaxBatchSize()), MaxBytes: b.GetMaxBatchBytes(), PlaybackMillis: b.GetPlaybackIntervalMillis()},
		FirstLine: lease.GetNextLine()})
	if err != nil {
		w.spool.broke(err)
		log.Error("cannot create the job's outbox; handing the job back", "error", err)
		w.abandonLeases([]*spoolv1.JobLease{lease}, "its worker could not create the job's outbox: "+err.Error())
		return nil
	}
	a := &attempt{w: w, lease: lease, job: job, log: log, ob: ob, started: make(chan struct{}), ended: make(chan struct{})}
	a.out = batcher.NewOutput(batcher.OutputConfig{Batching: job.GetExecutionConfig().GetBatching(), EmitBatch: a.emitBatch},
		lease.GetNextSequence(), job.GetAttempt(), w.clock, a.emit)
	a.pace = newPace(a.out.FlushInterval(), w.clock)
	// Kill stops the attempts it finds; one it can no longer find must not
	// start its command. Its outbox stays, as a crash leaves it. So for a
	// refused key.
	w.mu.Lock()
	killed := w.isKilled() || w.keyError() != nil
	if !killed {
		w.attempts[a] = struct{}{}
	}
	w.mu.Unlock()
	if killed {
		_ = ob.Close()
		return nil
	}
	return a
}

// run is one attempt from start to acknowledged completion (or hand-back).
func (w *Worker) run(a *attempt) {
	snd := &sender{w: w, ob: a.ob, token: a.lease.GetTaskToken(), log: a.log, completeTakesEvents: a.lease.GetCompleteTakesEvents(),
		encoded: a.lease.GetTakesEncodedEvents(),
		started: a.started, ended: a.ended, pace: a.pace, onWatched: a.setWatched, onLost: a.leaseLost, onRefused: func(err error) { a.stop(err.Error()) }}
	sent := make(chan error, 1)
	go func() { sent <- snd.run(w.sendCtx) }()
	hbCtx, stopHeartbeat := context.WithCancel(w.sendCtx)
	defer stopHeartbeat()
	go a.heartbeat(hbCtx)

	a.log.Info("job started", "command", commandText(a.job))
	w.metrics.running.Add(context.Background(), 1)
	res := a.execute(w.sendCtx)
	a.out.Close()
	w.metrics.running.Add(context.Background(), -1)
	w.mu.Lock()
	delete(w.attempts, a)
	w.mu.Unlock()
	<-w.slots
	w.running.Done()

	a.mu.Lock()
	lost, retry := a.lost, a.retry
	a.mu.Unlock()
	outcome := "completed"
	switch {
	case lost:
		outcome = "lease_lost"
	case retry:
		outcome = "handed_back"
	}
	w.metrics.attemptDone(context.Background(), outcome, a.out.Stats())
	switch {
	case w.isKilled():
		// Nothing more is written or sent: the outbox is left for the
		// next worker on this directory, as a crash leaves it.
	case lost:
		// Send what the command printed while that is still allowed (no
		// later attempt has started); the result goes nowhere.
		a.log.Warn("job stopped: its lease was lost", "reason", a.stopReason())
		a.ob.Seal()
	case retry:
		// Send what the command printed, then hand the job back so
		// another worker runs it at once.
		snd.release("the worker is shutting down", false)
		a.ob.Seal()
	default:
		if err := a.ob.Finish(res); err != nil && !a.ob.Broken() {
			a.log.Error("cannot record the job's result", "error", err)
		}
	}
	close(a.ended)
	err := <-sent
	switch {
	case err == nil && !lost && !retry:
		a.log.Info("job finished", "exit_code", res.GetExitCode(), "error", res.GetError())
	case errors.Is(err, errLeaseLost) || err == nil:
	default:
		a.log.Warn("job output left in the spool directory", "outbox", a.ob.Path(), "error", err)
		_ = a.ob.Close()
	}
}

// leaseSeconds is the lease asked for on the wire, in whole seconds (0:
// the server's default).
func (w *Worker) leaseSeconds() int32 {
	return int32((w.cfg.Lease + time.Second - 1) / time.Second)
}

func commandText(j *spoolv1.Job) string {
	_, text := command(j.GetParams())
	return text
}

// waiting is what the worker holds for the server: output lines in its
// running commands' batchers, and bytes of outboxes not yet acknowledged
// (of running commands, of those whose output is still being sent, and of
// outboxes left by an earlier worker).
func (w *Worker) waiting() (lines, bytes int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for a := range w.attempts {
		lines += int64(a.out.Buffered())
	}
	for s := range w.senders {
		bytes += s.ob.Pending()
	}
	return lines, bytes
}

// sendingNow counts s among the senders while it sends (until done).
func (w *Worker) sendingNow(s *sender) (done func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.senders == nil {
		w.senders = map[*sender]struct{}{}
	}
	w.senders[s] = struct{}{}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.senders, s)
	}
}
