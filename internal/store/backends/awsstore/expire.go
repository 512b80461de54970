package awsstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// settleExpired applies storekit.Expired to a running job whose lease ran
// out: cancelled or failed (final), or queued again. Only the lease r was
// read with is settled: a heartbeat or a new lease meanwhile makes the
// condition fail (ok=false) and leaves the job alone. A re-queued job keeps
// its SQS message, which SQS shows again when its visibility ends.
func (s *Store) settleExpired(ctx context.Context, r *jobRec, now time.Time) (final, ok bool, err error) {
	return s.endLease(ctx, r, storekit.Expired(r.view(), now), now)
}

// endLease takes r's expired lease away, leaving the job as o says.
func (s *Store) endLease(ctx context.Context, r *jobRec, o storekit.Outcome, now time.Time) (final, ok bool, err error) {
	e := newExpr()
	u, err := s.settle(e, r, o, false, now)
	if err != nil {
		return false, false, err
	}
	cond := and(isJob(e), e.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING))),
		e.eq(aAttempt, num(r.attempt)), e.eq(aLeaseExpires, num(r.leaseExpires.UnixMicro())),
		e.n(aLeaseExpires)+" <= "+e.v(num(now.UnixMicro())))
	_, ok, err = s.updateJob(ctx, r.id(), u, cond)
	return convert.State(o.State).IsFinal(), ok, err
}

// ExpireLeases implements store.JobStore. It gives grace after an outage
// (graceAfterOutage), looks into the dead-letter queues (see
// deadletter.go), then settles the running jobs whose lease ran out, found
// through the leases index.
func (s *Store) ExpireLeases(ctx context.Context, sw store.Sweep) (store.Swept, error) {
	var out store.Swept
	var err error
	if out.Graced, err = s.graceAfterOutage(ctx, sw); err != nil {
		return out, err
	}
	if out.Settled, err = s.drainDeadLetters(ctx); err != nil {
		return out, err
	}
	now := storekit.Now()
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexLeases),
		KeyConditionExpression:    aws.String(and(e.eq(aLeasePart, str(leasePart)), e.n(aLeaseExpires)+" <= "+e.v(num(now.UnixMicro())))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return out, awsErr(err, "find expired leases")
		}
		for _, it := range page.Items {
			// The index may lag the table: decide on the job as it is.
			r, err := s.getJob(ctx, getStr(it, aJobID))
			if err != nil {
				return out, err
			}
			// An external job's lease never expires (its item has no expiry,
			// so the index should not hold it either).
			if r.state != spoolv1.JobState_JOB_STATE_RUNNING || r.external() || r.leaseExpires.After(now) {
				continue
			}
			_, ok, err := s.settleExpired(ctx, r, now)
			if err != nil {
				return out, err
			}
			if ok {
				out.Settled++
			}
		}
	}
	return out, nil
}
