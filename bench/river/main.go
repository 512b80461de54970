// Command river measures River (github.com/riverqueue/river), the Go job
// queue on PostgreSQL, on the workloads spool's queue is compared with, on a
// database of its own on the PostgreSQL server spool's bench uses. It lives
// in a module of its own so that spool does not depend on River.
//
//	cd bench/river && go run . -postgres postgres://postgres@127.0.0.1:5432/postgres
//
// It prints a line of JSON a workload (for the spool bench to read) after a
// line a person reads.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noop is the job both queues run: nothing, so the queue is all that is
// measured.
type noop struct{}

func (noop) Kind() string { return "noop" }

func main() {
	pgURL := flag.String("postgres", defaultPostgres(), "PostgreSQL server; a database is created on it for the run and dropped after")
	jobs := flag.Int("jobs", 50_000, "jobs inserted first, then worked")
	batch := flag.Int("batch", 5_000, "jobs an InsertMany call inserts")
	workers := flag.Int("workers", 100, "River's MaxWorkers")
	cooldown := flag.Duration("cooldown", 2*time.Millisecond, "River's FetchCooldown")
	inserters := flag.Int("inserters", 32, "steady workload: clients each inserting one job a call while they are worked")
	steady := flag.Duration("steady", 10*time.Second, "how long the steady workload runs")
	flag.Parse()

	ctx := context.Background()
	url, drop, err := freshDatabase(ctx, *pgURL)
	if err != nil {
		fail(err)
	}
	defer drop()
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		fail(err)
	}
	// Enough connections for every inserter and River's own work, as spool's
	// server has (pgxpool's default is the number of CPUs).
	pc.MaxConns = int32(*inserters + 8)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		fail(err)
	}

	r := runner{pool: pool, workers: *workers, cooldown: *cooldown}
	if err := r.insertThenWork(ctx, *jobs, *batch); err != nil {
		fail(err)
	}
	if err := r.steady(ctx, *inserters, *steady); err != nil {
		fail(err)
	}
	if err := floor(ctx, pool, *inserters, *steady/2); err != nil {
		fail(err)
	}
}

// floor measures the database itself, as pgbench would: clients clients
// each committing single-row INSERTs for d. No queue commits faster than
// this on this server, one commit a job.
func floor(ctx context.Context, pool *pgxpool.Pool, clients int, d time.Duration) error {
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_floor (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return err
	}
	var (
		wg      sync.WaitGroup
		commits atomic.Int64
		errs    = make([]error, clients)
	)
	start := time.Now()
	stop := start.Add(d)
	for i := range clients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if _, err := pool.Exec(ctx, "INSERT INTO bench_floor DEFAULT VALUES"); err != nil {
					errs[i] = err
					return
				}
				commits.Add(1)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	res := result{Workload: "floor", JobsPerSecond: float64(commits.Load()) / time.Since(start).Seconds()}
	report(res, fmt.Sprintf("PostgreSQL itself: %d clients committing single-row INSERTs: %.0f commits/s", clients, res.JobsPerSecond))
	return nil
}

