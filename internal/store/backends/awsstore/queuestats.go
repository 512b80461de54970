package awsstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// The work of QueueStats, per queue and call. doc.go (Queues) says what
// the counts are exact for and what they miss past these bounds.
const (
	// statsScan bounds the by-queue index entries one queue's count
	// examines: about 1 MB of index, or 70 read units.
	statsScan = 5000
	// statsEndedMargin: a job counts as ended since `since` by its end
	// (jobRec.endedAt), which the index does not hold; the jobs created
	// before since-statsEndedMargin are taken as ended before it, unread,
	// and the final ones created in the margin are read to tell.
	statsEndedMargin = time.Hour
	// statsWorkers is how many queues are counted at once.
	statsWorkers = 4
)

// register records in the queue registry that a queue has (or is about
// to have) jobs, once per queue and Store: QueueStats lists the queues it
// names. Failing is not the caller's failure (the job can still be made),
// so it only warns, and the next job of the queue tries again.
func (s *Store) register(ctx context.Context, queue string) {
	if err := s.registerQueue(ctx, queue); err != nil {
		s.log.Warn("cannot record a queue in the queue registry; QueueStats may miss it", "queue", queue, "error", err)
	}
}

// registerQueue adds a queue to the registry (a string set, so adding
// twice is harmless) unless this Store did before.
func (s *Store) registerQueue(ctx context.Context, queue string) error {
	if s.queues.registered(queue) {
		return nil
	}
	e := newExpr()
	u := newUpdate(e).Set(aKind, str(kindQueues)).Add(aNames, &types.AttributeValueMemberSS{Value: []string{queue}})
	if _, err := s.updateItem(ctx, jobKey(queuesKey), u, ""); err != nil {
		return awsErr(err, "record queue %q", queue)
	}
	s.queues.setRegistered(queue)
	return nil
}

// updateItem applies u to a jobs-table item (of any kind) if cond holds
// ("" for no condition); ok is false when it did not.
func (s *Store) updateItem(ctx context.Context, key item, u *update, cond string) (ok bool, err error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		Key:                       key,
		UpdateExpression:          aws.String(u.String()),
		ExpressionAttributeNames:  u.e.names,
		ExpressionAttributeValues: u.e.valuesOrNil(),
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	_, err = s.clients.db.UpdateItem(ctx, in)
	if conditionFailed(err) {
		return false, nil
	}
	return err == nil, err
}

// pauseKey is the key of a paused queue's item.
func pauseKey(queue string) item { return jobKey(queueKeyPrefix + queue) }

// SetQueuePaused implements store.QueueStore. A pause is an item of its
// own, written with if_not_exists so a second pause keeps the first time;
// resuming deletes it. The queue goes into the registry first, so a
// paused queue that no job names is listed too.
func (s *Store) SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error {
	if !paused {
		_, err := s.clients.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.cfg.JobsTable), Key: pauseKey(name)})
		if err != nil {
			return awsErr(err, "resume queue %q", name)
		}
		return nil
	}
	if err := s.registerQueue(ctx, name); err != nil {
		return err
	}
	e := newExpr()
	u := newUpdate(e).Set(aKind, str(kindQueue)).Set(aQueue, str(name)).
		SetExpr(aPausedAt, "if_not_exists("+e.n(aPausedAt)+", "+e.v(num(at.UnixMicro()))+")")
	if _, err := s.updateItem(ctx, pauseKey(name), u, ""); err != nil {
		return awsErr(err, "pause queue %q", name)
	}
	return nil
}

// QueuePaused implements store.QueueStore: one strongly consistent
// GetItem of the queue's pause item, so a pause holds from the next lease
// on, on every server.
func (s *Store) QueuePaused(ctx context.Context, name string) (bool, error) {
	it, err := s.getItem(ctx, pauseKey(name))
	if err != nil {
		return false, err
	}
	return it != nil && getStr(it, aKind) == kindQueue, nil
}

// QueueStats implements store.QueueStore. The queues are those of the
// registry, the configuration and this Store's own lookups (queues used
// before the registry existed), less those that have no job, no pause and
// no max_running;
// each is counted from its by-queue index (see queueCounts).
func (s *Store) QueueStats(ctx context.Context, since time.Time) ([]store.QueueStats, error) {
	names, err := s.queueNames(ctx)
	if err != nil {
		return nil, err
	}
	paused, err := s.pausedQueues(ctx, names)
	if err != nil {
		return nil, err
	}
	limits, err := s.limitsOf(ctx, names)
	if err != nil {
		return nil, err
	}
	stats := make([]store.QueueStats, len(names))
	found := make([]bool, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, statsWorkers)
	var wg sync.WaitGroup
	for i, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			stats[i], found[i], errs[i] = s.queueCounts(ctx, name, since)
		})
	}
	wg.Wait()
	out := make([]store.QueueStats, 0, len(names))
	for i, st := range stats {
		if errs[i] != nil {
			return nil, errs[i]
		}
		at, isPaused := paused[st.Name]
		limit := limits[st.Name]
		if !found[i] && !isPaused && limit == 0 {
			continue // no job names it (any more), nor a pause, nor a limit
		}
		st.Paused, st.PausedAt, st.MaxRunning = isPaused, at, limit
		out = append(out, st)
	}
	return out, nil
}

