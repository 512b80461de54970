// Command bench measures spool against its performance goals and against
// baselines in the same run, then what output batching buys, batched (the
// server's defaults) against unbatched (max_batch_size=1), on the embedded
// SQLite store, then the SQLite store against PostgreSQL, and prints the
// ratios:
//
//	go run ./bench                    # everything: about six minutes on 2 CPUs
//	go run ./bench -goals             # the goals table alone (what `make bench` runs)
//	go run ./bench -quick             # smaller, for a smoke test
//	go run ./bench -postgres URL      # compare with the PostgreSQL server at URL
//	go run ./bench -postgres ''       # SQLite only
//	go run ./bench -consumer          # the Kafka consumer alone: batches against one message at a time
//	go run ./bench -ingest            # logs from elsewhere alone: Firehose deliveries of 10 log streams at once
//
// Batching: stored items per 1,000 lines, items read to replay lines
// 9,000-10,000, end-to-end lines/s with 100 concurrent jobs, and live
// latency (a line written by the process until a following client has it)
// at 10 and 10,000 lines/s. Stores: the queue alone (enqueue, lease and
// complete through the API, nothing run), ingest lines/s with 100 jobs, and
// live latency through the same server and, on PostgreSQL, through another
// server on the same database.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/demo"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve":
			serve(os.Args[2:])
			return
		}
	}
	quick := flag.Bool("quick", false, "smaller runs (a smoke test, not figures to quote)")
	pgURL := flag.String("postgres", defaultPostgres(), "PostgreSQL server to compare with (a database is created on it for the run); empty: SQLite only")
	queueOnly := flag.Bool("queue", false, "measure only the queue alone, on each store (with -cpuprofile: where its time goes)")
	scatterOnly := flag.Bool("scatter", false, "measure only a scatter (start and run), on each store")
	consumerOnly := flag.Bool("consumer", false, "measure only the Kafka consumer: batches against one message at a time (kfake in process)")
	noopOnly := flag.Bool("noop", false, "measure only no-op jobs (`true`, 20 slots) against the rate this machine starts processes")
	goalsOnly := flag.Bool("goals", false, "measure only the goals table: every performance goal, spool's figure and its baseline")
	goal := flag.String("goal", "", "with -goals: only these rows: lines, many, queue, noop, live, read, catchup, delayed (jobs due in one second queued after it), compression (bytes stored per output byte, zstd and s2), river (PostgreSQL beside River) or s3items (a scatter over a 5,000,000-line item file in S3 on moto_server: the server's memory growth; only when asked for)")
	ingestOnly := flag.Bool("ingest", false, "measure only log ingestion: Firehose deliveries of 10 log streams at once, batched against unbatched")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (bench and servers share the process) to this file")
	flag.BoolVar(&onlySpool, "only-spool", false, "with -goals -goal lines or many: spool's figures alone, without the baselines (for profiling and comparing builds)")
	flag.StringVar(&serverProfiles, "server-profiles", "", "with -goals: each server process writes its CPU profile (server-1.pprof, ... in the order they start) and its allocations and heap (server-1.mem.pprof, ...) to this directory")
	memProfile := flag.String("memprofile", "", "write the allocations and heap of the whole run (bench and servers share the process) to this file")
	docs := flag.String("docs", "", "write the tables this run measured into the pages of this directory that have a place for them (docs: what make bench does)")
	flag.Parse()
	defer profile(*cpuProfile, *memProfile)()
	if *docs != "" {
		// Deferred, so that every mode's tables are written once it has
		// measured them all; a failed run exits before and writes nothing.
		defer func() {
			if err := writeDocs(*docs, time.Now()); err != nil {
				fail(err)
			}
		}()
	}
	if *consumerOnly {
		runConsumerBench()
		return
	}
	sz := sizes{jobs: 100, linesPerJob: 1000, slowSeconds: 10, fastSeconds: 3, queueJobs: 5000, noopJobs: 1000, scatterItems: 100_000, scatterBatch: 100, ingestDeliveries: 10,
		goalFewJobs: 20, goalManyJobs: 1000, goalManyBaseline: 100, goalLines: 10_000, riverJobs: 50_000, delayedJobs: 10_000, s3Lines: 5_000_000}
	if *quick {
		sz = sizes{jobs: 20, linesPerJob: 200, slowSeconds: 2, fastSeconds: 1, queueJobs: 500, noopJobs: 200, scatterItems: 5000, scatterBatch: 100, ingestDeliveries: 2,
			goalFewJobs: 4, goalManyJobs: 40, goalManyBaseline: 10, goalLines: 2000, riverJobs: 2000, delayedJobs: 1000, s3Lines: 200_000}
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "spool-bench-job-*")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	job, err := buildEmitter(ctx, tmp)
	if err != nil {
		fail(err)
	}
	fmt.Printf("spool bench: %d CPUs, %s, embedded SQLite store; batched = the defaults (50 lines, 256 KiB, 2 s), unbatched = max_batch_size 1\n\n",
		runtime.NumCPU(), runtime.Version())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *queueOnly {
		if err := compareQueues(ctx, *pgURL, sz, log); err != nil {
			fail(err)
		}
		return
	}
	if *scatterOnly {
		if err := compareScatters(ctx, *pgURL, sz, log); err != nil {
			fail(err)
		}
		return
	}
	if *ingestOnly {
		if err := compareIngest(ctx, sz, log); err != nil {
			fail(err)
		}
		return
	}
	if *goalsOnly {
		if err := runGoals(ctx, job, sz, *goal, *pgURL, log); err != nil {
			fail(err)
		}
		return
	}
	if *noopOnly {
		if err := compareNoop(ctx, sz.noopJobs, log); err != nil {
			fail(err)
		}
		return
	}
	if err := runGoals(ctx, job, sz, "", *pgURL, log); err != nil {
		fail(err)
	}
	var results [2]result
	for i, batched := range []bool{true, false} {
		cl, err := demo.StartLocal(ctx, demo.LocalOptions{
			Concurrency: sz.jobs,
			Log:         log,
			Configure: func(c *config.Config) {
				if !batched {
					c.Execution.Batching.MaxBatchSize = 1
				}
			},
		})
		if err != nil {
			fail(err)
		}
		r, err := measure(ctx, cl, job, sz)
		_ = cl.Stop()
		if err != nil {
			fail(err)
		}
		results[i] = r
	}
	printTable(results[0], results[1], sz)
	if *pgURL != "" {
		if err := compareStores(ctx, job, *pgURL, sz, log); err != nil {
			fail(err)
		}
	}
	if err := compareScatters(ctx, *pgURL, sz, log); err != nil {
		fail(err)
	}
	if err := compareIngest(ctx, sz, log); err != nil {
		fail(err)
	}
}

