package awsstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// SCHEDULED jobs (see doc.go, When jobs run). A scheduled job has no SQS
// message: it sits in the leases index, in scheduledPart by its run_after
// or in afterPart while it waits for other jobs, and PromoteScheduled
// sends its message when it may run, then makes it QUEUED.

// checkAfter refuses jobs to run after that do not exist, with one
// strongly consistent BatchGetItem of their keys.
func (s *Store) checkAfter(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	found, err := s.jobStates(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return store.AfterNotFound(id)
		}
	}
	return nil
}

// jobStates reads the states of the jobs of ids (absent: no such job),
// each read once.
func (s *Store) jobStates(ctx context.Context, ids []string) (map[string]*spoolv1.Job, error) {
	var keys []item
	seen := map[string]bool{}
	for _, id := range ids {
		if validID(id) && !seen[id] {
			seen[id] = true
			keys = append(keys, jobKey(id))
		}
	}
	items, err := s.batchGet(ctx, s.cfg.JobsTable, keys, consistent(aJobID, aKind, aState))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*spoolv1.Job, len(items))
	for _, it := range items {
		if !isJobItem(it) {
			continue
		}
		st, err := getInt(it, aState)
		if err != nil {
			return nil, err
		}
		out[getStr(it, aJobID)] = &spoolv1.Job{JobId: getStr(it, aJobID), State: spoolv1.JobState(st)}
	}
	return out, nil
}

// addFollower names a new job among the followers of each job it runs
// after, right after writing it (there are no transactions to do it in
// the same write). A failure is logged: the job runs after them all the
// same, only the listing of followers misses it.
func (s *Store) addFollower(ctx context.Context, j *spoolv1.Job) {
	for _, id := range j.GetAfter() {
		if _, err := s.editBook(ctx, id, func(p *spoolv1.Job) bool { return storekit.AddFollower(p, j.GetJobId()) }); err != nil {
			s.log.Warn("cannot list a job among the followers of the job it runs after", "job", j.GetJobId(), "after", id, "error", err)
		}
	}
}

// PromoteScheduled implements store.TimingStore. It queries the leases
// index: the scheduledPart entries due by now (each job read, its message
// sent, then made QUEUED on condition that it did not change), every
// afterPart entry (see afterDecided; those decided are read and settled
// the same way, by storekit.Decide), and the first scheduledPart entry not yet
// due, for Next. One promotion runs at a time per Store; servers racing
// over a job each send a message, and the loser's is a duplicate that its
// receiver drops or hides like any other.
func (s *Store) PromoteScheduled(ctx context.Context, now time.Time) (store.Promoted, error) {
	s.promoting.Lock()
	defer s.promoting.Unlock()
	var out store.Promoted
	due, err := s.indexed(ctx, scheduledPart, now, 0)
	if err != nil {
		return out, err
	}
	if err := s.promoteAll(ctx, due, now, &out); err != nil {
		return out, err
	}
	waiting, err := s.indexed(ctx, afterPart, time.Time{}, 0)
	if err != nil {
		return out, err
	}
	ready, err := s.afterDecided(ctx, waiting, now)
	if err != nil {
		return out, err
	}
	if err := s.promoteAll(ctx, ready, now, &out); err != nil {
		return out, err
	}
	next, err := s.nextDue(ctx, now)
	out.Next = next
	return out, err
}

// indexed lists the job ids of one partition of the leases index whose
// lease_expires is not after until (zero: all of it), oldest first, at
// most limit (0: all).
func (s *Store) indexed(ctx context.Context, part string, until time.Time, limit int) ([]string, error) {
	e := newExpr()
	cond := e.eq(aLeasePart, str(part))
	if !until.IsZero() {
		cond = and(cond, e.n(aLeaseExpires)+" <= "+e.v(num(until.UnixMicro())))
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexLeases),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	}
	var ids []string
	for p := dynamodb.NewQueryPaginator(s.clients.db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsErr(err, "find the jobs waiting in %s", part)
		}
		for _, it := range page.Items {
			ids = append(ids, getStr(it, aJobID))
			if limit > 0 && len(ids) == limit {
				return ids, nil
			}
		}
	}
	return ids, nil
}

// nextDue is the earliest run_after of the jobs that wait for their time
// only, past now (zero: none): the first entry of scheduledPart after now.
func (s *Store) nextDue(ctx context.Context, now time.Time) (time.Time, error) {
	e := newExpr()
	out, err := s.clients.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.JobsTable),
		IndexName:                 aws.String(indexLeases),
		KeyConditionExpression:    aws.String(and(e.eq(aLeasePart, str(scheduledPart)), e.n(aLeaseExpires)+" > "+e.v(num(now.UnixMicro())))),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return time.Time{}, awsErr(err, "find the next scheduled job")
	}
	if len(out.Items) == 0 {
		return time.Time{}, nil
	}
	at, err := getInt(out.Items[0], aLeaseExpires)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(at).UTC(), nil
}

// promotersAtOnce bounds the jobs one promotion queues or cancels side
// by side: a burst of jobs due at once (a schedule's tick, a chain's
// parent ending) is a send and a write each.
const promotersAtOnce = 16

