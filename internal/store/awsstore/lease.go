package awsstore

import (
	"context"
	"errors"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// leaseCond is the condition that ref is the job's current lease: the
// fence every write under a lease carries.
func leaseCond(e *expr, ref store.LeaseRef) string {
	return and(isJob(e), e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING))),
		e.eq(aAttempt, num(ref.Attempt)), e.eq(aLeaseID, str(ref.LeaseID)))
}

// refused explains why a write under ref was refused: the job is gone, or
// ref is not its current lease (store.ErrStaleLease). retry is true when
// ref is current after all (the write lost a race with another change).
func (s *Store) refused(ctx context.Context, ref store.LeaseRef) (r *jobRec, retry bool, err error) {
	r, err = s.getJob(ctx, ref.JobID)
	if err != nil {
		return nil, false, err
	}
	if err := store.CheckLease(ref, r.state, r.attempt, r.leaseID); err != nil {
		return r, false, err
	}
	return r, true, nil
}

// Heartbeat implements store.JobStore: the lease is extended in DynamoDB
// (the fence), then the message's visibility in SQS. The lease ends no
// later than the message's new visibility, as at dequeue.
func (s *Store) Heartbeat(ctx context.Context, ref store.LeaseRef, vis time.Duration) (time.Time, bool, error) {
	vis = clampVisibility(vis)
	for range raceRounds {
		expires := store.Now().Add(vis)
		e := newExpr()
		u := newUpdate(e).Set(aLeaseExpires, num(expires.UnixMicro()))
		r, ok, err := s.updateJob(ctx, ref.JobID, u, leaseCond(e, ref))
		if err != nil {
			return time.Time{}, false, err
		}
		if !ok {
			if _, retry, err := s.refused(ctx, ref); !retry {
				return time.Time{}, false, err
			}
			continue
		}
		if url, err := s.queues.url(ctx, r.queue()); err == nil {
			// A failure here is survivable: if the message shows up again
			// before the lease ends, whoever receives it sees the lease
			// and hides the message until then.
			s.hide(ctx, url, ref.LeaseID, vis)
		}
		return expires, r.cancel, nil
	}
	return time.Time{}, false, errBusy(ref.JobID)
}

// Complete implements store.JobStore: the job is made final in DynamoDB,
// then its message deleted. A repeat by the same attempt returns the job
// as it is.
func (s *Store) Complete(ctx context.Context, ref store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, ref.JobID)
		if err != nil {
			return nil, err
		}
		if store.SameCompletion(ref, r.state, r.attempt, r.leaseID) {
			s.dropLeaseMessage(ctx, r, ref)
			return r.view(), nil
		}
		if err := store.CheckLease(ref, r.state, r.attempt, r.leaseID); err != nil {
			return nil, err
		}
		now := store.Now()
		b, err := marshal(store.CompletedResult(res, ref.Attempt, now))
		if err != nil {
			return nil, err
		}
		e := newExpr()
		// The lease id stays, so a repeat is recognised (SameCompletion).
		u := newUpdate(e).Set(aState, num(int32(store.CompletedState(res, r.cancel)))).Set(aResult, bin(b)).
			Set(aUpdatedAt, num(now.UnixMicro())).Remove(aLeasePart, aLeaseExpires).BumpRev()
		// The outcome depends on cancel_requested: it must not change under us.
		done, ok, err := s.updateJob(ctx, ref.JobID, u, and(leaseCond(e, ref), e.eq(aCancel, boolean(r.cancel))))
		if err != nil {
			return nil, err
		}
		if ok {
			s.dropLeaseMessage(ctx, done, ref)
			return done.view(), nil
		}
	}
	return nil, errBusy(ref.JobID)
}

// dropLeaseMessage deletes the message a lease was granted with.
func (s *Store) dropLeaseMessage(ctx context.Context, r *jobRec, ref store.LeaseRef) {
	url, err := s.queues.url(ctx, r.queue())
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("cannot delete a finished job's message", "job", r.id(), "error", err)
		}
		return
	}
	s.drop(ctx, url, ref.LeaseID)
}
