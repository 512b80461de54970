package connectapi_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/spooltest"
)

// BenchmarkEnqueueJobs: jobs enqueued a second through the API, on the
// embedded SQLite store, in calls of 1,000 jobs (each with its own
// request id) from 1 and from 4 callers at once.
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
			jobs := float64(calls.Load() * 1000)
			b.ReportMetric(jobs/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(elapsed.Seconds()/jobs*1e6, "µs/job")
		})
	}
}
