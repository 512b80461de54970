package awsstore

import (
	"context"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Append implements store.JobStore in three steps (doc.go explains why):
// reserve the range past the committed head with a conditional update
// fenced by the lease, write the items with BatchWriteItem, commit the
// head with another fenced update. Readers only see committed items.
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
		ok, err := s.reserve(ctx, ref, r, plan)
		if err != nil {
			return store.Head{}, err
		}
		if !ok {
			continue // the job changed since we read it: decide again
		}
		if err := runHook(ctx, s.hooks.afterReserve); err != nil {
			return store.Head{}, err
		}
		if err := s.putAll(ctx, s.cfg.EventsTable, s.eventItems(ref.JobID, plan.Items)); err != nil {
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
	plan, err := storekit.PlanAppend(r.head, ref.Attempt, r.spec.GetExecutionConfig().GetBatching(), s.Limits(), evs)
	if err != nil {
		// Events that continue an unfinished publish of this lease: it is
		// still being stored (or died, and the worker will resend it).
		if res := r.res; res != nil && res.lease == ref.LeaseID && len(evs) > 0 && evs[0].Sequence >= res.seq {
			return plan, apierr.Errorf(spool.ErrThrottled, "job %s: sequences %d-%d of this attempt are still being stored; retry",
				ref.JobID, r.head.NextSequence, res.seq-1)
		}
		return plan, err
	}
	if err := s.checkRepeats(ctx, ref.JobID, plan.Repeats); err != nil {
		return plan, err
	}
	// A pending reservation here is this lease's (a new lease turns any
	// other into a hole): an earlier publish that died, or is slow, after
	// reserving. Taking it over is safe because the worker resends the same
	// events for the same sequences, however it cuts them into calls: a
	// worker restarted after a cut-off publish may resend a shorter prefix
	// first. reserve removes what the old publish wrote that this one does
	// not rewrite, so nothing of it is left past the head.
	return plan, nil
}

// checkRepeats checks that repeated events match the stored items.
func (s *Store) checkRepeats(ctx context.Context, jobID string, reps []storekit.Repeat) error {
	if len(reps) == 0 {
		return nil
	}
	keys := make([]item, len(reps))
	for i, rep := range reps {
		keys[i] = eventKey(jobID, rep.Sequence)
	}
	items, err := s.batchGet(ctx, s.cfg.EventsTable, keys, consistent(aSequence, aEndSeq, aAttempt))
	if err != nil {
		return err
	}
	stored := make(map[int64][2]int64, len(items))
	for _, it := range items {
		n := ints{it: it}
		seq, end, attempt := n.get(aSequence), n.get(aEndSeq), n.get(aAttempt)
		if n.err != nil {
			return n.err
		}
		stored[seq] = [2]int64{end, attempt}
	}
	for _, rep := range reps {
		st, found := stored[rep.Sequence]
		if err := rep.Check(st[0], int32(st[1]), found); err != nil {
			return err
		}
	}
	return nil
}

// reserve claims [r.head, plan.Head) for ref, if ref is still the lease,
// the head has not moved, and no other lease holds a reservation. Taking
// over a reservation of the same lease first removes any item it wrote
// that this plan does not rewrite.
func (s *Store) reserve(ctx context.Context, ref store.LeaseRef, r *jobRec, plan storekit.AppendPlan) (bool, error) {
	if r.res != nil {
		if err := s.clearStrays(ctx, ref.JobID, r.head.NextSequence, r.res.seq, plan.Items); err != nil {
			return false, err
		}
	}
	return s.reserveRange(ctx, r, plan.Head, appendClaim(ref, r))
}

// commit moves the head over the reserved range. If the commit is refused,
// the job is read again to say why: ref's lease is gone (ErrStaleLease),
// the range was committed by a concurrent publish of the same events (ok,
// with the head as it is), or neither (ok=false: start over).
func (s *Store) commit(ctx context.Context, ref store.LeaseRef, r *jobRec, to store.Head) (store.Head, bool, error) {
	_, ok, err := s.commitRange(ctx, r, to, appendClaim(ref, r))
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
// of its write carries. Append claims under its lease; an Ingest call,
// whose lease (store.ExternalLease) every call of the job shares, under a
// token of its own.
type claim struct {
	// owner is recorded as the reservation's res_lease.
	owner string
	// fence is the condition that the claimant may still write to the job.
	fence func(e *expr) string
	// retake lets the claimant reserve over a pending reservation of the
	// same owner: a worker resends the events of a publish that died, so
	// the earlier call's range may be rewritten. No two Ingest calls share
	// a token, so none ever retakes.
	retake bool
}

func appendClaim(ref store.LeaseRef, r *jobRec) claim {
	return claim{owner: ref.LeaseID, fence: func(e *expr) string { return appendCond(e, ref, r) }, retake: true}
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
	if c.retake {
		free = "(" + free + " OR " + e.eq(aResLease, str(c.owner)) + ")"
	}
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

// appendCond is the fence of an append under ref: ref is the job's current
// lease, or, when r (the job as read) was queued again after ref's lease ran
// out, the job is still queued on ref's attempt (no later attempt began).
func appendCond(e *expr, ref store.LeaseRef, r *jobRec) string {
	if r.state == spoolv1.JobState_JOB_STATE_QUEUED {
		return and(isJob(e), e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_QUEUED))), e.eq(aAttempt, num(ref.Attempt)))
	}
	return leaseCond(e, ref)
}

