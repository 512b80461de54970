package awsstore

import (
	"context"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Append implements store.JobStore (doc.go, "Appending events", explains
// the protocol): read the job, write the items with BatchWriteItem under
// keys of the lease's attempt, then move the head over them with one
// update fenced by the lease. Readers only see items below the head.
func (s *Store) Append(ctx context.Context, ref store.LeaseRef, evs []events.Published) (store.Head, error) {
	for range raceRounds {
		r, err := s.getJob(ctx, ref.JobID)
		if err != nil {
			return store.Head{}, err
		}
		if err := storekit.CheckAppend(ref, r.state, r.attempt, r.leaseID); err != nil {
			return store.Head{}, err
		}
		plan, err := s.plan(ctx, ref, r, evs)
		if err != nil || len(plan.Items) == 0 {
			return r.head, err
		}
		if err := runHook(ctx, s.hooks.beforeWrite); err != nil {
			return store.Head{}, err
		}
		if err := s.putAll(ctx, s.cfg.EventsTable, s.eventItems(ref.JobID, r.keyBase(ref.Attempt), plan.Items)); err != nil {
			return store.Head{}, err
		}
		if err := runHook(ctx, s.hooks.afterWrite); err != nil {
			return store.Head{}, err
		}
		head, ok, err := s.commit(ctx, ref, r, plan.Head)
		if err != nil || ok {
			return head, err
		}
	}
	return store.Head{}, errBusy(ref.JobID)
}

// plan applies the append rules against the committed head and checks the
// repeated events against what is stored.
func (s *Store) plan(ctx context.Context, ref store.LeaseRef, r *jobRec, evs []events.Published) (storekit.AppendPlan, error) {
	if res := r.res; res != nil && res.lease != ref.LeaseID {
		// Only an Ingest call reserves now, and only in an external job,
		// which no lease of a worker holds.
		return storekit.AppendPlan{}, apierr.Errorf(spool.ErrThrottled, "job %s: another writer holds a reservation of its log; retry", ref.JobID)
	}
	plan, err := storekit.PlanAppend(r.head, ref.Attempt, r.spec.GetExecutionConfig().GetBatching(), s.Limits(), evs)
	if err != nil {
		return plan, err
	}
	if plan.Head.NextSequence > maxSequence {
		return storekit.AppendPlan{}, apierr.Errorf(spool.ErrInvalidArgument, "job %s: sequence %d is past the last this store keeps (%d)", ref.JobID, plan.Head.NextSequence-1, int64(maxSequence))
	}
	return plan, s.checkRepeats(ctx, r, ref.Attempt, plan.Repeats)
}

// checkRepeats checks that repeated events match the stored items.
func (s *Store) checkRepeats(ctx context.Context, r *jobRec, attempt int32, reps []storekit.Repeat) error {
	if len(reps) == 0 {
		return nil
	}
	base := r.keyBase(attempt)
	keys := make([]item, len(reps))
	for i, rep := range reps {
		keys[i] = eventKey(r.id(), base+rep.Sequence)
	}
	items, err := s.batchGet(ctx, s.cfg.EventsTable, keys, consistent(aSequence, aEndSeq, aAttempt))
	if err != nil {
		return err
	}
	stored := make(map[int64][2]int64, len(items))
	for _, it := range items {
		n := ints{it: it}
		key, end, attempt := n.get(aSequence), n.get(aEndSeq), n.get(aAttempt)
		if n.err != nil {
			return n.err
		}
		stored[key-base] = [2]int64{end, attempt}
	}
	for _, rep := range reps {
		st, found := stored[rep.Sequence]
		if err := rep.Check(st[0], int32(st[1]), found); err != nil {
			return err
		}
	}
	return nil
}

// commit moves the head from where r has it to to, with one update fenced
// by ref's lease; a reservation left by an Append of an older version of
// this store, under the same lease, goes with it. If the commit is
// refused, the job is read again to say why: ref's lease is gone
// (ErrStaleLease), the range was committed by a concurrent publish of the
// same events (ok, with the head as it is), or neither (ok=false: start
// over).
func (s *Store) commit(ctx context.Context, ref store.LeaseRef, r *jobRec, to store.Head) (store.Head, bool, error) {
	e := newExpr()
	u := newUpdate(e).
		Set(aNextSeq, num(to.NextSequence)).
		Set(aNextLine, num(to.NextLine)).
		Set(aUpdatedAt, num(storekit.Now().UnixMicro())).
		BumpRev()
	_, ok, err := s.updateJob(ctx, r.id(), u, and(appendCond(e, ref, r), headCond(u, r)))
	if err != nil || ok {
		return to, ok, err
	}
	now, err := s.getJob(ctx, ref.JobID)
	if err != nil {
		return store.Head{}, false, err
	}
	if err := storekit.CheckAppend(ref, now.state, now.attempt, now.leaseID); err != nil {
		return store.Head{}, false, err
	}
	if now.head.NextSequence >= to.NextSequence {
		return now.head, true, nil
	}
	return store.Head{}, false, nil
}

// claim is who reserves a range of a job's log, and the fence every step
// of its write carries: an Ingest call, whose lease (store.ExternalLease)
// every call of the job shares, claims under a token of its own.
type claim struct {
	// owner is recorded as the reservation's res_lease.
	owner string
	// fence is the condition that the claimant may still write to the job.
	fence func(e *expr) string
}

// reserveRange records [r.head, to) as c's pending reservation, if c's
// fence holds, the head is where r has it and no other reservation is
// pending. ok is false when it was not.
func (s *Store) reserveRange(ctx context.Context, r *jobRec, to store.Head, c claim) (ok bool, err error) {
	e := newExpr()
	u := newUpdate(e).
		Set(aResSeq, num(to.NextSequence)).
		Set(aResLine, num(to.NextLine)).
		Set(aResLease, str(c.owner)).
		Set(aResAt, num(storekit.Now().UnixMicro()))
	free := "attribute_not_exists(" + e.n(aResLease) + ")"
	_, ok, err = s.updateJob(ctx, r.id(), u, and(c.fence(e), e.eq(aNextSeq, num(r.head.NextSequence)), free))
	return ok, err
}

// commitRange moves the head from where r has it over c's reservation,
// ending at to, and bumps rev; ok is false when c no longer holds that
// reservation (or its fence fails).
func (s *Store) commitRange(ctx context.Context, r *jobRec, to store.Head, c claim) (*jobRec, bool, error) {
	e := newExpr()
	u := newUpdate(e).
		Set(aNextSeq, num(to.NextSequence)).
		Set(aNextLine, num(to.NextLine)).
		Set(aUpdatedAt, num(storekit.Now().UnixMicro())).
		Remove(reservationAttrs...).
		BumpRev()
	cond := and(c.fence(e), e.eq(aResLease, str(c.owner)),
		e.eq(aResSeq, num(to.NextSequence)), e.eq(aNextSeq, num(r.head.NextSequence)))
	return s.updateJob(ctx, r.id(), u, cond)
}

// headCond is the condition that the head and any pending reservation are
// as r has them, for an update u that moves the head: a reservation left
// by an Append of an older version of this store (plan checked it is the
// same lease's) goes with the move.
func headCond(u *update, r *jobRec) string {
	e := u.e
	if r.res == nil {
		return and(e.eq(aNextSeq, num(r.head.NextSequence)), "attribute_not_exists("+e.n(aResLease)+")")
	}
	u.Remove(reservationAttrs...)
	return and(e.eq(aNextSeq, num(r.head.NextSequence)), e.eq(aResLease, str(r.res.lease)), e.eq(aResSeq, num(r.res.seq)))
}

// appendCond is the fence of an append under ref: ref is the job's current
// lease, or, when r (the job as read) was queued again after ref's lease ran
// out, the job is still queued on ref's attempt (no later attempt began).
func appendCond(e *expr, ref store.LeaseRef, r *jobRec) string {
	if r.state == spoolv1.JobState_JOB_STATE_QUEUED {
		return and(isJob(e), e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_QUEUED))), e.eq(aAttempt, num(ref.Attempt)))
	}
	return leaseCond(e, ref)
}

// eventKey is the key of an event item.
func eventKey(jobID string, seq int64) item {
	return item{aJobID: str(jobID), aSequence: num(seq)}
}

// eventItems are the events table items of planned items, keyed at their
// sequence plus base (see keyBase).
func (s *Store) eventItems(jobID string, base int64, items []storekit.Item) []item {
	ttl := num(time.Now().Add(s.cfg.eventsTTL()).Unix())
	out := make([]item, len(items))
	for i, it := range items {
		m := eventKey(jobID, base+it.Sequence)
		m[aEndSeq] = num(it.EndSequence)
		m[aEventType] = num(int32(it.Type))
		m[aAttempt] = num(it.Attempt)
		m[aPayload] = bin(it.Payload)
		m[aTTL] = ttl
		m[aTime] = num(it.Time.UnixMilli())
		if it.LineCount > 0 {
			m[aFirstLine] = num(it.FirstLine)
			m[aLastLine] = num(it.SeekLine)
		}
		out[i] = m
	}
	return out
}
