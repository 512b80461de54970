package conformance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// The hot paths of a queue, for the stores' benchmarks to drive alike.

// EnqueueMany enqueues n jobs that run `true` on queue from workers
// goroutines at once, as EnqueueJobs runs a call's jobs side by side.
func EnqueueMany(tb testing.TB, s store.JobStore, queue string, workers, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				_, _, err := s.Enqueue(context.Background(), store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}},
					Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1})
				if err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// WorkQueue works n jobs of queue from workers goroutines, each leasing up
// to 10 at a time and completing them side by side, as the service
// completes a worker's batch. Each lease waits up to wait for a job; with
// no wait, a goroutine that finds the queue empty stops. It fails tb unless
// n jobs were worked.
func WorkQueue(tb testing.TB, s store.JobStore, queue string, workers, n int, wait time.Duration) {
	var wg sync.WaitGroup
	var done atomic.Int64
	for range workers {
		wg.Go(func() {
			for done.Load() < int64(n) {
				ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: 10, LeaseDuration: time.Minute, Wait: wait})
				if err != nil {
					tb.Error(err)
					return
				}
				if len(ls) == 0 && wait == 0 {
					return
				}
				var batch sync.WaitGroup
				for _, l := range ls {
					batch.Go(func() {
						if _, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{}); err != nil {
							tb.Error(err)
						}
					})
				}
				batch.Wait()
				done.Add(int64(len(ls)))
			}
		})
	}
	wg.Wait()
	if done.Load() != int64(n) {
		tb.Fatalf("worked %d jobs of %d", done.Load(), n)
	}
}
