// Package worker runs jobs: it leases them from a queue, runs each command
// with its output captured line by line and batched, keeps the lease alive,
// and reports how the command ended. Output goes through an on-disk outbox,
// so a server that is away for a while loses nothing.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/outbox"
)

// Config is how a worker runs.
type Config struct {
	// Queue to lease from ("" is "default").
	Queue string
	// Concurrency is how many jobs run at once.
	Concurrency int
	// SpoolDir holds outboxes (output not yet acknowledged) and checkouts.
	SpoolDir string
	// WorkDir is where commands without a repository run ("": the worker's
	// own working directory).
	WorkDir string
	// CheckoutDir is where repositories are cloned ("": SpoolDir/checkouts).
	CheckoutDir string
	// WorkerID names the worker in logs and PROCESS_START events.
	WorkerID string
	// VisibilityTimeoutSeconds is the lease asked for (0: the server's).
	VisibilityTimeoutSeconds int32
	// ShutdownGrace is how long a graceful stop lets running jobs finish
	// before stopping them.
	ShutdownGrace time.Duration
	// KillGrace is how long a stopped command has between SIGTERM and
	// SIGKILL.
	KillGrace time.Duration
	// DrainTimeout is how long a stopping worker keeps sending output to an
	// unreachable server before leaving it on disk for the next start.
	DrainTimeout time.Duration
	Logger       *slog.Logger
	// Clock drives batching (tests use a fake one).
	Clock batcher.Clock
	// Meters, when set, receives the worker's metrics.
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
	c.CheckoutDir = cmp.Or(c.CheckoutDir, filepath.Join(c.SpoolDir, "checkouts"))
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", cmp.Or(host, "worker"), os.Getpid())
	}
	c.ShutdownGrace = cmp.Or(c.ShutdownGrace, 30*time.Second)
	c.KillGrace = cmp.Or(c.KillGrace, 10*time.Second)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 15*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = batcher.SystemClock()
	}
	return nil
}

// Worker leases and runs jobs.
type Worker struct {
	cfg     Config
	api     *client.Client
	log     *slog.Logger
	clock   batcher.Clock
	metrics *workerMetrics

	slots chan struct{} // one token per running command

	mu       sync.Mutex
	attempts map[*attempt]struct{}
	running  sync.WaitGroup // commands
	sending  sync.WaitGroup // senders (outlive their commands)

	// sendCtx ends the senders and heartbeats: at the end of a stop, or at
	// once when killed.
	sendCtx   context.Context
	stopSends context.CancelFunc
	killOnce  sync.Once
	killed    chan struct{}
}

// New returns a worker talking to the server through api.
func New(api *client.Client, cfg Config) (*Worker, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.SpoolDir, cfg.CheckoutDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	w := &Worker{cfg: cfg, api: api, log: cfg.Logger, clock: cfg.Clock, metrics: newWorkerMetrics(cfg.Meters), slots: make(chan struct{}, cfg.Concurrency),
		attempts: map[*attempt]struct{}{}, killed: make(chan struct{})}
	w.sendCtx, w.stopSends = context.WithCancel(context.Background())
	return w, nil
}

// Run leases and runs jobs until ctx ends, then stops gracefully: no new
// leases, running jobs get ShutdownGrace to finish (then are stopped, and
// retried elsewhere once their lease expires), and output is sent for up to
// DrainTimeout. Kill ends it at once.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.resumeOutboxes(); err != nil {
		return err
	}
	w.log.Info("worker started", "queue", w.cfg.Queue, "concurrency", w.cfg.Concurrency, "server", w.api.URL(), "id", w.cfg.WorkerID)
	w.poll(ctx)

	w.log.Info("worker stopping: no new jobs; waiting for running ones", "running", w.count(), "grace", w.cfg.ShutdownGrace)
	if !waitFor(&w.running, w.cfg.ShutdownGrace, w.killed) {
		w.stopAll("the worker is shutting down; the job will be retried", true)
		waitFor(&w.running, w.cfg.KillGrace+pipeDrain+time.Second, w.killed)
	}
	if !waitFor(&w.sending, w.cfg.DrainTimeout, w.killed) {
		w.log.Warn("output not yet acknowledged is left in the spool directory; the next worker started on it sends it", "dir", w.cfg.SpoolDir)
	}
	w.stopSends()
	w.sending.Wait()
	w.log.Info("worker stopped")
	return nil
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