// clearStrays deletes the items stored in [from, to) at sequences the plan
// does not write: left by an earlier publish that the worker resent
// differently cut into batches. (The worker resends events as they were,
// so normally there are none.)
func (s *Store) clearStrays(ctx context.Context, jobID string, from, to int64, plan []storekit.Item) error {
	seqs, err := s.storedSeqs(ctx, jobID, from, to)
	if err != nil {
		return err
	}
	var strays []item
	for _, seq := range seqs {
		if !slices.ContainsFunc(plan, func(p storekit.Item) bool { return p.Sequence == seq }) {
			strays = append(strays, eventKey(jobID, seq))
		}
	}
	if len(strays) == 0 {
		return nil
	}
	s.log.Warn("removing items of an unfinished publish that the retry does not rewrite", "job", jobID, "items", len(strays))
	return s.deleteAll(ctx, s.cfg.EventsTable, strays)
}

// storedSeqs lists the sequences of the items stored in [from, to) of a
// job's log, committed or not, reading keys only.
func (s *Store) storedSeqs(ctx context.Context, jobID string, from, to int64) ([]int64, error) {
	if from >= to {
		return nil, nil
	}
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.EventsTable),
		KeyConditionExpression: aws.String(and(e.eq(aJobID, str(jobID)),
			e.n(aSequence)+" BETWEEN "+e.v(num(from))+" AND "+e.v(num(to-1)))),
		ProjectionExpression: aws.String(e.n(aJobID) + ", " + e.n(aSequence)),
		ConsistentRead:       aws.Bool(true),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	var seqs []int64
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "list the items of job %s", jobID)
		}
		for _, it := range page.Items {
			seq, err := getInt(it, aSequence)
			if err != nil {
				return nil, err
			}
			seqs = append(seqs, seq)
		}
	}
	return seqs, nil
}

// eventKey is the key of an event item.
func eventKey(jobID string, seq int64) item {
	return item{aJobID: str(jobID), aSequence: num(seq)}
}

// eventItems are the events table items of planned items.
func (s *Store) eventItems(jobID string, items []storekit.Item) []item {
	ttl := num(time.Now().Add(s.cfg.eventsTTL()).Unix())
	out := make([]item, len(items))
	for i, it := range items {
		m := eventKey(jobID, it.Sequence)
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
