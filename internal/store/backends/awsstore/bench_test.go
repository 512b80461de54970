package awsstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
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
			conformance.EnqueueMany(b, s, q, 1, 1) // the queue's URL and registry entry, as a running server has them
			calls.Take()
			b.ResetTimer()
			conformance.EnqueueMany(b, s, q, workers, b.N)
			b.StopTimer()
			reportCalls(b, calls)
		})
		b.Run(fmt.Sprintf("work/workers=%d", workers), func(b *testing.B) {
			s, calls := benchStore(b)
			q := newQueue()
			conformance.EnqueueMany(b, s, q, 32, b.N)
			calls.Take()
			b.ResetTimer()
			conformance.WorkQueue(b, s, q, workers, b.N, time.Second)
			b.StopTimer()
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
