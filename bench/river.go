package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/wire"
)

// The peer spool's queue is held to: River (github.com/riverqueue/river),
// run by bench/river, a module of its own, on the same PostgreSQL server in
// the same run.
const (
	riverDir      = "bench/river"
	riverWorkers  = 100
	riverCooldown = 2 * time.Millisecond
	// steadyClients insert one job a call each, for steadyFor, while the
	// jobs are worked.
	steadyClients = 32
	steadyFor     = 10 * time.Second
)

// riverResult is a line of JSON bench/river prints for a workload.
type riverResult struct {
	Workload        string        `json:"workload"`
	JobsPerSecond   float64       `json:"jobs_per_second"`
	InsertPerSecond float64       `json:"insert_per_second"`
	InsertP50       time.Duration `json:"insert_p50"`
	InsertP99       time.Duration `json:"insert_p99"`
	CPUPerJob       time.Duration `json:"cpu_per_job"`
	// Mark starts or ends the phase whose CPU is measured from outside
	// (a line of its own).
	Mark string `json:"mark"`
	// cpu is where a job's CPU went while River worked them (insert-then-work).
	cpu string
}

// runRiver runs bench/river on the PostgreSQL server at pgURL and returns
// its figures by workload. It reads River's lines as they come, to measure
// the database's CPU between the marks River prints around its work.
func runRiver(ctx context.Context, pgURL string, jobs int) (map[string]riverResult, error) {
	if _, err := os.Stat(riverDir); err != nil {
		return nil, fmt.Errorf("the River bench is in %s: run the bench from the repository's root (%w)", riverDir, err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", ".", "-postgres", pgURL, "-jobs", strconv.Itoa(jobs),
		"-workers", strconv.Itoa(riverWorkers), "-cooldown", riverCooldown.String(),
		"-inserters", strconv.Itoa(steadyClients), "-steady", steadyFor.String())
	cmd.Dir = riverDir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("the River bench (%s): %w", riverDir, err)
	}
	res := map[string]riverResult{}
	var (
		out             bytes.Buffer
		workStart, work cpuUse
	)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		var r riverResult
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch {
		case r.Mark == "work-start":
			workStart = cpuNow(0, pgURL)
		case r.Mark == "work-end":
			work = cpuNow(0, pgURL)
		case r.Workload != "":
			if r.Workload == "insert-then-work" && r.CPUPerJob > 0 {
				if db := workStart.perJob(work, jobs, "", ""); db != "" {
					r.cpu = fmt.Sprintf("River %s us, %s", thousands(float64(r.CPUPerJob.Microseconds())), db)
				}
			}
			res[r.Workload] = r
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("the River bench (%s): %w", riverDir, err)
	}
	for _, w := range []string{"insert-then-work", "steady", "floor"} {
		if _, ok := res[w]; !ok {
			return nil, fmt.Errorf("the River bench printed no %s figures:\n%s", w, out.String())
		}
	}
	return res, nil
}

// How spool's side of the comparison works the queue: like a worker with
// as many slots as River has workers, workLoops loops each lease up to
// leaseSize jobs a call and complete them together; bulk enqueues go in
// calls of bulkSize jobs from bulkClients callers, as River's InsertMany
// takes batches.
const (
	workLoops   = 2
	leaseSize   = riverWorkers / workLoops
	bulkClients = 4
	bulkSize    = 1000
)

