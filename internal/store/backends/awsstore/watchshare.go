package awsstore

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// shares carries "someone is watching" between replicas (store.WatchSharer)
// on the job item itself: a replica with followers of a job writes
// watched_until, a time watchFor ahead, when the first of them arrives and
// again every watchRenewEvery while any stays. Every replica reads it
// wherever it reads the job item anyway: the worker's replica reads it at
// each publish and heartbeat of the job, and, while a heartbeat waits for
// news, at its polls of the job. So the worker learns of a follower on
// another replica with no read of its own, and the cost is one small write
// per followed job and replica every few seconds.
//
// The write bumps no rev: nobody reading the log cares, and a rev bump
// would make the job's other writes (conditional on rev) lose races. An
// unfollowed job is not written again: its watched_until lapses on its
// own, so a worker flushes promptly for up to watchFor after its last
// follower left, and hears of it at its next heartbeat.
//
// (PostgreSQL servers tell each other by NOTIFY. AWS has no such channel
// in the two services spool already uses: an SQS queue per replica would
// need one to be made and cleaned up per server, and DynamoDB Streams are
// not offered by every endpoint.)
type shares struct {
	s    *Store
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
	kick chan struct{} // a follow began: announce it now
	// start starts run at the first follow: a replica nobody follows
	// through keeps no goroutine for it.
	start   sync.Once
	started bool // under mu

	mu sync.Mutex
	// followed are the jobs with followers here, and when their
	// watched_until was last written (zero: not yet).
	followed map[string]time.Time
	// seen holds the latest watched_until read of each job, while it is
	// ahead: a lapsed one is as good as none and is dropped.
	seen      map[string]time.Time
	pruned    time.Time
	onChange  func(jobID string)
	announced int // writes made, for tests
}

const (
	// watchFor is how far ahead watched_until is written. A replica that
	// dies with followers leaves its jobs watched this long at most.
	watchFor = 15 * time.Second
	// watchRenewEvery is how often a followed job's watched_until is
	// written again: three times within watchFor, so one failed write
	// never lets it lapse.
	watchRenewEvery = 5 * time.Second
)

func newShares(s *Store) *shares {
	ctx, stop := context.WithCancel(context.Background())
	return &shares{s: s, ctx: ctx, stop: stop, done: make(chan struct{}), kick: make(chan struct{}, 1),
		followed: map[string]time.Time{}, seen: map[string]time.Time{}}
}

// ShareWatch implements store.WatchSharer. It does not wait for the write.
func (s *Store) ShareWatch(jobID string, watched bool) {
	sh := s.shares
	sh.mu.Lock()
	if watched {
		sh.followed[jobID] = time.Time{}
	} else {
		delete(sh.followed, jobID)
	}
	sh.mu.Unlock()
	if watched {
		sh.start.Do(func() {
			sh.mu.Lock()
			sh.started = true
			sh.mu.Unlock()
			go sh.run()
		})
		select {
		case sh.kick <- struct{}{}:
		default:
		}
		// Poll the job at the follow pace from now on.
		s.watch.hurry()
	}
}

// WatchedElsewhere implements store.WatchSharer. It says whether some
// replica had followers of the job lately, as its item said when this one
// last read it; this replica's own followers count too, which changes
// nothing for the caller (it asks about its own followers first).
func (s *Store) WatchedElsewhere(jobID string) bool {
	sh := s.shares
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.seen[jobID].After(time.Now())
}

// OnWatchChange implements store.WatchSharer. fn is called when a read of
// a job finds it newly watched; a watch that lapses is not announced (the
// worker hears of it at its next heartbeat or publish).
func (s *Store) OnWatchChange(fn func(jobID string)) {
	s.shares.mu.Lock()
	defer s.shares.mu.Unlock()
	s.shares.onChange = fn
}

// following reports whether jobID has followers on this replica.
func (sh *shares) following(jobID string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.followed[jobID]
	return ok
}

// anyFollowed reports whether any job has followers on this replica.
func (sh *shares) anyFollowed() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.followed) > 0
}

// note records the watched_until of a job item just read (Unix
// microseconds; 0 when absent), and calls the OnWatchChange function when
// it makes the job watched.
func (sh *shares) note(jobID string, untilMicros int64) {
	now := time.Now()
	until := time.UnixMicro(untilMicros)
	sh.mu.Lock()
	was := sh.seen[jobID].After(now)
	if until.After(now) {
		if until.After(sh.seen[jobID]) {
			sh.seen[jobID] = until
		}
	} else if !was {
		delete(sh.seen, jobID)
	}
	if now.Sub(sh.pruned) > watchRenewEvery {
		sh.pruned = now
		for id, u := range sh.seen {
			if !u.After(now) {
				delete(sh.seen, id)
			}
		}
	}
	fn := sh.onChange
	sh.mu.Unlock()
	// Outside the lock: fn takes the service's, which is held while the
	// service calls ShareWatch.
	if !was && until.After(now) && fn != nil {
		fn(jobID)
	}
}

// run writes watched_until of the jobs followed here: at once for a new
// follow, then every watchRenewEvery.
func (sh *shares) run() {
	defer close(sh.done)
	tick := time.NewTicker(watchRenewEvery / 5)
	defer tick.Stop()
	for {
		select {
		case <-sh.ctx.Done():
			return
		case <-sh.kick:
		case <-tick.C:
		}
		for _, id := range sh.due() {
			sh.announce(id)
		}
	}
}

// due lists the followed jobs whose watched_until should be written now,
// and marks them written.
func (sh *shares) due() []string {
	now := time.Now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var ids []string
	for id, at := range sh.followed {
		if now.Sub(at) >= watchRenewEvery {
			ids = append(ids, id)
			sh.followed[id] = now
		}
	}
	return ids
}

// announce writes the job's watched_until, unless a later one is there
// already (another replica's, or a clock ahead of ours) or the item is no
// job. A failure is logged and retried at the next renewal: until then
// the worker flushes at its usual pace, nothing is lost.
func (sh *shares) announce(id string) {
	until := time.Now().Add(watchFor).UnixMicro()
	e := newExpr()
	_, err := sh.s.clients.db.UpdateItem(sh.ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(sh.s.cfg.JobsTable),
		Key:                       jobKey(id),
		UpdateExpression:          aws.String("SET " + e.eq(aWatchedUntil, num(until))),
		ConditionExpression:       aws.String(and(isJob(e), "(attribute_not_exists("+e.n(aWatchedUntil)+") OR "+e.n(aWatchedUntil)+" < "+e.v(num(until))+")")),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	if err == nil || conditionFailed(err) {
		sh.mu.Lock()
		sh.announced++
		sh.mu.Unlock()
		if err == nil {
			sh.note(id, until)
		}
		return
	}
	if sh.ctx.Err() == nil {
		sh.s.log.Warn("telling other servers that a job is followed here", "job_id", id, "error", err)
	}
}

// close stops the writes.
func (sh *shares) close() {
	sh.start.Do(func() {}) // none may start after this
	sh.stop()
	sh.mu.Lock()
	started := sh.started
	sh.mu.Unlock()
	if started {
		<-sh.done
	}
}
