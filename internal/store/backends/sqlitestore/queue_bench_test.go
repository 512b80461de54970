package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
)

// benchStore opens a store in a temporary directory for a benchmark.
func benchStore(b *testing.B) *sqlitestore.Store {
	b.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "spool.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// cpuTime is the CPU time the process has used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report reports the rate of jobs and the CPU time each took: on a
// shared machine the second varies less than the first.
func report(b *testing.B, jobs, commits int64, elapsed, cpu time.Duration) {
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(commits)/float64(jobs)*1000, "commits/1000jobs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(jobs), "cpu-µs/job")
}

// enqueueConcurrently enqueues n jobs on queue from 128 goroutines, as the
// service does with an EnqueueJobs call, each job with a request id made
// of prefix.
func enqueueConcurrently(b *testing.B, s *sqlitestore.Store, queue, prefix string, n int) {
	ctx := context.Background()
	exec := config.Default().ExecutionConfig()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range 128 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				nj := store.NewJob{Queue: queue, RequestID: fmt.Sprintf("%s-%d", prefix, i), MaxAttempts: 3, Execution: exec,
					Params: &spoolv1.JobParams{Argv: []string{"echo", fmt.Sprint(i)}}}
				if _, _, err := s.Enqueue(ctx, nj); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkQueueEnqueue: 1,000 jobs enqueued by 128 goroutines at a time.
//
//	go test -run '^$' -bench 'Queue(Enqueue|LeaseComplete)' -benchtime 20x ./internal/store/backends/sqlitestore/
func BenchmarkQueueEnqueue(b *testing.B) {
	s := benchStore(b)
	var (
		jobs, commits int64
		elapsed, cpu  time.Duration
	)
	for b.Loop() {
		start, cpu0, commits0 := time.Now(), cpuTime(b), sqlitestore.Commits(s)
		enqueueConcurrently(b, s, "bench", fmt.Sprintf("r%d", jobs), 1000)
		elapsed += time.Since(start)
		cpu += cpuTime(b) - cpu0
		commits += sqlitestore.Commits(s) - commits0
		jobs += 1000
	}
	report(b, jobs, commits, elapsed, cpu)
}

// BenchmarkQueueLeaseComplete: each round leases up to max jobs in one
// Dequeue and completes them 100 at a time, concurrently, as a worker
// service does; 1,000 jobs are enqueued before the clock starts.
func BenchmarkQueueLeaseComplete(b *testing.B) {
	for _, max := range []int{100, 500} {
		b.Run(fmt.Sprintf("max=%d", max), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			var (
				jobs, commits int64
				elapsed, cpu  time.Duration
			)
			for b.Loop() {
				b.StopTimer()
				enqueueConcurrently(b, s, "bench", fmt.Sprintf("r%d", jobs), 1000)
				b.StartTimer()
				start, cpu0, commits0 := time.Now(), cpuTime(b), sqlitestore.Commits(s)
				for left := 1000; left > 0; {
					leases, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "bench", Max: max, LeaseDuration: time.Minute})
					if err != nil {
						b.Fatal(err)
					}
					left -= len(leases)
					var (
						next atomic.Int64
						wg   sync.WaitGroup
					)
					for range 100 {
						wg.Go(func() {
							for i := next.Add(1) - 1; i < int64(len(leases)); i = next.Add(1) - 1 {
								res := &spoolv1.JobResult{ExitCode: 0}
								if _, err := s.Complete(ctx, leases[i].LeaseRef, res); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
				}
				elapsed += time.Since(start)
				cpu += cpuTime(b) - cpu0
				commits += sqlitestore.Commits(s) - commits0
				jobs += 1000
			}
			report(b, jobs, commits, elapsed, cpu)
		})
	}
}

// BenchmarkPromote measures one PromoteScheduled that queues 10,000 jobs
// due in the same second.
func BenchmarkPromote(b *testing.B) {
	sqlrowstest.PromoteBurst(b, benchStore(b), 10000)
}
