package connectapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/wire"
	"github.com/spool-run/spool/spooltest"
)

// batchJobs are n jobs of queue with request ids prefix-0, prefix-1...
func batchJobs(n int, queue, prefix string) []*spoolv1.EnqueueJobRequest {
	jobs := make([]*spoolv1.EnqueueJobRequest, n)
	for i := range jobs {
		jobs[i] = &spoolv1.EnqueueJobRequest{Queue: queue, RequestId: fmt.Sprintf("%s-%d", prefix, i),
			Params: &spoolv1.JobParams{Argv: []string{"echo", fmt.Sprint(i)}}}
	}
	return jobs
}

// TestEnqueueJobsOverJSON: the call as a script makes it, in Connect's
// JSON: good and bad jobs side by side, each answered in its place.
func TestEnqueueJobsOverJSON(t *testing.T) {
	srv := spooltest.NewServer(t)
	body := `{"jobs": [
		{"queue": "builds", "params": {"argv": ["make", "test"], "timeout": "600s"}, "requestId": "j1"},
		{"queue": "builds", "params": {}},
		{"params": {"script": "echo hi"}, "maxAttempts": 5, "retries": 2}
	]}`
	for round := range 2 {
		status, out := postJSON(t, srv, spoolv1connect.JobServiceEnqueueJobsProcedure, body)
		var got struct {
			Results []struct {
				Job struct {
					JobID, Queue, State string
					MaxAttempts         int
				}
				Deduplicated bool
				ErrorCode    string
				ErrorMessage string
			}
		}
		if status != http.StatusOK || json.Unmarshal([]byte(out), &got) != nil || len(got.Results) != 3 {
			t.Fatalf("round %d: %d %s", round, status, out)
		}
		r := got.Results
		if r[0].Job.Queue != "builds" || r[0].Job.State != "JOB_STATE_QUEUED" || r[0].Deduplicated != (round == 1) || r[0].ErrorCode != "" {
			t.Errorf("round %d: job 0 %+v", round, r[0])
		}
		if r[1].Job.JobID != "" || r[1].ErrorCode != "invalid_argument" || !strings.Contains(r[1].ErrorMessage, "argv") {
			t.Errorf("round %d: job 1 %+v, want invalid_argument saying what to run", round, r[1])
		}
		if r[2].Job.Queue != "default" || r[2].Job.MaxAttempts != 5 || r[2].Deduplicated {
			t.Errorf("round %d: job 2 %+v", round, r[2])
		}
	}
}

// TestEnqueueJobsBounds: a call of more than 1,000 jobs or 16 MiB is
// refused whole, saying the bound; one of 1,000 is taken.
func TestEnqueueJobsBounds(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx := context.Background()
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rpc.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: batchJobs(service.MaxEnqueueJobs+1, "", "over")}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "send 1 to 1000") {
		t.Errorf("1,001 jobs: %v, want invalid_argument with the bound", err)
	}
	resp, err := rpc.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: batchJobs(service.MaxEnqueueJobs, "", "full")}))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Msg.GetResults() {
		if r.GetErrorCode() != "" || r.GetJob().GetRequestId() != fmt.Sprint("full-", i) {
			t.Fatalf("job %d of 1,000: %v", i, r)
		}
	}
	// 100 jobs of 200 KiB each: each fits a job, together not a call.
	big := batchJobs(100, "", "big")
	for _, j := range big {
		j.Params.Stdin = make([]byte, 200<<10)
	}
	_, err = rpc.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: big}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a call of 20 MiB: %v, want resource_exhausted", err)
	}
}

// TestEnqueueJobsUnauthenticatedUnread: a call without a valid key is
// refused at the door, before any of its body arrives.
func TestEnqueueJobsUnauthenticatedUnread(t *testing.T) {
	srv := spooltest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, key := range map[string]string{"no key": "", "an unknown key": "spool_unknown"} {
		t.Run(name, func(t *testing.T) {
			// The body, declared as a whole call's worth, never comes: only
			// an answer that does not wait for it ends the call.
			pr, pw := io.Pipe()
			defer pw.Close()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+spoolv1connect.JobServiceEnqueueJobsProcedure, pr)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = service.MaxEnqueueJobsRequestBytes
			req.Header.Set("Content-Type", "application/proto")
			req.Header.Set("Connect-Protocol-Version", "1")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e rpcError
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusUnauthorized || e.Code != "unauthenticated" {
				t.Errorf("%s, %+v (%v), want 401 unauthenticated", resp.Status, e, err)
			}
		})
	}
	// A key that may not submit is let in, and refused the whole call.
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.Key(t, spool.RoleWorker, "builds")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rpc.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: batchJobs(2, "builds", "w")}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("a worker key: %v, want permission_denied", err)
	}
}