// poll leases jobs while there are free slots, until ctx ends.
func (w *Worker) poll(ctx context.Context) {
	bo := backoff.New(500*time.Millisecond, 30*time.Second)
	warned := false
	for {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1
	fill:
		for free < min(w.cfg.Concurrency, 10) {
			select {
			case w.slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		resp, err := w.api.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{
			Queue: w.cfg.Queue, MaxJobs: int32(free), WaitSeconds: 20,
			VisibilityTimeoutSeconds: w.cfg.VisibilityTimeoutSeconds, WorkerId: w.cfg.WorkerID,
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
			w.abandonLeases(leases)
			return
		case err != nil:
			if !warned {
				w.log.Warn("cannot lease jobs; retrying with backoff", "server", w.api.URL(), "error", err)
				warned = true
			}
			_ = bo.Wait(ctx)
			continue
		}
		if warned {
			w.log.Info("leasing jobs again", "server", w.api.URL())
			warned = false
		}
		bo.Reset()
		for _, l := range leases {
			w.start(l)
		}
	}
}

// abandonLeases gives up leases that arrived as the worker was stopping:
// they expire and go to another worker.
func (w *Worker) abandonLeases(leases []*spoolv1.JobLease) {
	for _, l := range leases {
		w.log.Info("leased a job while stopping; leaving it to be retried", "job_id", l.GetJob().GetJobId())
	}
}

// start runs a leased job in the background; its slot is taken.
func (w *Worker) start(lease *spoolv1.JobLease) {
	job := lease.GetJob()
	log := w.log.With("job_id", job.GetJobId(), "attempt", job.GetAttempt())
	ob, err := outbox.Create(w.cfg.SpoolDir, outbox.Header{JobID: job.GetJobId(), Queue: job.GetQueue(), Attempt: job.GetAttempt(),
		Token: lease.GetTaskToken(), Server: w.api.URL(), Created: time.Now()})
	if err != nil {
		<-w.slots
		log.Error("cannot create the job's outbox; leaving the job to be retried", "error", err)
		return
	}
	a := &attempt{w: w, lease: lease, job: job, log: log, ob: ob}
	a.out = batcher.NewOutput(batcher.OutputConfig{Batching: job.GetExecutionConfig().GetBatching()},
		lease.GetNextSequence(), job.GetAttempt(), w.clock, a.emit)
	w.mu.Lock()
	w.attempts[a] = struct{}{}
	w.mu.Unlock()
	w.running.Add(1)
	w.sending.Add(1)
	go w.run(a)
}

// run is one attempt from start to acknowledged completion.
func (w *Worker) run(a *attempt) {
	defer w.sending.Done()
	snd := &sender{api: w.api, ob: a.ob, token: a.lease.GetTaskToken(), log: a.log,
		onWatched: a.out.SetWatched, onLost: a.leaseLost, onRefused: func(err error) { a.stop(err.Error()) }}
	sent := make(chan error, 1)
	go func() { sent <- snd.run(w.sendCtx) }()
	hbCtx, stopHeartbeat := context.WithCancel(w.sendCtx)
	defer stopHeartbeat()
	interval := time.Duration(cmp.Or(a.job.GetExecutionConfig().GetHeartbeatIntervalSeconds(), 30)) * time.Second
	go a.heartbeat(hbCtx, interval)

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
		outcome = "left_for_retry"
	}
	w.metrics.attemptDone(context.Background(), outcome, a.out.Stats())
	switch {
	case lost:
		a.log.Warn("job stopped: its lease was lost", "reason", a.stopReason())
	case retry:
		// Send what the command printed, but no result: the lease expires
		// and another worker runs the job again.
		a.ob.Seal()
	default:
		if err := a.ob.Finish(res); err != nil {
			a.log.Error("cannot record the job's result", "error", err)
		}
	}
	err := <-sent
	switch {
	case err == nil && !lost && !retry:
		a.log.Info("job finished", "exit_code", res.GetExitCode(), "error", res.GetError())
	case errors.Is(err, errLeaseLost) || lost:
	case err != nil:
		a.log.Warn("job output left in the spool directory", "dir", a.ob.Dir(), "error", err)
		_ = a.ob.Close()
	}
}

func commandText(j *spoolv1.Job) string {
	_, text := command(j.GetParams())
	return text
}
