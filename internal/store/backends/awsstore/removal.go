package awsstore

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The work of one EndedBefore call: at most endedRounds queries of
// endedScan by-time index entries, and a strongly consistent read of the
// final ones among them.
const (
	endedScan   = 200
	endedRounds = 5
)

// DeleteJob implements store.RemovalStore. Without transactions it
// deletes in an order that a crash anywhere leaves retryable: first what
// points at the job from elsewhere (its source's record), then what it
// owns (accepted events and their markers, its log, its request marker),
// and the job item last, on condition that it is still final. Until then
// the job is there, final, and a second DeleteJob does it all again.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	r, err := s.getJob(ctx, id)
	if err != nil {
		return err
	}
	if !convert.State(r.state).IsFinal() {
		return storekit.NotFinished(id, r.state)
	}
	if r.external() {
		if err := s.unlistSourceJob(ctx, r); err != nil {
			return err
		}
		if err := s.deleteAccepted(ctx, r); err != nil {
			return err
		}
	}
	if err := s.deletePartition(ctx, id, 1); err != nil {
		return err
	}
	if rid := r.spec.GetRequestId(); rid != "" {
		// Only the marker that still names this job: an expired one may
		// have been taken over by a new job of the same request id.
		e := newExpr()
		_, err := s.clients.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(s.cfg.JobsTable),
			Key:                       markerKey(rid),
			ConditionExpression:       aws.String(and(e.eq(aKind, str(kindRequest)), e.eq(aTarget, str(id)))),
			ExpressionAttributeNames:  e.names,
			ExpressionAttributeValues: e.values,
		})
		if err != nil && !conditionFailed(err) {
			return awsErr(err, "delete the request id of job %s", id)
		}
	}
	e := newExpr()
	_, err = s.clients.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Key:                       jobKey(id),
		ConditionExpression:       aws.String(and(isJob(e), e.eq(aState, num(int32(r.state))))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if conditionFailed(err) {
		return store.JobNotFound(id) // another call deleted it first
	}
	if err != nil {
		return awsErr(err, "delete job %s", id)
	}
	// Watchers here wake now; other servers' find the job gone at their
	// next poll.
	s.watch.changed(id, r.rev+1)
	return nil
}

// deletePartition deletes every events-table item of one partition from
// sequence from on: a job's log, or its accepted events.
func (s *Store) deletePartition(ctx context.Context, part string, from int64) error {
	seqs, err := s.storedSeqs(ctx, part, from, math.MaxInt64)
	if err != nil {
		return err
	}
	keys := make([]item, len(seqs))
	for i, seq := range seqs {
		keys[i] = eventKey(part, seq)
	}
	return s.deleteAll(ctx, s.cfg.EventsTable, keys)
}

// deleteAccepted deletes what Ingest kept for an external job beside its
// log: the markers of the events it accepted that still point at it, and
// the accepted events themselves. (A marker of a job that is gone counts
// as no marker, so the source's events are new again once the job item is
// deleted whatever is left; this frees the space.)
func (s *Store) deleteAccepted(ctx context.Context, r *jobRec) error {
	k := sourceKeyOf(r.spec.GetParams().GetExternal().GetSource())
	seen := map[string]bool{}
	var keys []item
	for a, err := range s.Accepted(ctx, r.id()) {
		if err != nil {
			return err
		}
		if !seen[a.ID] { // a batch may not name one key twice
			seen[a.ID] = true
			keys = append(keys, seenKey(k, a.ID))
		}
	}
	markers, err := s.batchGet(ctx, s.cfg.EventsTable, keys, consistent(aJobID, aSequence, aTarget))
	if err != nil {
		return err
	}
	var mine []item
	for _, it := range markers {
		if getStr(it, aTarget) == r.id() {
			mine = append(mine, eventKey(getStr(it, aJobID), 0))
		}
	}
	if err := s.deleteAll(ctx, s.cfg.EventsTable, mine); err != nil {
		return err
	}
	return s.deletePartition(ctx, acceptedPart(r.id()), 0)
}

