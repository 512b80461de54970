package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// BenchmarkQueue measures the store alone on a queue's two hot paths, with
// workers goroutines at once, b.N jobs in all: enqueue, a job a call; and
// work, where each goroutine dequeues up to 10 jobs and completes them
// together (as the service completes a batch), until none is left.
func BenchmarkQueue(b *testing.B) {
	for _, workers := range []int{1, 32} {
		b.Run(fmt.Sprintf("enqueue/workers=%d", workers), func(b *testing.B) {
			s := benchStore(b)
			b.ResetTimer()
			benchEnqueue(b, s, "q", workers, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run(fmt.Sprintf("work/workers=%d", workers), func(b *testing.B) {
			s := benchStore(b)
			benchEnqueue(b, s, "q", 32, b.N)
			b.ResetTimer()
			var wg sync.WaitGroup
			var done atomic.Int64
			for range workers {
				wg.Go(func() {
					for {
						ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: "q", Max: 10, LeaseDuration: time.Minute})
						if err != nil {
							b.Error(err)
							return
						}
						if len(ls) == 0 {
							return
						}
						var batch sync.WaitGroup
						for _, l := range ls {
							batch.Go(func() {
								if _, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{}); err != nil {
									b.Error(err)
								}
							})
						}
						batch.Wait()
						done.Add(int64(len(ls)))
					}
				})
			}
			wg.Wait()
			if done.Load() != int64(b.N) {
				b.Fatalf("worked %d jobs of %d", done.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

func benchStore(b *testing.B) *pgstore.Store {
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: pgtest.NewDatabase(b)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// benchEnqueue enqueues n jobs on queue from workers goroutines.
func benchEnqueue(b *testing.B, s *pgstore.Store, queue string, workers, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				_, _, err := s.Enqueue(context.Background(), store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}},
					Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
