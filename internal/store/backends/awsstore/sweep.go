package awsstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The time of the last sweep of leases (store.Sweep) is one jobs-table
// item, so that every server sees an outage of DynamoDB there, whether or
// not it saw one itself.
const (
	aSweptAt   = "swept_at" // N, Unix microseconds
	kindSweeps = "sweeps"
	sweepsKey  = "sweeps#last"
)

// graceAfterOutage is a sweep's first step: when the last sweep recorded
// is too old, or this server saw DynamoDB fail (sw.Since), the running
// leases alive then get sw.Grace from now; then this sweep is recorded.
// Without transactions the order is what keeps servers right: a sweep
// records itself only once its grace is written, so one that reads a
// recent record can settle what it finds expired.
//
// What "away" means here: DynamoDB, where leases live, could not be
// reached. SQS keeps running its visibility timeouts, so messages of
// graced jobs show up again meanwhile; Dequeue finds their leases current
// and hides them until the leases end, as for any duplicate delivery.
func (s *Store) graceAfterOutage(ctx context.Context, sw store.Sweep) (int, error) {
	it, err := s.getItem(ctx, jobKey(sweepsKey))
	if err != nil {
		return 0, err
	}
	at, err := getInt(it, aSweptAt)
	if err != nil {
		return 0, err
	}
	var last time.Time
	if at > 0 {
		last = time.UnixMicro(at).UTC()
	}
	now := storekit.Now()
	n := 0
	if from, ok := storekit.GraceFrom(last, sw, now); ok {
		if n, err = s.graceLeases(ctx, from, now.Add(sw.Grace)); err != nil {
			return n, err
		}
	}
	// A later record, from another server, stays.
	e := newExpr()
	u := newUpdate(e).Set(aKind, str(kindSweeps)).Set(aSweptAt, num(now.UnixMicro()))
	cond := "attribute_not_exists(" + e.n(aSweptAt) + ") OR " + e.n(aSweptAt) + " < " + e.v(num(now.UnixMicro()))
	if _, err := s.updateItem(ctx, jobKey(sweepsKey), u, cond); err != nil {
		return n, awsErr(err, "record the sweep of leases")
	}
	return n, nil
}

// graceLeases lengthens to until the running leases alive at from
// (storekit.Graced), found through the leases index. Each is a
// conditional update on the lease as read, so a heartbeat or a settling
// meanwhile wins.
func (s *Store) graceLeases(ctx context.Context, from, until time.Time) (int, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.JobsTable),
		IndexName: aws.String(indexLeases),
		KeyConditionExpression: aws.String(and(e.eq(aLeasePart, str(leasePart)),
			e.n(aLeaseExpires)+" BETWEEN "+e.v(num(from.UnixMicro()))+" AND "+e.v(num(until.UnixMicro()-1)))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	n := 0
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, awsErr(err, "find the leases to grace")
		}
		for _, it := range page.Items {
			// The index may lag the table: decide on the job as it is.
			r, err := s.getJob(ctx, getStr(it, aJobID))
			if err != nil {
				return n, err
			}
			if r.state != spoolv1.JobState_JOB_STATE_RUNNING || r.external() || !storekit.Graced(r.leaseExpires, from, until) {
				continue
			}
			ue := newExpr()
			u := newUpdate(ue).Set(aLeaseExpires, num(until.UnixMicro()))
			cond := and(isJob(ue), ue.eq(aState, num(int32(spoolv1.JobState_JOB_STATE_RUNNING))),
				ue.eq(aAttempt, num(r.attempt)), ue.eq(aLeaseExpires, num(r.leaseExpires.UnixMicro())))
			_, ok, err := s.updateJob(ctx, r.id(), u, cond)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
	}
	return n, nil
}
