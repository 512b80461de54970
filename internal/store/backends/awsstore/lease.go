package awsstore

import (
	"context"
	"errors"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// leaseCond is the condition that ref is the job's current lease: the
// fence every write under a lease carries.
func leaseCond(e *expr, ref store.LeaseRef) string {
	return and(isJob(e), e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING))),
		e.eq(aAttempt, num(ref.Attempt)), e.eq(aLeaseID, str(ref.LeaseID)))
}

// refused explains why a write under ref was refused: the job is gone, or
// ref is not its current lease (spool.ErrStaleLease). retry is true when
// ref is current after all (the write lost a race with another change).
func (s *Store) refused(ctx context.Context, ref store.LeaseRef) (r *jobRec, retry bool, err error) {
	r, err = s.getJob(ctx, ref.JobID)
	if err != nil {
		return nil, false, err
	}
	if err := storekit.CheckLease(ref, r.state, r.attempt, r.leaseID); err != nil {
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
		expires := storekit.Now().Add(vis)
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
		if r.external() {
			// No message to hide: an external job has none.
			return expires, r.cancel, nil
		}
		if url, err := s.url(ctx, r); err == nil {
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
	return s.finish(ctx, ref, nil, res)
}

// Finish implements store.Finisher: the items of evs are written as
// Append writes them, then one update of the job item both commits them
// and completes the attempt, so the events and the result are stored
// together or not at all, in the job item's one write.
func (s *Store) Finish(ctx context.Context, ref store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	return s.finish(ctx, ref, evs, res)
}

// finish completes ref's attempt with res, committing evs (if any) in the
// same update.
func (s *Store) finish(ctx context.Context, ref store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, ref.JobID)
		if err != nil {
			return nil, err
		}
		if storekit.SameCompletion(ref, r.state, r.attempt, r.leaseID) {
			s.dropLeaseMessage(ctx, r, ref)
			return r.view(), nil
		}
		if err := storekit.CheckLease(ref, r.state, r.attempt, r.leaseID); err != nil {
			return nil, err
		}
		now := storekit.Now()
		o := storekit.Completed(r.view(), res, ref.Attempt, now)
		// A final job keeps the lease id, so a repeat is recognised
		// (SameCompletion); a retry's next attempt gets a lease of its own.
		final := convert.State(o.State).IsFinal()
		e := newExpr()
		u, err := s.settle(e, r, o, final, now)
		if err != nil {
			return nil, err
		}
		// The outcome depends on the job as read (cancel_requested, the
		// retries used), and the events on its head: neither may change
		// under us (every change of either bumps rev).
		cond := []string{leaseCond(e, ref), e.eq(aRev, num(r.rev))}
		if len(evs) > 0 {
			plan, err := s.plan(ctx, ref, r, evs)
			if err != nil {
				return nil, err
			}
			if err := s.putAll(ctx, s.cfg.EventsTable, s.eventItems(ref.JobID, r.keyBase(ref.Attempt), plan.Items)); err != nil {
				return nil, err
			}
			u.Set(aNextSeq, num(plan.Head.NextSequence)).Set(aNextLine, num(plan.Head.NextLine))
			cond = append(cond, headCond(u, r))
		}
		done, ok, err := s.updateJob(ctx, ref.JobID, u, and(cond...))
		if err != nil {
			return nil, err
		}
		if ok {
			// A retry waits SCHEDULED, without a message: the promotion
			// at its time sends one (see PromoteScheduled).
			s.dropLeaseMessage(ctx, done, ref)
			return done.view(), nil
		}
	}
	return nil, errBusy(ref.JobID)
}

// Release implements store.JobStore: the job is queued again (or made
// final) in DynamoDB, then its message shown again at once (or deleted), so
// another worker takes it without waiting for the lease to run out.
func (s *Store) Release(ctx context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, ref.JobID)
		if err != nil {
			return nil, err
		}
		if err := storekit.CheckLease(ref, r.state, r.attempt, r.leaseID); err != nil {
			return nil, err
		}
		now := storekit.Now()
		o := storekit.Released(r.view(), countAttempt, reason, now)
		e := newExpr()
		u, err := s.settle(e, r, o, false, now)
		if err != nil {
			return nil, err
		}
		done, ok, err := s.updateJob(ctx, ref.JobID, u, and(leaseCond(e, ref), e.eq(aRev, num(r.rev))))
		if err != nil {
			return nil, err
		}
		if ok {
			if convert.State(o.State).IsFinal() {
				s.dropLeaseMessage(ctx, done, ref)
			} else {
				s.hideLeaseMessage(ctx, done, ref, 0)
			}
			return done.view(), nil
		}
	}
	return nil, errBusy(ref.JobID)
}

// hideLeaseMessage shows the message a lease was granted with again after
// d (0: at once). An external job's lease came with no message.
func (s *Store) hideLeaseMessage(ctx context.Context, r *jobRec, ref store.LeaseRef, d time.Duration) {
	if r.external() {
		return
	}
	url, err := s.url(ctx, r)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("cannot show a released job's message again; it comes back when the lease would have ended", "job", r.id(), "error", err)
		}
		return
	}
	s.hide(ctx, url, ref.LeaseID, max(d, 0))
}

// dropLeaseMessage deletes the message a lease was granted with (none for
// an external job).
func (s *Store) dropLeaseMessage(ctx context.Context, r *jobRec, ref store.LeaseRef) {
	if r.external() {
		return
	}
	url, err := s.url(ctx, r)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("cannot delete a finished job's message", "job", r.id(), "error", err)
		}
		return
	}
	s.drop(ctx, url, ref.LeaseID)
}
