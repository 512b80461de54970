package awsstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// watcher implements Watch across servers. Every change readers care about
// adds one to the job item's rev. Changes made through this Store wake its
// watchers at once; changes made through other Stores (other replicas) are
// found by polling rev, in one BatchGetItem a round, of the jobs that have
// watchers here, and only while there are any.
//
// Two paces: a job someone follows here (ShareWatch) is polled every
// WatchPollInterval with strongly consistent reads, as a person is waiting
// for its next line; any other watched job (a worker's heartbeat waiting
// for a cancel) every slowPolls of those, eventually consistently. A
// followed job whose changes come through this Store (its worker publishes
// here) needs no fast poll: it is woken by them, and polled at the slow
// pace in case its worker moves to another replica. (DynamoDB Streams
// would push instead, but not every endpoint has them, their records reach
// readers later than a short poll finds them, and a stream consumer
// costs more than a few followed jobs' polls.)
//
// A job is polled only while a watch of it lasts: each Watch holds its
// job's entry until the watch's context ends, and the entry goes with the
// last of them, so ids nobody follows any more (or that name no job) are
// neither kept nor polled.
//
// A watch fires when rev rises above its base: the last rev this Store saw
// before the watch began. A rev seen earlier is never newer than the job
// was at Watch, so no change after Watch is missed; at worst a watch fires
// for a change its caller had already read, which costs one re-read. With
// no rev known (the job's first watch here) the first poll fires.
type watcher struct {
	s        *Store
	ctx      context.Context
	cancel   context.CancelFunc
	loops    sync.WaitGroup
	mu       sync.Mutex
	entries  map[string]*watchEntry
	recent   map[string]seenRev // rev last seen of jobs watched lately
	running  bool
	isClosed bool
	// started counts the polling loops started, for tests: a watch that
	// starts one knows no rev of its job and fires at its first poll.
	started int
	// hurried wakes the loop when a follow begins, to poll at the follow
	// pace at once.
	hurried chan struct{}
}

type watchEntry struct {
	ch      chan struct{}
	base    int64 // 0: unknown
	waiters int   // watches whose context has not ended
}

type seenRev struct {
	rev   int64
	at    time.Time
	local bool // the change was made through this Store
}

const (
	// recentFor is how long a fired watch's rev is kept as the base of
	// the job's next watch: a follower watches again as soon as it has
	// read.
	recentFor = 30 * time.Second
	// slowPolls: jobs nobody follows here are polled every slowPolls
	// WatchPollIntervals (250 ms at the default 50 ms).
	slowPolls = 5
	// localFor: a followed job changed through this Store this recently
	// is taken to be written here, and not polled at the follow pace.
	localFor = time.Second
)

func newWatcher(s *Store) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &watcher{s: s, ctx: ctx, cancel: cancel, entries: map[string]*watchEntry{}, recent: map[string]seenRev{},
		hurried: make(chan struct{}, 1)}
}

// Watch returns a channel closed at the next change of the job after the
// call, and watches the job until ctx ends.
func (w *watcher) Watch(ctx context.Context, id string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.isClosed || !validID(id) {
		// Nothing to wait for: the caller's read will say why.
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	e, ok := w.entries[id]
	if !ok {
		e = &watchEntry{ch: make(chan struct{}), base: w.recent[id].rev}
		w.entries[id] = e
	}
	e.waiters++
	context.AfterFunc(ctx, func() { w.release(id, e) })
	if !w.running {
		w.running = true
		w.started++
		w.loops.Add(1)
		go w.loop()
	}
	return e.ch
}

// release ends one watch of e, and stops watching the job with its last.
func (w *watcher) release(id string, e *watchEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e.waiters--
	// After a change the job may have a newer entry, which is not ours.
	if e.waiters == 0 && w.entries[id] == e {
		delete(w.entries, id)
	}
}

// changed reports a change made through this Store: rev is the job's rev
// after it.
func (w *watcher) changed(id string, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.entries[id]; ok {
		w.fire(id, rev)
	} else if r, ok := w.recent[id]; ok && rev > r.rev {
		w.recent[id] = seenRev{rev: rev, at: time.Now()}
	}
	// Marked as made here, it spares the job the follow pace's polls.
	if r, ok := w.recent[id]; ok && r.rev == rev {
		r.local = true
		w.recent[id] = r
	}
}

// hurry makes the loop look at the jobs followed here now rather than at
// its next slow round.
func (w *watcher) hurry() {
	select {
	case w.hurried <- struct{}{}:
	default:
	}
}

// fire wakes the job's watchers; w.mu is held.
func (w *watcher) fire(id string, rev int64) {
	if e, ok := w.entries[id]; ok {
		close(e.ch)
		delete(w.entries, id)
	}
	if rev > w.recent[id].rev {
		w.recent[id] = seenRev{rev: rev, at: time.Now()}
	}
}

// loop polls the watched jobs until none are left.
func (w *watcher) loop() {
	defer w.loops.Done()
	fast := w.s.cfg.WatchPollInterval
	slow := fast * slowPolls
	last := time.Now() // of the last round that polled every watched job
	t := time.NewTimer(w.next(fast, slow, last))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-w.hurried:
			// A new follow: poll it now, not at the end of a slow wait.
		case <-w.ctx.Done():
			return
		}
		all := time.Since(last) >= slow-fast/2
		ids, strong, ok := w.watched(all)
		if !ok {
			return
		}
		if all {
			last = time.Now()
		}
		if len(ids) > 0 {
			w.pollRound(ids, strong)
		}
		t.Reset(w.next(fast, slow, last))
	}
}

