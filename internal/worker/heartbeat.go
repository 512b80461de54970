package worker

import (
	"context"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
)

// heartbeat keeps the attempt's lease alive every interval until ctx ends,
// passing on what the server says: the job was cancelled, someone is
// watching, or the lease is gone. When the server is unreachable it retries
// sooner, with backoff, and keeps the job running: a short outage must not
// kill work (the server decides, when it is back, whether the lease held).
func (a *attempt) heartbeat(ctx context.Context, interval time.Duration) {
	bo := backoff.New(500*time.Millisecond, interval)
	wait := interval
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		resp, err := a.w.api.UpdateJobVisibility(ctx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{
			TaskToken: a.lease.GetTaskToken(), VisibilityTimeoutSeconds: a.w.cfg.VisibilityTimeoutSeconds,
		}))
		switch {
		case err == nil:
			bo.Reset()
			wait = interval
			a.out.SetWatched(resp.Msg.GetWatched())
			if resp.Msg.GetCancelRequested() {
				a.stop("cancelled")
			}
		case ctx.Err() != nil:
			return
		case leaseGone(err):
			a.leaseLost(err.Error())
			return
		default:
			a.log.Warn("heartbeat failed; retrying", "error", err)
			wait = bo.Delay()
		}
	}
}
