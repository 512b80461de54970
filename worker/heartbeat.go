package worker

import (
	"cmp"
	"context"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/backoff"
)

// heartbeatSlack is how much longer than its wait a heartbeat call may take
// before it is given up and made again: a connection that went dead must
// not hold the lease's renewal hostage.
const heartbeatSlack = 10 * time.Second

// heartbeat keeps the attempt's lease alive until ctx ends, and passes on
// what the server says: the job was cancelled, someone is watching, or the
// lease is gone. Each call renews the lease and then waits, on the server,
// until something changes or the next renewal is due, so a cancel reaches
// the command within moments while the lease is renewed no more often than
// the interval the lease allows (the server gives it with the lease, so a
// changed configuration never lets a healthy lease run out). When the
// server is unreachable it retries sooner, with backoff, and keeps the job
// running: a short outage must not kill work (the server decides, when it
// is back, whether the lease held).
func (a *attempt) heartbeat(ctx context.Context) {
	interval := time.Duration(cmp.Or(a.lease.GetHeartbeatIntervalSeconds(), a.job.GetExecutionConfig().GetHeartbeatIntervalSeconds(), 30)) * time.Second
	bo := backoff.New(500*time.Millisecond, interval)
	// A command that ends at once needs no heartbeat: nothing can stop it
	// any more, and the lease, just granted, holds until the next renewal
	// is due, by when its output is normally delivered.
	if awaitQuickEnd(ctx, a.started, a.ended) && backoff.Sleep(ctx, interval) != nil {
		return
	}
	var watched, cancelled bool
	for {
		wait := interval
		if cancelled {
			wait = 0 // the news is known: plain renewals until the command is gone
		}
		start := time.Now()
		callCtx, cancel := context.WithTimeout(ctx, wait+heartbeatSlack)
		resp, err := a.w.rpc.UpdateJobVisibility(callCtx, connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{
			TaskToken: a.lease.GetTaskToken(), VisibilityTimeoutSeconds: a.w.leaseSeconds(),
			WaitSeconds: int32(wait / time.Second), Watched: watched,
		}))
		cancel()
		var pause time.Duration
		switch {
		case err == nil:
			bo.Reset()
			if s := resp.Msg.GetHeartbeatIntervalSeconds(); s > 0 {
				interval = time.Duration(s) * time.Second
			}
			news := resp.Msg.GetWatched() != watched || (resp.Msg.GetCancelRequested() && !cancelled)
			watched = resp.Msg.GetWatched()
			a.setWatched(watched)
			if resp.Msg.GetCancelRequested() && !cancelled {
				cancelled = true
				a.stop("cancelled")
			}
			// A call that came back early without news (a server that does
			// not hold heartbeats) waits out the interval here.
			if !news {
				pause = interval - time.Since(start)
			}
		case ctx.Err() != nil:
			return
		case leaseGone(err):
			a.leaseLost(err.Error())
			return
		case isKeyRefusal(err):
			a.w.refuseKey(err)
			return
		default:
			a.log.Warn("heartbeat failed; retrying", "error", err)
			pause = bo.Delay()
		}
		if pause > 0 && backoff.Sleep(ctx, pause) != nil {
			return
		}
	}
}