// riverGoal measures spool's queue on PostgreSQL beside River's, on a
// database of its own on the same server, nothing run: jobs inserted first
// and then worked, and a steady load of one job an enqueue call; then the
// first of those on the embedded SQLite store, which should be no slower.
func riverGoal(ctx context.Context, pgURL string, jobs int, log *slog.Logger) ([]goalRow, error) {
	river, err := runRiver(ctx, pgURL, jobs)
	if err != nil {
		return nil, err
	}
	db, drop, err := benchDatabase(ctx, pgURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w (start one, or give -postgres URL)", pgURL, err)
	}
	defer drop()
	var first, onSQLite firstRun
	var steady queueRun
	err = onServer(ctx, db, log, func(r *remote) (err error) {
		if first, err = enqueueThenWork(ctx, r, jobs); err != nil {
			return err
		}
		steady, err = steadyLoad(ctx, r)
		return err
	})
	if err == nil {
		err = onServer(ctx, "", log, func(r *remote) (err error) {
			onSQLite, err = enqueueThenWork(ctx, r, jobs)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	rf, rs := river["insert-then-work"], river["steady"]
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2fx River", a/b) }
	return keepFigures([]goalRow{{
		measure:  fmt.Sprintf("PostgreSQL: %s jobs enqueued, then worked", thousands(float64(jobs))),
		spool:    thousands(first.perSecond) + " jobs/s",
		baseline: fmt.Sprintf("River (%d workers): %s (%s)", riverWorkers, thousands(rf.JobsPerSecond), ratio(first.perSecond, rf.JobsPerSecond)),
		goal:     ">= River",
		met:      first.perSecond >= rf.JobsPerSecond,
	}, {
		measure:  "  CPU a job while worked, by process",
		spool:    first.cpu,
		baseline: rf.cpu,
		info:     true,
	}, {
		measure:  "  the same on the embedded SQLite store",
		spool:    thousands(onSQLite.perSecond) + " jobs/s",
		baseline: "spool on PostgreSQL: " + thousands(first.perSecond),
		goal:     ">= PostgreSQL's",
		met:      onSQLite.perSecond >= first.perSecond,
	}, {
		measure: "  CPU a job while worked on SQLite, by process",
		spool:   onSQLite.cpu,
		info:    true,
	}, {
		measure:  fmt.Sprintf("PostgreSQL: %d clients, one job an enqueue", steadyClients),
		spool:    thousands(steady.perSecond) + " jobs/s",
		baseline: fmt.Sprintf("River Insert: %s (%s)", thousands(rs.JobsPerSecond), ratio(steady.perSecond, rs.JobsPerSecond)),
		goal:     ">= River",
		met:      steady.perSecond >= rs.JobsPerSecond,
	}, {
		measure:  "  enqueue p50 / p99 under that load",
		spool:    latencyOf(steady.submits).String(),
		baseline: "River Insert: " + latency{p50: rs.InsertP50, p99: rs.InsertP99}.String(),
		goal:     "p99 <= River's",
		met:      latencyOf(steady.submits).p99 <= rs.InsertP99,
	}, {
		measure:  fmt.Sprintf("PostgreSQL: bulk enqueue, calls of %s", thousands(bulkSize)),
		spool:    thousands(first.enqueuePerSecond) + " jobs/s",
		baseline: fmt.Sprintf("River InsertMany: %s (%s)", thousands(rf.InsertPerSecond), ratio(first.enqueuePerSecond, rf.InsertPerSecond)),
		goal:     fmt.Sprintf(">= %s and half River's", thousands(goalBulkPerSecond)),
		met:      first.enqueuePerSecond >= goalBulkPerSecond && first.enqueuePerSecond >= rf.InsertPerSecond/2,
	}, {
		measure: "  the same on the embedded SQLite store",
		spool:   thousands(onSQLite.enqueuePerSecond) + " jobs/s",
		goal:    ">= " + thousands(goalBulkPerSecond),
		met:     onSQLite.enqueuePerSecond >= goalBulkPerSecond,
	}, {
		measure:  fmt.Sprintf("  PostgreSQL itself: single-row INSERT commits, %d clients", steadyClients),
		spool:    "",
		baseline: thousands(river["floor"].JobsPerSecond) + " commits/s",
		info:     true,
	}}), nil
}

// goalBulkPerSecond is the bulk enqueue goal through the API.
const goalBulkPerSecond = 20_000

// onServer runs fn against a server process of its own on the PostgreSQL
// database at postgres ("": the embedded SQLite store), then stops it.
func onServer(ctx context.Context, postgres string, log *slog.Logger, fn func(r *remote) error) error {
	r, err := startRemoteOn(ctx, postgres, 0, false, log)
	if err != nil {
		return err
	}
	err = fn(r)
	if stopErr := r.stop(); err == nil {
		err = stopErr
	}
	return err
}

// latencyOf is the p50 and p99 of d.
func latencyOf(d []time.Duration) latency {
	p50, p99 := percentiles(d)
	return latency{p50: p50, p99: p99}
}

// firstRun is jobs enqueued first, in bulk, then leased and completed;
// cpu says where the CPU went while they were worked.
type firstRun struct {
	enqueuePerSecond, perSecond float64
	cpu                         string
}

// enqueueThenWork enqueues jobs through r's API in bulk calls, then works
// them with workLoops loops leasing up to leaseSize at a time and
// completing those together.
func enqueueThenWork(ctx context.Context, r *remote, jobs int) (firstRun, error) {
	queue := "bench-queue-" + randomHex()
	bulk, err := batchSubmit(ctx, r.url, r.key, queue, bulkSize)
	if err != nil {
		return firstRun{}, err
	}
	w, err := newPipelinedWork(ctx, r.url, r.key, queue)
	if err != nil {
		return firstRun{}, err
	}
	var first firstRun
	calls := (jobs + bulkSize - 1) / bulkSize
	start := time.Now()
	if err := together(bulkClients, calls, bulk); err != nil {
		return first, err
	}
	first.enqueuePerSecond = float64(calls*bulkSize) / sinceStart(start)
	start = time.Now()
	var ended atomic.Bool
	ended.Store(true)
	var total atomic.Int64
	total.Store(int64(calls * bulkSize))
	cpu := cpuNow(r.cmd.Process.Pid, r.postgres)
	if err := w.run(&total, &ended); err != nil {
		return first, err
	}
	first.perSecond = float64(calls*bulkSize) / sinceStart(start)
	first.cpu = cpu.perJob(cpuNow(r.cmd.Process.Pid, r.postgres), calls*bulkSize, "worker loops", "")
	return first, nil
}

// steadyLoad runs steadyClients callers enqueueing one job a call for
// steadyFor while workLoops loops work them, until every job is done.
func steadyLoad(ctx context.Context, r *remote) (queueRun, error) {
	queue := "bench-queue-" + randomHex()
	submit, _, err := queueCallsOn(ctx, r.url, r.key, queue, leaseSize)
	if err != nil {
		return queueRun{}, err
	}
	w, err := newPipelinedWork(ctx, r.url, r.key, queue)
	if err != nil {
		return queueRun{}, err
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		took    []time.Duration
		sent    atomic.Int64
		failure error
	)
	start := time.Now()
	stop := start.Add(steadyFor)
	for range steadyClients {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(stop) {
				t := time.Now()
				if err := submit(); err != nil {
					mu.Lock()
					failure = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
				sent.Add(1)
			}
			mu.Lock()
			took = append(took, mine...)
			mu.Unlock()
		})
	}
	// The workers run while the clients enqueue, and until every job
	// enqueued is done.
	var ended atomic.Bool
	go func() {
		wg.Wait()
		ended.Store(true)
	}()
	if err := w.run(&sent, &ended); err != nil {
		return queueRun{}, err
	}
	if failure != nil {
		return queueRun{}, failure
	}
	return queueRun{perSecond: float64(sent.Load()) / sinceStart(start), submits: took}, nil
}

// pipelinedWork works a queue as a worker with riverWorkers slots running
// no-op jobs does: workLoops loops each lease up to leaseSize jobs, hand
// them to be completed together and lease again at once, while the
// completion is on its way (one at a time a loop: a worker's completions
// go in batches, its slots free as soon as the jobs end).
type pipelinedWork struct {
	ctx   context.Context
	rpc   spoolv1connect.JobServiceClient
	queue string
}

func newPipelinedWork(ctx context.Context, url, key, queue string) (*pipelinedWork, error) {
	rpc, err := wire.Dial(url, wire.Options{APIKey: key})
	if err != nil {
		return nil, err
	}
	return &pipelinedWork{ctx: ctx, rpc: rpc, queue: queue}, nil
}

// run works until sending has ended and as many jobs as were sent are
// completed.
func (w *pipelinedWork) run(sent *atomic.Int64, ended *atomic.Bool) error {
	var (
		done atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, workLoops)
	)
	for i := range workLoops {
		wg.Go(func() { errs[i] = w.loop(sent, ended, &done) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *pipelinedWork) loop(sent *atomic.Int64, ended *atomic.Bool, done *atomic.Int64) error {
	completing := make(chan error, 1)
	completing <- nil // no completion on its way yet
	for !ended.Load() || done.Load() < sent.Load() {
		resp, err := w.rpc.DequeueJobs(w.ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: w.queue, MaxJobs: leaseSize, WaitSeconds: 1,
			VisibilityTimeoutSeconds: 60, WorkerId: "bench"}))
		if err != nil {
			return err
		}
		leases := resp.Msg.GetLeases()
		if err := <-completing; err != nil {
			return err
		}
		if len(leases) == 0 {
			completing <- nil
			continue
		}
		go func() {
			err := w.complete(leases)
			if err == nil {
				done.Add(int64(len(leases)))
			}
			completing <- err
		}()
	}
	return <-completing
}

// complete completes leases in one call.
func (w *pipelinedWork) complete(leases []*spoolv1.JobLease) error {
	req := &spoolv1.CompleteJobsRequest{Brief: true} // as a worker asks
	for _, l := range leases {
		req.Completions = append(req.Completions, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}})
	}
	resp, err := w.rpc.CompleteJobs(w.ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	for _, r := range resp.Msg.GetResults() {
		if r.GetErrorCode() != "" {
			return fmt.Errorf("completion refused: %s: %s", r.GetErrorCode(), r.GetErrorMessage())
		}
	}
	return nil
}

// together runs call n times from k goroutines.
func together(k, n int, call func() error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, k)
	)
	for i := range k {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call(); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