// next is how long the loop waits for its next round: the follow pace
// while a job is followed here, else until the next slow round.
func (w *watcher) next(fast, slow time.Duration, last time.Time) time.Duration {
	d := max(slow-time.Since(last), 0)
	if w.s.shares.anyFollowed() {
		d = min(d, fast)
	}
	return d
}

// pollRound polls ids once and wakes the watchers of those that changed.
func (w *watcher) pollRound(ids []string, strong bool) {
	seen, err := w.poll(ids, strong)
	if err != nil {
		if w.ctx.Err() == nil {
			w.s.log.Warn("polling followed jobs for changes made by other servers", "error", err)
		}
		return
	}
	for id, st := range seen {
		w.s.shares.note(id, st.watchedUntil)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		e, ok := w.entries[id]
		if !ok {
			continue
		}
		st, found := seen[id]
		switch {
		case !found:
			w.fire(id, 0) // no such job: let the watcher find out
		case e.base == 0 || st.rev > e.base || convert.State(st.state).IsFinal():
			// A final job changes no more: waking its watchers lets
			// any that are left see so and stop.
			w.fire(id, st.rev)
		}
	}
}

// watched lists the jobs to poll this round: those followed here (unless
// written through this Store lately), and with all, every watched job;
// strong says whether a followed one is among them. It forgets old revs,
// and ok is false (the loop marked stopped) when no job is watched.
func (w *watcher) watched(all bool) (ids []string, strong, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.entries) == 0 {
		// Nobody watches: keep nothing. A job watched again later costs
		// one wake-up at the first poll, its rev being unknown.
		clear(w.recent)
		w.running = false
		return nil, false, false
	}
	now := time.Now()
	for id, r := range w.recent {
		if now.Sub(r.at) > recentFor {
			delete(w.recent, id)
		}
	}
	for id := range w.entries {
		followed := w.s.shares.following(id)
		if r := w.recent[id]; followed && r.local && now.Sub(r.at) < localFor {
			followed = false
		}
		if followed || all {
			ids = append(ids, id)
			strong = strong || followed
		}
	}
	return ids, strong, true
}

type polled struct {
	rev          int64
	state        spoolv1.JobState
	watchedUntil int64
}

// poll reads the rev, state and watched_until of jobs. A round with a job
// followed here reads strongly consistently: an eventually consistent read
// can miss a write made just before, and the follower would wait a whole
// round more for that line. Other rounds read eventually consistently, at
// half the price: a change shows up a poll or so later at worst, and
// whoever is woken reads the job strongly consistently.
func (w *watcher) poll(ids []string, strong bool) (map[string]polled, error) {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = jobKey(id)
	}
	ka := consistent(aJobID, aRev, aState, aKind, aWatchedUntil)
	ka.ConsistentRead = aws.Bool(strong)
	items, err := w.s.batchGet(w.ctx, w.s.cfg.JobsTable, keys, ka)
	if err != nil {
		return nil, fmt.Errorf("poll %d followed jobs: %w", len(ids), err)
	}
	out := make(map[string]polled, len(items))
	for _, it := range items {
		if !isJobItem(it) {
			continue
		}
		n := ints{it: it}
		p := polled{rev: n.get(aRev), state: spoolv1.JobState(n.get(aState)), watchedUntil: n.get(aWatchedUntil)}
		if n.err != nil {
			return nil, n.err
		}
		out[getStr(it, aJobID)] = p
	}
	return out, nil
}

// size is how many jobs the watcher keeps anything for: watched, or with a
// rev remembered.
func (w *watcher) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries) + len(w.recent)
}

// close stops polling and wakes every watcher.
func (w *watcher) close() {
	w.mu.Lock()
	w.isClosed = true
	for id, e := range w.entries {
		close(e.ch)
		delete(w.entries, id)
	}
	w.mu.Unlock()
	w.cancel()
	w.loops.Wait()
}
