package connectapi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/spooltest"
)

// BenchmarkEnqueueJobs: jobs enqueued a second through the API, on the
// embedded SQLite store, in calls of 1,000 jobs (each with its own
// request id) from 1 and from 4 callers at once; and, to compare on the
// same machine at the same time, the same 1,000 jobs as EnqueueJob calls
// from 128 callers.
//
//	go test -run '^$' -bench EnqueueJobs -benchtime 20x ./internal/connectapi/
func BenchmarkEnqueueJobs(b *testing.B) {
	for _, callers := range []int{1, 4} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			srv := spooltest.NewServer(b)
			rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var (
				calls   atomic.Int64
				elapsed time.Duration
			)
			for b.Loop() {
				reqs := make([]*spoolv1.EnqueueJobsRequest, callers)
				for c := range reqs {
					reqs[c] = &spoolv1.EnqueueJobsRequest{Jobs: batchJobs(1000, "bench", fmt.Sprintf("call-%d", calls.Add(1)))}
				}
				start := time.Now()
				var wg sync.WaitGroup
				for _, req := range reqs {
					wg.Go(func() {
						resp, err := rpc.EnqueueJobs(ctx, connect.NewRequest(req))
						if err != nil {
							b.Error(err)
							return
						}
						for _, r := range resp.Msg.GetResults() {
							if r.GetErrorCode() != "" {
								b.Errorf("%s: %s", r.GetErrorCode(), r.GetErrorMessage())
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			reportJobs(b, calls.Load()*1000, elapsed)
		})
	}
	b.Run("single/callers=128", func(b *testing.B) {
		srv := spooltest.NewServer(b)
		rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		enqueueEach(b, "single", func(req *spoolv1.EnqueueJobRequest) error {
			_, err := rpc.EnqueueJob(ctx, connect.NewRequest(req))
			return err
		})
	})
}

// BenchmarkSQLiteEnqueue: the store alone, 1,000 jobs enqueued by 128
// goroutines at a time, as EnqueueJobs has the service do: the ceiling
// of BenchmarkEnqueueJobs on this machine, measured beside it.
func BenchmarkSQLiteEnqueue(b *testing.B) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "spool.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exec := config.Default().ExecutionConfig()
	enqueueEach(b, "store", func(req *spoolv1.EnqueueJobRequest) error {
		_, _, err := st.Enqueue(ctx, store.NewJob{Queue: "bench", RequestID: req.GetRequestId(), Params: req.GetParams(), Execution: exec, MaxAttempts: 3})
		return err
	})
}

// enqueueEach enqueues 1,000 jobs a loop, one enqueue call each, from 128
// goroutines at once, and reports the jobs a second.
func enqueueEach(b *testing.B, name string, enqueue func(*spoolv1.EnqueueJobRequest) error) {
	var (
		jobs    int64
		elapsed time.Duration
	)
	for b.Loop() {
		reqs := batchJobs(1000, "bench", fmt.Sprintf("%s-%d", name, jobs))
		start := time.Now()
		var (
			next atomic.Int64
			wg   sync.WaitGroup
		)
		for range 128 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
					if err := enqueue(reqs[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		jobs += int64(len(reqs))
	}
	reportJobs(b, jobs, elapsed)
}

// reportJobs reports a rate of jobs enqueued.
func reportJobs(b *testing.B, jobs int64, elapsed time.Duration) {
	b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(elapsed.Seconds()/float64(jobs)*1e6, "µs/job")
}
