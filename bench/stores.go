package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/demo"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends"
	"github.com/spool-run/spool/internal/wire"
)

// storeResult is one store's figures.
type storeResult struct {
	queueJobsPerSecond float64
	storeJobsPerSecond float64 // the queue on the store itself, without the API
	linesPerSecond     float64
	same, other        latency
	hasOther           bool
}

// compareStores measures the embedded SQLite store against PostgreSQL (a
// database created for the run on the server at pgURL, dropped after).
func compareStores(ctx context.Context, job emitter, pgURL string, sz sizes, log *slog.Logger) error {
	var results []storeResult
	err := eachStore(ctx, pgURL, sz, log, func(pg bool, alone float64, cl *demo.Local) error {
		r, err := measureStore(ctx, cl, job, sz, pg, log)
		r.storeJobsPerSecond = alone
		results = append(results, r)
		return err
	})
	if err != nil {
		return err
	}
	s, p := results[0], results[1]
	fmt.Println()
	row := newTable("stores", runCommand(), figureWidths, "", "SQLite", "PostgreSQL", "PostgreSQL vs SQLite").row
	row(fmt.Sprintf("queue alone: jobs/s, %d jobs", sz.queueJobs), fmt.Sprintf("%.0f", s.queueJobsPerSecond), fmt.Sprintf("%.0f", p.queueJobsPerSecond),
		fmt.Sprintf("%.2fx (goal on PostgreSQL: 2,000 jobs/s)", p.queueJobsPerSecond/s.queueJobsPerSecond))
	row("  the same on the store itself, no API", fmt.Sprintf("%.0f", s.storeJobsPerSecond), fmt.Sprintf("%.0f", p.storeJobsPerSecond),
		fmt.Sprintf("the store's own code, no API: the API reaches %.0f%% (SQLite) and %.0f%% (PostgreSQL) of it",
			100*s.queueJobsPerSecond/s.storeJobsPerSecond, 100*p.queueJobsPerSecond/p.storeJobsPerSecond))
	row(fmt.Sprintf("ingest lines/s, %d jobs x %d lines", sz.jobs, sz.linesPerJob), fmt.Sprintf("%.0f", s.linesPerSecond), fmt.Sprintf("%.0f", p.linesPerSecond),
		fmt.Sprintf("%.2fx", p.linesPerSecond/s.linesPerSecond))
	row("live p50 / p99, 10 lines/s, same server", s.same.String(), p.same.String(), "")
	row("live p50 / p99, 10 lines/s, another server", "(one server)", p.other.String(), "worker on server A, follower on server B")
	return nil
}

// compareQueues measures only the queue alone on SQLite and, when pgURL is
// not empty, on PostgreSQL: the quick loop for work on the queue's path.
func compareQueues(ctx context.Context, pgURL string, sz sizes, log *slog.Logger) error {
	t := newTable("queue", runCommand(), []int{-12, 26, 26}, "store", fmt.Sprintf("jobs/s through the API (%d jobs)", sz.queueJobs), "jobs/s on the store itself", "the API's share")
	return eachStore(ctx, pgURL, sz, log, func(pg bool, alone float64, cl *demo.Local) error {
		perSecond, err := queueAlone(ctx, cl, sz.queueJobs)
		if err != nil {
			return err
		}
		t.row(storeName(pg), fmt.Sprintf("%.0f", perSecond), fmt.Sprintf("%.0f", alone), fmt.Sprintf("%.0f%%", 100*perSecond/alone))
		return nil
	})
}

// storeName is what a table calls the store a run measured.
func storeName(pg bool) string {
	if pg {
		return "PostgreSQL"
	}
	return "SQLite"
}

