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

// EndedPerMinute implements store.QueueStore. When a job ended is not in
// any index, so each queue's by-queue index is walked newest first down to
// the jobs created statsEndedMargin before since (a job ends after its
// creation; one that ran longer than the margin is missed, as QueueStats
// misses it), at most statsScan entries, and its final jobs are read
// (BatchGetItem) for their end. doc.go (Queues) says what that costs.
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
			jobs, err := s.endedSince(ctx, name, since)
			errs[i] = err
			mu.Lock()
			defer mu.Unlock()
			for _, r := range jobs {
				t.Add(name, r.endedAt(), r.state, 1)
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