// queueNames lists, sorted, every queue that may have jobs: the
// registry's, and the configured and looked-up ones, which jobs made
// before the registry existed may name.
func (s *Store) queueNames(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	it, err := s.getItem(ctx, jobKey(queuesKey))
	if err != nil {
		return nil, err
	}
	if ss, ok := it[aNames].(*types.AttributeValueMemberSS); ok {
		for _, n := range ss.Value {
			set[n] = true
		}
	}
	for _, n := range s.cfg.QueueNames {
		set[n] = true
	}
	for n := range s.cfg.Queues {
		set[n] = true
	}
	for n := range s.queues.known() {
		set[n] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// pausedQueues reads the pause items of the named queues: when each
// paused one was paused.
func (s *Store) pausedQueues(ctx context.Context, names []string) (map[string]time.Time, error) {
	keys := make([]item, len(names))
	for i, n := range names {
		keys[i] = pauseKey(n)
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistent(aJobID, aKind, aPausedAt))
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(items))
	for _, it := range items {
		if getStr(it, aKind) != kindQueue {
			continue
		}
		at, err := getInt(it, aPausedAt)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(getStr(it, aJobID), queueKeyPrefix)] = time.UnixMicro(at).UTC()
	}
	return out, nil
}

// queueCounts counts one queue's jobs from its by-queue index, newest
// first, reading at most statsScan entries: the queued and running ones
// (the index holds each job's state), the oldest queued (by created_key),
// and the final ones created since `since` (ended since, as a job ends
// after its creation). Final jobs created in the statsEndedMargin before
// `since` are read to see whether they ended since; older ones are not.
// found reports whether the queue has any job at all.
func (s *Store) queueCounts(ctx context.Context, name string, since time.Time) (st store.QueueStats, found bool, err error) {
	st.Name = name
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.cfg.JobsTable),
		IndexName:              aws.String(indexByQueue),
		KeyConditionExpression: aws.String(e.eq(aQueue, str(name))),
		ProjectionExpression:   aws.String(e.n(aJobID) + ", " + e.n(aCreatedKey) + ", " + e.n(aState)),
		ScanIndexForward:       aws.Bool(false),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	margin := since.Add(-statsEndedMargin)
	var check []string // final, created in the margin: ended since or before
	for examined := 0; examined < s.statsScan; {
		in.Limit = aws.Int32(int32(s.statsScan - examined))
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			return st, false, awsErr(err, "count the jobs of queue %q", name)
		}
		for _, it := range page.Items {
			examined++
			found = true
			en, err := parseCreatedKey(getStr(it, aCreatedKey))
			if err != nil {
				return st, false, err
			}
			state, err := getInt(it, aState)
			if err != nil {
				return st, false, err
			}
			switch js := spoolv1.JobState(state); {
			case js == spoolv1.JobState_JOB_STATE_SCHEDULED:
				st.Scheduled++
			case js == spoolv1.JobState_JOB_STATE_QUEUED:
				st.Queued++
				if st.OldestQueued.IsZero() || en.created.Before(st.OldestQueued) {
					st.OldestQueued = en.created
				}
			case js == spoolv1.JobState_JOB_STATE_RUNNING:
				st.Running++
			case !convert.State(js).IsFinal():
			case !en.created.Before(since):
				countEnded(&st, js)
			case !en.created.Before(margin):
				check = append(check, en.id)
			}
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	if len(check) > 0 {
		jobs, err := s.getJobs(ctx, check)
		if err != nil {
			return st, false, err
		}
		for _, r := range jobs {
			if convert.State(r.state).IsFinal() && !r.endedAt().Before(since) {
				countEnded(&st, r.state)
			}
		}
	}
	return st, found, nil
}

// countEnded adds a job that ended in state js to st.
func countEnded(st *store.QueueStats, js spoolv1.JobState) {
	switch js {
	case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		st.Succeeded++
	case spoolv1.JobState_JOB_STATE_FAILED:
		st.Failed++
	case spoolv1.JobState_JOB_STATE_CANCELLED:
		st.Cancelled++
	}
}