// eachStore measures SQLite and, when pgURL is not empty, PostgreSQL (a
// database created for the run on the server at pgURL, dropped after):
// first the queue on the store itself, then measure with a server and a
// worker on the store.
func eachStore(ctx context.Context, pgURL string, sz sizes, log *slog.Logger, measure func(pg bool, alone float64, cl *demo.Local) error) error {
	stores := []bool{false}
	var db string
	if pgURL != "" {
		url, drop, err := benchDatabase(ctx, pgURL)
		if err != nil {
			return fmt.Errorf("PostgreSQL at %s: %w (start one, or give -postgres URL)", pgURL, err)
		}
		defer drop()
		db, stores = url, append(stores, true)
	}
	for _, pg := range stores {
		alone, err := storeAlone(ctx, pg, db, sz.queueJobs, log)
		if err != nil {
			return fmt.Errorf("the store alone: %w", err)
		}
		cl, err := startStore(ctx, pg, db, sz, log)
		if err != nil {
			return err
		}
		err = measure(pg, alone, cl)
		if stopErr := cl.Stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startStore starts a server and worker on the embedded SQLite store or,
// with pg, on the PostgreSQL database at db.
func startStore(ctx context.Context, pg bool, db string, sz sizes, log *slog.Logger) (*demo.Local, error) {
	return demo.StartLocal(ctx, demo.LocalOptions{Concurrency: sz.jobs, Log: log, Configure: storeConfig(pg, db)})
}

// storeConfig sets a configuration's store: SQLite (the default) or, with
// pg, the PostgreSQL database at db.
func storeConfig(pg bool, db string) func(*config.Config) {
	return func(c *config.Config) {
		if pg {
			c.Store.Type = "postgres"
			c.Store.Postgres.URL = db
			c.Server.TokenKey = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="
		}
	}
}

func measureStore(ctx context.Context, cl *demo.Local, job emitter, sz sizes, pg bool, log *slog.Logger) (storeResult, error) {
	var r storeResult
	var err error
	if r.queueJobsPerSecond, err = queueAlone(ctx, cl, sz.queueJobs); err != nil {
		return r, fmt.Errorf("queue alone: %w", err)
	}
	if r.linesPerSecond, err = throughput(ctx, cl, job, sz.jobs, sz.linesPerJob); err != nil {
		return r, fmt.Errorf("ingest: %w", err)
	}
	if r.same, err = liveLatency(ctx, cl.Client, cl.Client, job, 10, 10*sz.slowSeconds); err != nil {
		return r, fmt.Errorf("latency through the same server: %w", err)
	}
	if !pg {
		return r, nil
	}
	// A second server on the same database; the follower talks to it.
	cfg := *cl.Config
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = filepath.Join(cl.Dir, "server-b")
	b, err := assembly.Start(ctx, &cfg, assembly.Options{Log: log})
	if err != nil {
		return r, fmt.Errorf("second server: %w", err)
	}
	defer b.Stop(context.Background())
	bc, err := client.New(client.Config{URL: b.URL(), APIKey: cfg.Auth.AdminKey})
	if err != nil {
		return r, err
	}
	if r.other, err = liveLatency(ctx, cl.Client, bc, job, 10, 10*sz.slowSeconds); err != nil {
		return r, fmt.Errorf("latency through another server: %w", err)
	}
	r.hasOther = true
	return r, nil
}

// queueClients is how many submitters, and how many lease-and-complete
// loops, the queue measurements run at once.
const queueClients = 16

// queueRun is what runQueue measured: jobs/s over the whole, and how
// long each submit took while leases and completions went on beside it.
type queueRun struct {
	perSecond float64
	submits   []time.Duration
}

// runQueue enqueues n jobs with submit and leases and completes them with
// take (which returns how many it completed), each from queueClients
// goroutines at once.
func runQueue(n int, submit func() error, take func() (int, error)) (queueRun, error) {
	start := time.Now()
	var submitted, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2*queueClients)
	took := make([][]time.Duration, queueClients)
	for i := range queueClients {
		wg.Go(func() {
			for submitted.Add(1) <= int64(n) {
				t := time.Now()
				if err := submit(); err != nil {
					errs <- err
					return
				}
				took[i] = append(took[i], time.Since(t))
			}
		})
		wg.Go(func() {
			for done.Load() < int64(n) {
				k, err := take()
				if err != nil {
					errs <- err
					return
				}
				done.Add(int64(k))
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return queueRun{}, err
	}
	return queueRun{perSecond: float64(n) / sinceStart(start), submits: slices.Concat(took...)}, nil
}

// queueAlone enqueues n jobs, then leases (ten at a time) and completes
// them, all through the API with nothing run, and returns jobs/s: the
// queue's own cost, apart from starting processes.
func queueAlone(ctx context.Context, cl *demo.Local, n int) (float64, error) {
	r, err := queueThrough(ctx, cl.Server.URL(), cl.Config.Auth.AdminKey, n, 10)
	return r.perSecond, err
}

// queueThrough is queueAlone on the server at url, leasing up to maxJobs
// jobs a call and completing those of a call together (CompleteJobs), or,
// with maxJobs 1, one job a call each way.
func queueThrough(ctx context.Context, url, key string, n, maxJobs int) (queueRun, error) {
	submit, take, err := queueCalls(ctx, url, key, maxJobs)
	if err != nil {
		return queueRun{}, err
	}
	return runQueue(n, submit, take)
}

// queueCalls are the calls of the queue alone on the server at url, on a
// queue of their own: submit enqueues a job that runs `true`; take leases
// up to maxJobs jobs and completes them (together, as a worker does, or
// one a call with maxJobs 1) and says how many.
func queueCalls(ctx context.Context, url, key string, maxJobs int) (submit func() error, take func() (int, error), err error) {
	return queueCallsOn(ctx, url, key, "bench-queue-"+randomHex(), maxJobs)
}

// queueCallsOn is queueCalls on the named queue.
func queueCallsOn(ctx context.Context, url, key, queue string, maxJobs int) (submit func() error, take func() (int, error), err error) {
	rpc, err := wire.Dial(url, wire.Options{APIKey: key})
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(client.Config{URL: url, APIKey: key})
	if err != nil {
		return nil, nil, err
	}
	return func() error {
			_, _, err := c.Submit(ctx, client.SubmitParams{Queue: queue, Argv: []string{"true"}})
			return err
		}, func() (int, error) {
			resp, err := rpc.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: queue, MaxJobs: int32(maxJobs), WaitSeconds: 1,
				VisibilityTimeoutSeconds: 60, WorkerId: "bench"}))
			if err != nil {
				return 0, err
			}
			leases := resp.Msg.GetLeases()
			if maxJobs == 1 {
				for _, l := range leases {
					if _, err := rpc.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(),
						Result: &spoolv1.JobResult{ExitCode: 0}})); err != nil {
						return 0, err
					}
				}
				return len(leases), nil
			}
			// Jobs leased together and ended together are completed
			// together, as a worker does.
			if len(leases) == 0 {
				return 0, nil
			}
			req := &spoolv1.CompleteJobsRequest{}
			for _, l := range leases {
				req.Completions = append(req.Completions, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}})
			}
			done, err := rpc.CompleteJobs(ctx, connect.NewRequest(req))
			if err != nil {
				return 0, err
			}
			for _, r := range done.Msg.GetResults() {
				if r.GetErrorCode() != "" {
					return 0, fmt.Errorf("completion refused: %s: %s", r.GetErrorCode(), r.GetErrorMessage())
				}
			}
			return len(leases), nil
		}, nil
}