// defaultPostgres is the server the comparisons use unless -postgres says:
// the tests' (SPOOL_TEST_POSTGRES_URL, or the one scripts/test-postgres.sh
// found or started, which make bench runs first), or the one on
// 127.0.0.1:5432.
func defaultPostgres() string {
	if u := os.Getenv("SPOOL_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	if b, err := os.ReadFile(".test-servers/postgres.url"); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b))
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// profile starts a CPU profile written to cpu and records allocations for
// a memory profile written to mem (either "": none), until the returned
// function runs.
func profile(cpu, mem string) func() {
	stopCPU := func() {}
	if cpu != "" {
		var err error
		if stopCPU, err = startCPUProfile(cpu); err != nil {
			fail(err)
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() {
		stopCPU()
		if mem != "" {
			writeMemProfile(mem)
		}
	}
}

// startCPUProfile profiles the process until the returned function runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: cpu profile:", err)
		}
	}, nil
}

// writeMemProfile writes the allocations and heap profile to path: `go
// tool pprof -sample_index alloc_space` shows where the run allocated,
// inuse_space what it held at the end.
func writeMemProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		runtime.GC()
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: memory profile:", err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

type sizes struct {
	jobs, linesPerJob        int
	slowSeconds, fastSeconds int
	queueJobs                int
	noopJobs                 int
	// A scatter of scatterItems items in batches of scatterBatch.
	scatterItems, scatterBatch int
	// Firehose deliveries of 1,000 events sent per log stream.
	ingestDeliveries int
	// The goals table: goalFewJobs and goalManyJobs jobs of goalLines
	// lines; the per-line baseline of the second runs goalManyBaseline.
	goalFewJobs, goalManyJobs, goalManyBaseline, goalLines int
	// Jobs enqueued first, then worked, by spool and River on PostgreSQL.
	riverJobs int
	// delayedJobs are the jobs due in the same second of the delayed row.
	delayedJobs int
	// s3Lines are the lines of the item file of the s3items row.
	s3Lines int
}

// result is one configuration's figures.
type result struct {
	itemsPer1000   float64
	replayItems    int
	linesPerSecond float64
	slow, fast     latency
	// fastItemsPer1000: stored items per 1,000 lines of the job followed
	// at 10,000 lines/s, which flushes at the watched interval.
	fastItemsPer1000 float64
}

func measure(ctx context.Context, cl *demo.Local, job emitter, sz sizes) (result, error) {
	var r result
	var err error
	if r.itemsPer1000, r.replayItems, err = storage(ctx, cl, job); err != nil {
		return r, fmt.Errorf("storage: %w", err)
	}
	if r.linesPerSecond, err = throughput(ctx, cl, job, sz.jobs, sz.linesPerJob); err != nil {
		return r, fmt.Errorf("throughput: %w", err)
	}
	if r.slow, err = liveLatency(ctx, cl.Client, cl.Client, job, 10, 10*sz.slowSeconds); err != nil {
		return r, fmt.Errorf("latency at 10 lines/s: %w", err)
	}
	if r.fast, err = liveLatency(ctx, cl.Client, cl.Client, job, 10000, 10000*sz.fastSeconds); err != nil {
		return r, fmt.Errorf("latency at 10,000 lines/s: %w", err)
	}
	items, err := countItems(ctx, cl.Client, r.fast.jobID)
	if err != nil {
		return r, fmt.Errorf("latency at 10,000 lines/s: %w", err)
	}
	r.fastItemsPer1000 = float64(items) * 1000 / float64(10000*sz.fastSeconds)
	return r, nil
}

func printTable(b, u result, sz sizes) {
	row := newTable("batching", runCommand(), figureWidths, "", "batched", "unbatched", "batched vs unbatched").row
	row("stored items per 1,000 lines", fmt.Sprintf("%.1f", b.itemsPer1000), fmt.Sprintf("%.1f", u.itemsPer1000),
		fmt.Sprintf("%.1fx fewer writes", u.itemsPer1000/b.itemsPer1000))
	row("items read to replay lines 9,000-10,000", fmt.Sprint(b.replayItems), fmt.Sprint(u.replayItems),
		fmt.Sprintf("%.1fx fewer reads", float64(u.replayItems)/float64(b.replayItems)))
	row(fmt.Sprintf("lines/s end to end, %d jobs x %d lines", sz.jobs, sz.linesPerJob), fmt.Sprintf("%.0f", b.linesPerSecond),
		fmt.Sprintf("%.0f", u.linesPerSecond), fmt.Sprintf("%.1fx the throughput", b.linesPerSecond/u.linesPerSecond))
	row("live latency p50 / p99 at 10 lines/s", b.slow.String(), u.slow.String(),
		fmt.Sprintf("(a watched job flushes every %s)", batcher.DefaultWatchedInterval))
	row("live latency p50 / p99 at 10,000 lines/s", b.fast.String(), u.fast.String(), "")
	row("items per 1,000 lines, followed at 10,000/s", fmt.Sprintf("%.1f", b.fastItemsPer1000),
		fmt.Sprintf("%.1f", u.fastItemsPer1000), fmt.Sprintf("%.0fx fewer writes than lines", 1000/b.fastItemsPer1000))
}

// figureWidths are the terminal's columns of the tables that compare two
// configurations: the measure, the two figures, and what they say.
var figureWidths = []int{-44, 14, 16}

// runCommand is how a reader runs this run again: what a table in docs/
// names beside itself.
func runCommand() string {
	if len(os.Args) < 2 {
		return "go run ./bench"
	}
	return "go run ./bench " + strings.Join(os.Args[1:], " ")
}

// sinceStart is a small helper for timings.
func sinceStart(t time.Time) float64 { return time.Since(t).Seconds() }
