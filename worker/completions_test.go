package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/server"
)

// leasedJobs starts a server on SQLite and returns a client of its job
// service and the leases of n jobs enqueued on it.
func leasedJobs(t *testing.T, n int) (spoolv1connect.JobServiceClient, []*spoolv1.JobLease) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Server.Addr, cfg.Server.DataDir, cfg.Server.ShutdownGrace = "127.0.0.1:0", filepath.Join(t.TempDir(), "server"), time.Second
	cfg.Auth.AdminKey = "spool_completions-test-admin-key-of-32-characters"
	ctx := context.Background()
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	rpc, err := wire.Dial(srv.URL(), wire.Options{APIKey: cfg.Auth.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := rpc.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{Queue: "builds", Params: &spoolv1.JobParams{Script: "true"}})); err != nil {
			t.Fatal(err)
		}
	}
	var leases []*spoolv1.JobLease
	for len(leases) < n {
		resp, err := rpc.DequeueJobs(ctx, connect.NewRequest(&spoolv1.DequeueJobsRequest{Queue: "builds", MaxJobs: int32(n - len(leases)), WaitSeconds: 1, WorkerId: "test"}))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, resp.Msg.GetLeases()...)
	}
	return rpc, leases
}

// heldServer is a real server's job service, with the first completion
// call held until release is closed, and the calls counted. When old, it
// answers CompleteJobs as a server that predates it does; when failing,
// CompleteJobs fails as a whole, as it does when the server is away.
type heldServer struct {
	spoolv1connect.JobServiceClient
	release       chan struct{}
	old, failing  bool
	mu            sync.Mutex
	calls         []int // completions per call, CompleteJob counting 1
	whole         int   // CompleteJobs calls that asked for whole jobs
	firstReceived chan struct{}
}

func (f *heldServer) count(n int) {
	f.mu.Lock()
	f.calls = append(f.calls, n)
	first := len(f.calls) == 1
	f.mu.Unlock()
	if first {
		close(f.firstReceived)
		<-f.release
	}
}

func (f *heldServer) CompleteJob(ctx context.Context, r *connect.Request[spoolv1.CompleteJobRequest]) (*connect.Response[spoolv1.CompleteJobResponse], error) {
	f.count(1)
	return f.JobServiceClient.CompleteJob(ctx, r)
}

func (f *heldServer) CompleteJobs(ctx context.Context, r *connect.Request[spoolv1.CompleteJobsRequest]) (*connect.Response[spoolv1.CompleteJobsResponse], error) {
	switch {
	case f.old:
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("no such procedure"))
	case f.failing:
		f.count(len(r.Msg.GetCompletions()))
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("the server is away"))
	}
	if !r.Msg.GetBrief() {
		f.mu.Lock()
		f.whole++
		f.mu.Unlock()
	}
	f.count(len(r.Msg.GetCompletions()))
	return f.JobServiceClient.CompleteJobs(ctx, r)
}

// Completions that come while a call is under way go together in the next
// call, each with the server's own answer (a stale lease's refusal keeps
// its code); to a server that predates CompleteJobs, each goes alone; a
// gathered call that fails as a whole fails each completion in it, for its
// sender to retry.
func TestCompletionsAreGathered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		old, failing  bool
		want          string
		wantSucceeded bool
	}{
		{name: "gathered", want: "[1 4]", wantSucceeded: true},
		{name: "old server", old: true, want: "[1 1 1 1 1]", wantSucceeded: true},
		{name: "call fails", failing: true, want: "[1 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rpc, leases := leasedJobs(t, 5)
			ctx := context.Background()
			// The fourth lease is released: its token is stale.
			stale := leases[3].GetTaskToken()
			if _, err := rpc.ReleaseJob(ctx, connect.NewRequest(&spoolv1.ReleaseJobRequest{TaskToken: stale, Reason: "stopping"})); err != nil {
				t.Fatal(err)
			}
			f := &heldServer{JobServiceClient: rpc, release: make(chan struct{}), firstReceived: make(chan struct{}), old: tc.old, failing: tc.failing}
			c := &completions{rpc: f}
			complete := func(l *spoolv1.JobLease) (*spoolv1.Job, error) {
				return c.complete(ctx, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}})
			}
			first := make(chan error, 1)
			go func() {
				_, err := complete(leases[0])
				first <- err
			}()
			select {
			case <-f.firstReceived:
			case <-time.After(10 * time.Second):
				t.Fatal("the first completion was not sent")
			}
			rest := leases[1:]
			errs := make([]error, len(rest))
			jobs := make([]*spoolv1.Job, len(rest))
			var wg sync.WaitGroup
			for i, l := range rest {
				wg.Go(func() { jobs[i], errs[i] = complete(l) })
			}
			// They queue behind the call under way.
			for {
				c.mu.Lock()
				n := len(c.queued)
				c.mu.Unlock()
				if n == len(rest) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			close(f.release)
			wg.Wait()
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			for i, l := range rest {
				switch {
				case tc.failing:
					if connect.CodeOf(errs[i]) != connect.CodeUnavailable {
						t.Errorf("completion of %s in a failed call: %v, want the call's error", l.GetJob().GetJobId(), errs[i])
					}
				case l.GetTaskToken() == stale:
					if connect.CodeOf(errs[i]) != connect.CodeFailedPrecondition {
						t.Errorf("the stale completion got %v, want FailedPrecondition", errs[i])
					}
				case errs[i] != nil || jobs[i].GetJobId() != l.GetJob().GetJobId() || jobs[i].GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED:
					t.Errorf("completion of %s: job %v, %v; want it succeeded", l.GetJob().GetJobId(), jobs[i], errs[i])
				}
			}
			if got := fmt.Sprint(f.calls); got != tc.want {
				t.Errorf("completions per call %s, want %s", got, tc.want)
			}
			if f.whole > 0 {
				t.Errorf("%d CompleteJobs calls asked for whole jobs: a worker reads only their last sequence", f.whole)
			}
		})
	}
}