// storeAlone is queueAlone on the store itself, opened as the server
// would open it, without the API (no HTTP, no keys, no tokens): the pace
// of the database on this machine, which the API can approach but not
// pass.
func storeAlone(ctx context.Context, pg bool, db string, n int, log *slog.Logger) (float64, error) {
	dir, err := os.MkdirTemp("", "spool-bench-store-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfg := config.Default()
	cfg.Server.DataDir = dir
	storeConfig(pg, db)(cfg)
	st, err := backends.Open(ctx, cfg, log)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	queue := "bench-store-" + randomHex()
	exec := cfg.ExecutionConfig()
	r, err := runQueue(n, func() error {
		_, _, err := st.Enqueue(ctx, store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}}, Execution: exec, MaxAttempts: 1})
		return err
	}, func() (int, error) {
		ls, err := st.Dequeue(ctx, store.DequeueRequest{Queue: queue, Max: 10, LeaseDuration: time.Minute, Wait: time.Second, WorkerID: "bench"})
		if err != nil {
			return 0, err
		}
		for _, l := range ls {
			if _, err := st.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
				return 0, err
			}
		}
		return len(ls), nil
	})
	return r.perSecond, err
}

func collect(ch <-chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// benchDatabase creates a database for the run on the server at admin and
// returns its URL and the function that drops it.
func benchDatabase(ctx context.Context, admin string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	name := "spool_bench_" + randomHex()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	cfg := conn.Config()
	url := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if cfg.Password != "" {
		url = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}
	return url, func() {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "bench: drop database:", err)
		}
		conn.Close(context.Background())
	}, nil
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// batchSubmit returns a call that enqueues size jobs running `true` on
// queue in one EnqueueJobs call, as a program submitting work in bulk does.
func batchSubmit(ctx context.Context, url, key, queue string, size int) (func() error, error) {
	rpc, err := wire.Dial(url, wire.Options{APIKey: key})
	if err != nil {
		return nil, err
	}
	req := &spoolv1.EnqueueJobsRequest{}
	for range size {
		req.Jobs = append(req.Jobs, &spoolv1.EnqueueJobRequest{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}}})
	}
	return func() error {
		resp, err := rpc.EnqueueJobs(ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		for _, r := range resp.Msg.GetResults() {
			if r.GetErrorCode() != "" {
				return fmt.Errorf("enqueue refused: %s: %s", r.GetErrorCode(), r.GetErrorMessage())
			}
		}
		return nil
	}, nil
}