// result is one workload's figures, as the spool bench reads them.
type result struct {
	Workload      string  `json:"workload"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	// InsertPerSecond: the bulk insert's rate (insert-then-work only).
	InsertPerSecond float64 `json:"insert_per_second,omitempty"`
	// InsertP50 and InsertP99: one Insert call's latency (steady only).
	InsertP50 time.Duration `json:"insert_p50,omitempty"`
	InsertP99 time.Duration `json:"insert_p99,omitempty"`
	// CPUPerJob: this process's CPU a job while the jobs were worked
	// (insert-then-work only), which the spool bench shows beside the
	// database's, measured from outside between the marks.
	CPUPerJob time.Duration `json:"cpu_per_job,omitempty"`
}

// mark prints a line that tells the spool bench, reading as the lines
// come, where a phase it measures from outside starts or ends.
func mark(name string) {
	fmt.Printf("{\"mark\":%q}\n", name)
}

// cpuTime is this process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func report(r result, human string) {
	fmt.Println(human)
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

type runner struct {
	pool     *pgxpool.Pool
	workers  int
	cooldown time.Duration
}

// client is a River client whose workers count the jobs they complete.
func (r runner) client(done *atomic.Int64) (*river.Client[pgx.Tx], error) {
	w := river.NewWorkers()
	river.AddWorker(w, river.WorkFunc(func(context.Context, *river.Job[noop]) error {
		done.Add(1)
		return nil
	}))
	return river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.workers}},
		Workers:       w,
		FetchCooldown: r.cooldown,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
}

// insertThenWork inserts n jobs in batches of per, then starts the workers
// and times them until every job is completed.
func (r runner) insertThenWork(ctx context.Context, n, per int) error {
	// A client without workers only inserts.
	ins, err := river.NewClient(riverpgxv5.New(r.pool), &river.Config{})
	if err != nil {
		return err
	}
	start := time.Now()
	for left := n; left > 0; left -= per {
		params := make([]river.InsertManyParams, min(per, left))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noop{}}
		}
		if _, err := ins.InsertMany(ctx, params); err != nil {
			return err
		}
	}
	inserted := time.Since(start)
	var done atomic.Int64
	c, err := r.client(&done)
	if err != nil {
		return err
	}
	mark("work-start")
	start, cpu := time.Now(), cpuTime()
	if err := c.Start(ctx); err != nil {
		return err
	}
	if err := waitFor(ctx, &done, int64(n), 5*time.Minute); err != nil {
		return err
	}
	worked, cpu := time.Since(start), cpuTime()-cpu
	mark("work-end")
	if err := c.Stop(ctx); err != nil {
		return err
	}
	res := result{Workload: "insert-then-work", JobsPerSecond: float64(n) / worked.Seconds(), InsertPerSecond: float64(n) / inserted.Seconds(),
		CPUPerJob: cpu / time.Duration(n)}
	report(res, fmt.Sprintf("River: %d jobs inserted first (InsertMany, %d a call) at %.0f jobs/s, then worked (MaxWorkers %d, FetchCooldown %s) at %.0f jobs/s",
		n, per, res.InsertPerSecond, r.workers, r.cooldown, res.JobsPerSecond))
	return nil
}

// steady runs inserters clients that each insert one job a call for d
// while the workers work them, and reports the jobs completed a second and
// the latency of an Insert.
func (r runner) steady(ctx context.Context, inserters int, d time.Duration) error {
	var done atomic.Int64
	c, err := r.client(&done)
	if err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
		inserted  atomic.Int64
		firstErr  error
	)
	start := time.Now()
	stop := start.Add(d)
	for range inserters {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(stop) {
				t := time.Now()
				if _, err := c.Insert(ctx, noop{}, nil); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
				inserted.Add(1)
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := waitFor(ctx, &done, inserted.Load(), time.Minute); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := c.Stop(ctx); err != nil {
		return err
	}
	slices.Sort(latencies)
	res := result{Workload: "steady", JobsPerSecond: float64(inserted.Load()) / elapsed.Seconds(),
		InsertP50: quantile(latencies, 0.50), InsertP99: quantile(latencies, 0.99)}
	report(res, fmt.Sprintf("River: %d clients inserting one job a call while it is worked: %.0f jobs/s, Insert p50 %s, p99 %s",
		inserters, res.JobsPerSecond, res.InsertP50.Round(10*time.Microsecond), res.InsertP99.Round(10*time.Microsecond)))
	return nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// waitFor waits until done reaches n, or fails after limit.
func waitFor(ctx context.Context, done *atomic.Int64, n int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for done.Load() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d jobs were worked within %s", done.Load(), n, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// freshDatabase creates a database for the run on the server at url and
// returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, url string) (string, func(), error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", nil, fmt.Errorf("-postgres: %w", err)
	}
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("cannot reach PostgreSQL at %s (start it, or name another with -postgres): %w", url, err)
	}
	name := fmt.Sprintf("river_bench_%d", os.Getpid())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	u, err := neturl.Parse(url)
	if err != nil {
		admin.Close(ctx)
		return "", nil, fmt.Errorf("-postgres: %w", err)
	}
	u.Path = "/" + name
	drop := func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "river bench: dropping the run's database:", err)
		}
		admin.Close(context.Background())
	}
	return u.String(), drop, nil
}

func defaultPostgres() string {
	if u := os.Getenv("SPOOL_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "river bench:", err)
	os.Exit(1)
}
