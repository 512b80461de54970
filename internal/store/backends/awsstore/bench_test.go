package awsstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// BenchmarkQueue measures the store alone, against the local servers, on a
// queue's two hot paths with workers goroutines at once, b.N jobs in all:
// enqueue, a job a call (as EnqueueJobs runs its jobs side by side); and
// work, where each goroutine dequeues up to 10 jobs and completes them
// together (as the service completes a worker's batch). Besides jobs/s it
// reports the SQS and DynamoDB requests a job took, which do not depend on
// how busy the machine is:
//
//	go test ./internal/store/backends/awsstore -run '^$' -bench Queue -benchtime 2000x
func BenchmarkQueue(b *testing.B) {
	for _, workers := range []int{1, 32, 128} {
		b.Run(fmt.Sprintf("enqueue/workers=%d", workers), func(b *testing.B) {
			s, calls := benchStore(b)
			q := newQueue()
			benchEnqueue(b, s, q, 1, 1) // the queue's URL and registry entry, as a running server has them
			calls.Take()
			b.ResetTimer()
			benchEnqueue(b, s, q, workers, b.N)
			b.StopTimer()
			reportCalls(b, calls)
		})
		b.Run(fmt.Sprintf("work/workers=%d", workers), func(b *testing.B) {
			s, calls := benchStore(b)
			q := newQueue()
			benchEnqueue(b, s, q, 32, b.N)
			calls.Take()
			b.ResetTimer()
			var wg sync.WaitGroup
			var done atomic.Int64
			for range workers {
				wg.Go(func() {
					for done.Load() < int64(b.N) {
						ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute, Wait: time.Second})
						if err != nil {
							b.Error(err)
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
			b.StopTimer()
			if done.Load() != int64(b.N) {
				b.Fatalf("worked %d jobs of %d", done.Load(), b.N)
			}
			reportCalls(b, calls)
		})
	}
}

func benchStore(b *testing.B) (*awsstore.Store, *awsstore.Calls) {
	s, calls, err := awsstore.OpenCounting(context.Background(), awstest.Shared(b).NewConfig(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, calls
}

// reportCalls reports jobs/s and the requests each job took of each
// service.
func reportCalls(b *testing.B, calls *awsstore.Calls) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	n, _ := calls.Take()
	var sqs, db int
	for op, k := range n {
		if strings.HasPrefix(op, "SQS.") {
			sqs += k
		} else {
			db += k
		}
	}
	b.ReportMetric(float64(sqs)/float64(b.N), "sqs-calls/job")
	b.ReportMetric(float64(db)/float64(b.N), "dynamodb-calls/job")
}

// benchEnqueue enqueues n jobs on queue from workers goroutines.
func benchEnqueue(b *testing.B, s *awsstore.Store, queue string, workers, n int) {
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
