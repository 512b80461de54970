package server_test

import (
	"context"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
)

// BenchmarkRoundTrip measures whole job round trips through the API on the
// embedded SQLite store: EnqueueJob, DequeueJobs, CompleteJob, over HTTP
// on loopback, with 8 clients at once (as a small fleet would).
//
//	go test -run '^$' -bench RoundTrip -benchtime 3s ./internal/server/
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"full", "normal"} {
		b.Run("sqlite-synchronous-"+mode, func(b *testing.B) {
			r := start(b, func(c *config.Config) { c.Store.SQLite.Synchronous = mode })
			roundTrips(b, newClient(b, r), 8)
		})
	}
}

func roundTrips(b *testing.B, c *api, workers int) {
	ctx := context.Background()
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			q := "bench-" + string(rune('a'+w))
			for range jobs {
				if _, _, err := c.Submit(ctx, client.Submission{Queue: q, Argv: []string{"true"}}); err != nil {
					b.Error(err)
					return
				}
				resp, err := c.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: q, MaxJobs: 1, VisibilityTimeoutSeconds: 30}))
				if err != nil || len(resp.Msg.GetLeases()) != 1 {
					b.Errorf("dequeue: %v", err)
					return
				}
				_, err = c.CompleteJob(ctx, connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: resp.Msg.GetLeases()[0].GetTaskToken(), Result: &spoolv1.JobResult{}}))
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for range b.N {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
