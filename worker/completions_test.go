package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// completionServer answers CompleteJob and CompleteJobs, holding the first
// call until release is closed; tokens starting "stale" are refused.
type completionServer struct {
	spoolv1connect.JobServiceClient
	release       chan struct{}
	unimplemented bool

	mu    sync.Mutex
	calls []int // completions per call, CompleteJob counting 1
}

func (f *completionServer) hold() {
	f.mu.Lock()
	first := len(f.calls) == 1
	f.mu.Unlock()
	if first {
		<-f.release
	}
}

func (f *completionServer) CompleteJob(_ context.Context, r *connect.Request[spoolv1.CompleteJobRequest]) (*connect.Response[spoolv1.CompleteJobResponse], error) {
	f.mu.Lock()
	f.calls = append(f.calls, 1)
	f.mu.Unlock()
	f.hold()
	if tok := r.Msg.GetTaskToken(); len(tok) > 5 && tok[:5] == "stale" {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("the lease of "+tok+" has expired"))
	}
	return connect.NewResponse(&spoolv1.CompleteJobResponse{Job: &spoolv1.Job{JobId: r.Msg.GetTaskToken()}}), nil
}

func (f *completionServer) CompleteJobs(_ context.Context, r *connect.Request[spoolv1.CompleteJobsRequest]) (*connect.Response[spoolv1.CompleteJobsResponse], error) {
	if f.unimplemented {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("no such procedure"))
	}
	f.mu.Lock()
	f.calls = append(f.calls, len(r.Msg.GetCompletions()))
	f.mu.Unlock()
	f.hold()
	resp := &spoolv1.CompleteJobsResponse{}
	for _, c := range r.Msg.GetCompletions() {
		res := &spoolv1.CompletionResult{Job: &spoolv1.Job{JobId: c.GetTaskToken()}}
		if tok := c.GetTaskToken(); len(tok) > 5 && tok[:5] == "stale" {
			res = &spoolv1.CompletionResult{ErrorCode: connect.CodeFailedPrecondition.String(), ErrorMessage: "the lease of " + tok + " has expired"}
		}
		resp.Results = append(resp.Results, res)
	}
	return connect.NewResponse(resp), nil
}

// Completions that come while a call is under way go together in the next
// call, each with its own answer (a refusal keeps its code); to a server
// that predates CompleteJobs, each goes alone.
func TestCompletionsAreGathered(t *testing.T) {
	for _, old := range []bool{false, true} {
		f := &completionServer{release: make(chan struct{}), unimplemented: old}
		c := &completions{rpc: f}
		ctx := context.Background()
		first := make(chan error, 1)
		go func() {
			_, err := c.complete(ctx, &spoolv1.CompleteJobRequest{TaskToken: "first"})
			first <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for {
			f.mu.Lock()
			n := len(f.calls)
			f.mu.Unlock()
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first completion was not sent")
			}
			time.Sleep(time.Millisecond)
		}
		tokens := []string{"a", "b", "stale-c", "d"}
		errs := make([]error, len(tokens))
		jobs := make([]string, len(tokens))
		var wg sync.WaitGroup
		for i, tok := range tokens {
			wg.Go(func() {
				j, err := c.complete(ctx, &spoolv1.CompleteJobRequest{TaskToken: tok})
				jobs[i], errs[i] = j.GetJobId(), err
			})
		}
		// They queue behind the call under way.
		for {
			c.mu.Lock()
			n := len(c.queued)
			c.mu.Unlock()
			if n == len(tokens) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(f.release)
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for i, tok := range tokens {
			if tok == "stale-c" {
				if connect.CodeOf(errs[i]) != connect.CodeFailedPrecondition {
					t.Errorf("old server %v: the stale completion got %v, want FailedPrecondition", old, errs[i])
				}
				continue
			}
			if errs[i] != nil || jobs[i] != tok {
				t.Errorf("old server %v: completion %s got job %q, %v", old, tok, jobs[i], errs[i])
			}
		}
		want := "[1 4]"
		if old {
			want = "[1 1 1 1 1]"
		}
		if got := fmt.Sprint(f.calls); got != want {
			t.Errorf("old server %v: completions per call %s, want %s", old, got, want)
		}
	}
}