// promoteAll decides each scheduled job of ids at now (the index lags the
// table, so each is read as it is), with the jobs they run after read in
// one go.
func (s *Store) promoteAll(ctx context.Context, ids []string, now time.Time, out *store.Promoted) error {
	if len(ids) == 0 {
		return nil
	}
	jobs, err := s.getJobs(ctx, ids)
	if err != nil {
		return err
	}
	var parentIDs []string
	for _, r := range jobs {
		if j := r.view(); waitsOnJobs(j) {
			parentIDs = append(parentIDs, j.GetAfter()...)
		}
	}
	parents, err := s.jobStates(ctx, parentIDs)
	if err != nil {
		return err
	}
	var queued, cancelled atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(promotersAtOnce)
	for _, id := range ids {
		r, ok := jobs[id]
		if !ok || r.state != spoolv1.JobState_JOB_STATE_SCHEDULED {
			continue
		}
		j := r.view()
		mine := map[string]*spoolv1.Job{}
		if waitsOnJobs(j) {
			for _, p := range j.GetAfter() {
				if pj, ok := parents[p]; ok {
					mine[p] = pj
				}
			}
		} else {
			j.After = nil // a retry: its after jobs succeeded before it first ran
		}
		switch w, broken := storekit.Decide(j, mine, now); w {
		case storekit.WaitDone:
			g.Go(counted(&queued, func() (bool, error) { return s.promote(gctx, r, now) }))
		case storekit.WaitBroken:
			g.Go(counted(&cancelled, func() (bool, error) {
				return s.decide(gctx, r, storekit.AfterFailed(broken, parents[broken], now), now)
			}))
		}
	}
	err = g.Wait()
	out.Queued += int(queued.Load())
	out.Cancelled += int(cancelled.Load())
	return err
}

// counted runs write, adding one to n when it wrote.
func counted(n *atomic.Int64, write func() (bool, error)) func() error {
	return func() error {
		ok, err := write()
		if ok {
			n.Add(1)
		}
		return err
	}
}

// promote queues a scheduled job: its message first (a job QUEUED
// without one would never run), then the state, on condition that the job
// did not change since read. A message that comes before the write finds
// the job still scheduled: see setAside.
func (s *Store) promote(ctx context.Context, r *jobRec, now time.Time) (bool, error) {
	url, err := s.url(ctx, r)
	if err != nil {
		return false, err
	}
	if err := s.send(ctx, url, message{JobID: r.id(), Queue: r.queue(), Attempt: r.attempt, Sent: time.Now().UnixMilli()}); err != nil {
		return false, err
	}
	return s.decide(ctx, r, storekit.Promote(), now)
}

// decide writes a scheduled job's outcome (queued, or cancelled), on
// condition that it is as read.
func (s *Store) decide(ctx context.Context, r *jobRec, o storekit.Outcome, now time.Time) (bool, error) {
	e := newExpr()
	u, err := s.settle(e, r, o, false, now)
	if err != nil {
		return false, err
	}
	_, ok, err := s.updateJob(ctx, r.id(), u, and(isJob(e), e.eq(aState, num(int32(r.state))), e.eq(aRev, num(r.rev))))
	return ok, err
}

// afterWait is what a Store remembers of the jobs waiting for others
// between promotions: what each runs after (which never changes), and
// the final states of the jobs they wait for (which never change either;
// a job that succeeded and was deleted since still counts as succeeded).
// So a promotion reads, of the jobs that wait, only those it has not seen
// and the jobs they wait for that are not final yet: a thousand jobs after
// one running job cost one read a second, not a thousand and one.
type afterWait struct {
	mu    sync.Mutex
	after map[string][]string
	final map[string]*spoolv1.Job
}

// afterDecided returns, of the waiting jobs ids, those whose wait is over
// at now (to queue or cancel), by what the Store knows and reads.
func (s *Store) afterDecided(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	w := &s.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	var unseen []string
	for _, id := range ids {
		if _, ok := w.after[id]; !ok {
			unseen = append(unseen, id)
		}
	}
	if len(unseen) > 0 {
		jobs, err := s.getJobs(ctx, unseen)
		if err != nil {
			return nil, err
		}
		if w.after == nil {
			w.after = map[string][]string{}
		}
		for id, r := range jobs {
			w.after[id] = r.book.GetAfter()
		}
	}
	// Forget the jobs that left the index, and what only they waited for.
	listed := make(map[string]bool, len(ids))
	for _, id := range ids {
		listed[id] = true
	}
	needed := map[string]bool{}
	for id, after := range w.after {
		if !listed[id] {
			delete(w.after, id)
			continue
		}
		for _, p := range after {
			needed[p] = true
		}
	}
	var open []string
	for p := range needed {
		if _, ok := w.final[p]; !ok {
			open = append(open, p)
		}
	}
	for p := range w.final {
		if !needed[p] {
			delete(w.final, p)
		}
	}
	states, err := s.jobStates(ctx, open)
	if err != nil {
		return nil, err
	}
	if w.final == nil {
		w.final = map[string]*spoolv1.Job{}
	}
	for id, j := range states {
		if convert.State(j.GetState()).IsFinal() {
			w.final[id] = j
		}
	}
	var out []string
	for _, id := range ids {
		after, ok := w.after[id]
		if !ok {
			continue // gone since the index listed it
		}
		parents := map[string]*spoolv1.Job{}
		for _, p := range after {
			if j, ok := w.final[p]; ok {
				parents[p] = j
			} else if j, ok := states[p]; ok {
				parents[p] = j
			}
		}
		// Its time aside: a job whose after jobs succeeded but whose time
		// has not come is read, and left waiting, by promoteAll.
		if wait, _ := storekit.Decide(&spoolv1.Job{After: after}, parents, now); wait != storekit.WaitOn {
			out = append(out, id)
		}
	}
	return out, nil
}
