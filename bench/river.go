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
}

// runRiver runs bench/river on the PostgreSQL server at pgURL and returns
// its figures by workload.
func runRiver(ctx context.Context, pgURL string, jobs int) (map[string]riverResult, error) {
	if _, err := os.Stat(riverDir); err != nil {
		return nil, fmt.Errorf("the River bench is in %s: run the bench from the repository's root (%w)", riverDir, err)
	}
	cmd := exec.CommandContext(ctx, "go", "run", ".", "-postgres", pgURL, "-jobs", strconv.Itoa(jobs),
		"-workers", strconv.Itoa(riverWorkers), "-cooldown", riverCooldown.String(),
		"-inserters", strconv.Itoa(steadyClients), "-steady", steadyFor.String())
	cmd.Dir = riverDir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the River bench (%s): %w", riverDir, err)
	}
	res := map[string]riverResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r riverResult
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Workload != "" {
			res[r.Workload] = r
		}
	}
	for _, w := range []string{"insert-then-work", "steady", "floor"} {
		if _, ok := res[w]; !ok {
			return nil, fmt.Errorf("the River bench printed no %s figures:\n%s", w, out)
		}
	}
	return res, nil
}

// riverGoal measures spool's queue on PostgreSQL beside River's, on a
// database of its own on the same server, nothing run: jobs inserted first
// and then worked, and a steady load of one job an enqueue call.
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
	r, err := startRemoteOn(ctx, db, 0, false, log)
	if err != nil {
		return nil, err
	}
	first, steady, err := spoolQueueOnPostgres(ctx, r, jobs)
	if stopErr := r.stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return nil, err
	}
	rf, rs := river["insert-then-work"], river["steady"]
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2fx River", a/b) }
	return []goalRow{{
		measure:  fmt.Sprintf("PostgreSQL: %s jobs enqueued, then worked", thousands(float64(jobs))),
		spool:    thousands(first.perSecond) + " jobs/s",
		baseline: fmt.Sprintf("River (%d workers): %s (%s)", riverWorkers, thousands(rf.JobsPerSecond), ratio(first.perSecond, rf.JobsPerSecond)),
		goal:     ">= River",
		met:      first.perSecond >= rf.JobsPerSecond,
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
		measure:  "  bulk enqueue",
		spool:    fmt.Sprintf("%s jobs/s, one a call", thousands(first.enqueuePerSecond)),
		baseline: "River InsertMany: " + thousands(rf.InsertPerSecond),
		goal:     ">= half River's",
		met:      first.enqueuePerSecond >= rf.InsertPerSecond/2,
	}, {
		measure:  fmt.Sprintf("  PostgreSQL itself: single-row INSERT commits, %d clients", steadyClients),
		spool:    "",
		baseline: thousands(river["floor"].JobsPerSecond) + " commits/s",
		info:     true,
	}}, nil
}

// latencyOf is the p50 and p99 of d.
func latencyOf(d []time.Duration) latency {
	p50, p99 := percentiles(d)
	return latency{p50: p50, p99: p99}
}

// firstRun is jobs enqueued first (as fast as queueClients callers can),
// then leased and completed.
type firstRun struct {
	enqueuePerSecond, perSecond float64
}

// spoolQueueOnPostgres runs both workloads through r's API: jobs enqueued
// by queueClients callers and then worked by queueClients loops leasing ten
// at a time and completing those together; then steadyClients callers
// enqueueing one job a call for steadyFor while the loops work them.
func spoolQueueOnPostgres(ctx context.Context, r *remote, jobs int) (firstRun, queueRun, error) {
	submit, take, err := queueCalls(ctx, r.url, r.key, 10)
	if err != nil {
		return firstRun{}, queueRun{}, err
	}
	var first firstRun
	start := time.Now()
	if err := together(queueClients, jobs, submit); err != nil {
		return first, queueRun{}, err
	}
	first.enqueuePerSecond = float64(jobs) / sinceStart(start)
	start = time.Now()
	if err := work(queueClients, int64(jobs), take); err != nil {
		return first, queueRun{}, err
	}
	first.perSecond = float64(jobs) / sinceStart(start)

	submit, take, err = queueCalls(ctx, r.url, r.key, 10)
	if err != nil {
		return first, queueRun{}, err
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		took    []time.Duration
		sent    atomic.Int64
		failure error
	)
	start = time.Now()
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
	if err := workUntil(queueClients, &sent, &ended, take); err != nil {
		return first, queueRun{}, err
	}
	if failure != nil {
		return first, queueRun{}, failure
	}
	return first, queueRun{perSecond: float64(sent.Load()) / sinceStart(start), submits: took}, nil
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

// work runs take from k goroutines until n jobs are done.
func work(k int, n int64, take func() (int, error)) error {
	var total atomic.Int64
	total.Store(n)
	var ended atomic.Bool
	ended.Store(true)
	return workUntil(k, &total, &ended, take)
}

// workUntil runs take from k goroutines until sending has ended and as
// many jobs as were sent are done.
func workUntil(k int, sent *atomic.Int64, ended *atomic.Bool, take func() (int, error)) error {
	var (
		done atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, k)
	)
	for i := range k {
		wg.Go(func() {
			for !ended.Load() || done.Load() < sent.Load() {
				n, err := take()
				if err != nil {
					errs[i] = err
					return
				}
				done.Add(int64(n))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
