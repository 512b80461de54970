package maintenance_test

import (
	"context"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/token"
)

// core is a service core over an in-memory store, without keys, and a
// context its calls are allowed in.
type core struct {
	svc *service.Service
	st  *memstore.Store
	ctx context.Context
}

func newCore(t *testing.T) *core {
	t.Helper()
	cfg := config.Default()
	cfg.Auth.Disabled = true
	signer, err := token.NewSigner(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	c := &core{st: memstore.New(), ctx: service.WithCredentials(context.Background(), service.Credentials{Host: "localhost"})}
	c.svc = service.New(service.Options{Store: c.st, Config: cfg, Signer: signer})
	return c
}

func (c *core) enqueue(t *testing.T, queue string) *spoolv1.Job {
	t.Helper()
	resp, err := c.svc.EnqueueJob(c.ctx, &spoolv1.EnqueueJobRequest{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"make", "test"}}, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJob()
}

// lease leases queue's next job for seconds.
func (c *core) lease(t *testing.T, queue string, seconds int32) *spoolv1.JobLease {
	t.Helper()
	resp, err := c.svc.DequeueJobs(c.ctx, &spoolv1.DequeueJobsRequest{Queue: queue, MaxJobs: 1, WorkerId: "w1", VisibilityTimeoutSeconds: seconds})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetLeases()) != 1 {
		t.Fatalf("%d leases, want 1", len(resp.GetLeases()))
	}
	return resp.GetLeases()[0]
}

// run leases queue's next job and completes it with exit code.
func (c *core) run(t *testing.T, queue string, exit int32) *spoolv1.Job {
	t.Helper()
	l := c.lease(t, queue, 0)
	resp, err := c.svc.CompleteJob(c.ctx, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: exit}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetJob()
}
