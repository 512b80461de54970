package e2e

import (
	"context"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/wire"
)

// TestAnsweredIsStored: clients enqueue and complete jobs as fast as they
// can while the server is killed (-9) under them. Whatever the server
// answered before it died is in the store after it restarts: every
// enqueued job exists, every completed job is final. Writes that share a
// commit are answered only once that commit is made, so a crash between
// the two loses nothing anyone was told about.
func TestAnsweredIsStored(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testAnsweredIsStored)
}

func testAnsweredIsStored(t *testing.T, store []string) {
	addr, data := freePort(t), t.TempDir()
	srv, _ := startServer(t, addr, data, store...)
	rpc, err := wire.Dial("http://"+addr, wire.Options{APIKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "answered"
	var (
		mu        sync.Mutex
		enqueued  []string // answered enqueues
		completed []string // answered completions
	)
	// The server is killed once enough was answered to know that the
	// clients were in full flow.
	enough := make(chan struct{})
	var enoughOnce sync.Once
	note := func(list *[]string, ids ...string) {
		mu.Lock()
		defer mu.Unlock()
		*list = append(*list, ids...)
		if len(enqueued) >= 300 && len(completed) >= 100 {
			enoughOnce.Do(func() { close(enough) })
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := rpc.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}}}))
				if err != nil {
					return // the server is gone: what it answered is noted
				}
				note(&enqueued, resp.Msg.GetJob().GetJobId())
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := rpc.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: queue, MaxJobs: 20, WaitSeconds: 1, WorkerId: "answered"}))
				if err != nil {
					return
				}
				leases := resp.Msg.GetLeases()
				if len(leases) == 0 {
					continue
				}
				req := &spoolv1.CompleteJobsRequest{}
				for _, l := range leases {
					req.Completions = append(req.Completions, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}})
				}
				done, err := rpc.CompleteJobs(ctx, connect.NewRequest(req))
				if err != nil {
					return
				}
				for i, r := range done.Msg.GetResults() {
					if r.GetErrorCode() == "" {
						note(&completed, leases[i].GetJob().GetJobId())
					}
				}
			}
		})
	}
	<-enough
	srv.kill9(t)
	wg.Wait()
	cancel()

	_, c := startServer(t, addr, data, store...)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d enqueues and %d completions answered before the kill", len(enqueued), len(completed))
	for _, id := range enqueued {
		if _, err := c.Job(context.Background(), id); err != nil {
			t.Fatalf("job %s, answered as enqueued before the kill, after the restart: %v", id, err)
		}
	}
	for _, id := range completed {
		j, err := c.Job(context.Background(), id)
		if err != nil {
			t.Fatalf("job %s, answered as completed before the kill: %v", id, err)
		}
		if j.State != spool.Succeeded {
			t.Fatalf("job %s, answered as completed before the kill, is %s after the restart", id, j.State)
		}
	}
}
