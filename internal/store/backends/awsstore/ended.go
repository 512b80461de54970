package awsstore

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// endedFresh is how long EndedPerMinute answers a queue from its last
// walk of the same window instead of walking again. The chart it feeds
// counts by the minute and the queues page asks every few seconds while
// it is open: a minute keeps that to one walk a minute per server, and a
// job's end shows in the chart at most about a minute late.
const endedFresh = time.Minute

// endedCache is what EndedPerMinute last found for each queue: the ends
// of its jobs since a time, and when it looked.
type endedCache struct {
	fresh time.Duration // endedFresh; tests change it

	mu      sync.Mutex
	byQueue map[string]endedWalk
}

// endedWalk is one walk's finding: the jobs of a queue that ended since.
type endedWalk struct {
	since, at time.Time
	ends      []jobEnd
}

// jobEnd is when a job ended and in which state.
type jobEnd struct {
	at    time.Time
	state spoolv1.JobState
}

// get returns what a walk of queue since since found, if one did within
// the last c.fresh.
func (c *endedCache) get(queue string, since time.Time) ([]jobEnd, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.byQueue[queue]
	if !ok || !w.since.Equal(since) || time.Since(w.at) >= c.fresh {
		return nil, false
	}
	return w.ends, true
}

// put keeps what a walk of queue since since, begun at at, found, in place
// of what an earlier walk of it found (of this window or another: the
// service asks of the last hour, so an older window is not asked again).
func (c *endedCache) put(queue string, since, at time.Time, ends []jobEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byQueue == nil {
		c.byQueue = map[string]endedWalk{}
	}
	c.byQueue[queue] = endedWalk{since: since, at: at, ends: ends}
}

// EndedPerMinute implements store.QueueStore. When a job ended is not in
// any index, so each queue's by-queue index is walked newest first down to
// the jobs created statsEndedMargin before since (a job ends after its
// creation; one that ran longer than the margin is missed, as QueueStats
// misses it), at most statsScan entries, and its final jobs are read
// (BatchGetItem) for their end. doc.go (Queues) says what that costs.
// What a walk of a queue found answers the calls of the same since for
// the next endedFresh (the registry of queues is read each time: a new
// queue shows at once).
func (s *Store) EndedPerMinute(ctx context.Context, since time.Time) ([]store.EndedMinute, error) {
	names, err := s.queueNames(ctx)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		t    store.EndedTally
		errs = make([]error, len(names))
		sem  = make(chan struct{}, statsWorkers)
		wg   sync.WaitGroup
	)
	for i, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ends, err := s.endsSince(ctx, name, since)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			for _, e := range ends {
				t.Add(name, e.at, e.state, 1)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return t.Minutes(), nil
}

// endsSince is when each job of a queue that ended at or after since
// ended, of those created from since-statsEndedMargin on: what a walk
// found within endedFresh, or a new walk.
func (s *Store) endsSince(ctx context.Context, name string, since time.Time) ([]jobEnd, error) {
	if ends, ok := s.ended.get(name, since); ok {
		return ends, nil
	}
	at := time.Now()
	jobs, err := s.endedSince(ctx, name, since)
	if err != nil {
		return nil, err
	}
	ends := make([]jobEnd, len(jobs))
	for i, r := range jobs {
		ends[i] = jobEnd{at: r.endedAt(), state: r.state}
	}
	s.ended.put(name, since, at, ends)
	return ends, nil
}

// endedSince reads the jobs of a queue that ended at or after since, of
// those created from since-statsEndedMargin on.
func (s *Store) endedSince(ctx context.Context, name string, since time.Time) ([]*jobRec, error) {
	e := newExpr()
	in := &dynamodb.QueryInput{
		TableName: aws.String(s.cfg.JobsTable),
		IndexName: aws.String(indexByQueue),
		KeyConditionExpression: aws.String(and(e.eq(aQueue, str(name)),
			e.n(aCreatedKey)+" >= "+e.v(str(createdKey(since.Add(-statsEndedMargin), ""))))),
		ProjectionExpression: aws.String(e.n(aJobID) + ", " + e.n(aState)),
		ScanIndexForward:     aws.Bool(false),
	}
	in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.names, e.values
	var final []string
	for examined := 0; examined < s.statsScan; {
		in.Limit = aws.Int32(int32(s.statsScan - examined))
		page, err := s.clients.db.Query(ctx, in)
		if err != nil {
			return nil, awsErr(err, "count the jobs of queue %q ended each minute", name)
		}
		for _, it := range page.Items {
			examined++
			state, err := getInt(it, aState)
			if err != nil {
				return nil, err
			}
			if convert.State(spoolv1.JobState(state)).IsFinal() {
				final = append(final, getStr(it, aJobID))
			}
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	if len(final) == 0 {
		return nil, nil
	}
	jobs, err := s.getJobs(ctx, final)
	if err != nil {
		return nil, err
	}
	out := make([]*jobRec, 0, len(jobs))
	for _, r := range jobs {
		if convert.State(r.state).IsFinal() && !r.endedAt().Before(since) {
			out = append(out, r)
		}
	}
	return out, nil
}
