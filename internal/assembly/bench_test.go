package assembly_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
)

// BenchmarkRoundTrip measures whole job round trips through the API on the
// embedded SQLite store: EnqueueJob, DequeueJobs, CompleteJob, over HTTP
// on loopback, with 8 clients at once (as a small fleet would).
//
//	go test -run '^$' -bench RoundTrip -benchtime 3s ./internal/assembly/
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []string{"full", "normal"} {
		b.Run("sqlite-synchronous-"+mode, func(b *testing.B) {
			r := start(b, func(c *server.Config) { c.Store.SQLite.Synchronous = mode })
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
				if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: q, Argv: []string{"true"}}); err != nil {
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

// BenchmarkReadWholeLog reads all 10,000 lines of a finished job through
// the API, as a client replaying a log does: over Connect (StreamEvents,
// what client.ReadLog and spool logs use) and over REST (one page of
// 10,000 lines).
//
//	go test -run '^$' -bench ReadWholeLog ./internal/assembly/
func BenchmarkReadWholeLog(b *testing.B) {
	srv := start(b)
	// Lines as the goals table's job prints them: "<n> <Unix nanoseconds>".
	lines := spooltest.Seq(1, 10_000)
	for i := range lines {
		lines[i].Text += " 1795715000123456789"
	}
	job := spooltest.RunJob(b, srv, lines...)
	c := newClient(b, srv)
	ctx := context.Background()
	b.Run("connect", func(b *testing.B) {
		for range b.N {
			lines := 0
			for ev, err := range c.Events(ctx, job.ID, client.StreamOptions{}).All() {
				if err != nil {
					b.Fatal(err)
				}
				lines += len(ev.Lines)
			}
			if lines != 10_000 {
				b.Fatalf("read %d lines", lines)
			}
		}
	})
	b.Run("rest", func(b *testing.B) {
		url := srv.URL + "/api/v1/jobs/" + job.ID + "/logs?limit=10000"
		for range b.N {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+srv.AdminKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Events []json.RawMessage `json:"events"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil || len(page.Events) != 10_000 {
				b.Fatalf("read %d lines: %v", len(page.Events), err)
			}
		}
	})
}