// unlistSourceJob takes an external job out of its source's record: out
// of the ids it lists, and, when it is the newest, out of newest, so the
// source's next events open a new job instead of bringing this one back
// from the record (which sourceJob does for a job the record names and
// that does not exist). The record's version is the compare-and-set.
func (s *Store) unlistSourceJob(ctx context.Context, r *jobRec) error {
	k := sourceKeyOf(r.spec.GetParams().GetExternal().GetSource())
	for range raceRounds {
		rec, err := s.getSource(ctx, k)
		if err != nil || rec == nil {
			return err
		}
		var list []types.AttributeValue
		for _, id := range rec.jobs {
			if id != r.id() {
				list = append(list, str(id))
			}
		}
		if rec.newest != r.id() && len(list) == len(rec.jobs) {
			return nil // not listed
		}
		e := newExpr()
		u := newUpdate(e).Set(aJobs, &types.AttributeValueMemberL{Value: list})
		if rec.newest == r.id() {
			u.Remove(aNewest)
		}
		ok, err := s.updateItem(ctx, k.recordKey(), u, e.eq(aVersion, num(rec.version)))
		if err != nil {
			return awsErr(err, "take job %s out of its source's record", r.id())
		}
		if ok {
			return nil
		}
	}
	return errBusy(r.id())
}

// sweepCursor is where a Store's EndedBefore goes on from: the by-time
// entry it examined last (nil: the oldest).
type sweepCursor struct {
	mu    sync.Mutex
	after *listEntry
}

// EndedBefore implements store.RemovalStore. It queries the by-time index
// oldest first, below created_key t (a job ends after its creation), keeps
// the final ones (the index holds state), and reads those to check when
// they ended (jobRec.endedAt). Each call goes on from where the last one
// stopped, and starts over from the oldest once at the end: a front of old
// jobs that are not to go (a paused queue's backlog, say) then never holds
// the sweep up. Ids come oldest created first.
func (s *Store) EndedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	s.sweep.mu.Lock()
	defer s.sweep.mu.Unlock()
	after := s.sweep.after
	if after != nil && !after.created.Before(t) {
		after = nil // the cursor lies past what this call looks at
	}
	fromStart := after == nil
	var out []string
	taken := map[string]bool{} // after starting over, the walk may meet them again
	for range s.endedRounds {
		page, err := s.endedPage(ctx, t, after)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(page.Items))
		for i, it := range page.Items {
			ids[i] = getStr(it, aJobID)
		}
		jobs, err := s.getJobs(ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			en, err := parseCreatedKey(getStr(it, aCreatedKey))
			if err != nil {
				return nil, err
			}
			after = &en
			if r, ok := jobs[en.id]; ok && convert.State(r.state).IsFinal() && r.endedAt().Before(t) && !taken[en.id] {
				taken[en.id] = true
				if out = append(out, en.id); len(out) == limit {
					s.sweep.after = after
					return out, nil
				}
			}
		}
		if page.LastEvaluatedKey == nil {
			after = nil
			if fromStart {
				break // examined everything before t
			}
			fromStart = true
			continue
		}
		last, err := parseCreatedKey(getStr(page.LastEvaluatedKey, aCreatedKey))
		if err != nil {
			return nil, err
		}
		after = &last
	}
	s.sweep.after = after
	return out, nil
}

// endedPage is one query of EndedBefore: up to endedScan by-time entries
// created before t, after the entry after (nil: from the oldest), of
// which those in a final state come back.
func (s *Store) endedPage(ctx context.Context, t time.Time, after *listEntry) (*dynamodb.QueryOutput, error) {
	e := newExpr()
	finals := []string{
		e.v(num(int32(spoolv1.JobState_JOB_STATE_SUCCEEDED))),
		e.v(num(int32(spoolv1.JobState_JOB_STATE_FAILED))),
		e.v(num(int32(spoolv1.JobState_JOB_STATE_CANCELLED))),
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.JobsTable),
		IndexName:              aws.String(indexByTime),
		KeyConditionExpression: aws.String(and(e.eq(aListPart, str(listPart)), e.n(aCreatedKey)+" < "+e.v(str(createdKey(t, ""))))),
		FilterExpression:       aws.String(e.n(aState) + " IN (" + strings.Join(finals, ", ") + ")"),
		ProjectionExpression:   aws.String(e.n(aJobID) + ", " + e.n(aCreatedKey)),
		ScanIndexForward:       aws.Bool(true),
		Limit:                  aws.Int32(int32(s.endedScan)),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	if after != nil {
		in.ExclusiveStartKey = item{
			aJobID:      str(after.id),
			aListPart:   str(listPart),
			aCreatedKey: str(createdKey(after.created, after.id)),
		}
	}
	out, err := s.clients.db.Query(ctx, in)
	if err != nil {
		return nil, awsErr(err, "find the jobs that ended before %v", t)
	}
	return out, nil
}

// storedSeqs lists the keys (sequences, in a job's log; see keyBase) of
// the items stored in [from, to) of an events-table partition, committed
// or not, reading keys only.
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
