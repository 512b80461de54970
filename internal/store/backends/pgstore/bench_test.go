package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
	"github.com/spool-run/spool/internal/store/conformance"
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
			conformance.EnqueueMany(b, s, "q", workers, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run(fmt.Sprintf("work/workers=%d", workers), func(b *testing.B) {
			s := benchStore(b)
			conformance.EnqueueMany(b, s, "q", 32, b.N)
			b.ResetTimer()
			conformance.WorkQueue(b, s, "q", workers, b.N, 0)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkPromote measures one PromoteScheduled that queues 10,000 jobs
// due in the same second.
func BenchmarkPromote(b *testing.B) {
	sqlrowstest.PromoteBurst(b, benchStore(b), 10000)
}

func benchStore(b *testing.B) *pgstore.Store {
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: pgtest.NewDatabase(b)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
