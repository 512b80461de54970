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
// found by polling rev, every WatchPollInterval, of the jobs that have
// watchers here, and only while there are any. (DynamoDB Streams would
// push instead, but not every endpoint has them, and for a handful of
// followed jobs a batched read is cheaper than a stream consumer.)
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
}

type watchEntry struct {
	ch      chan struct{}
	base    int64 // 0: unknown
	waiters int   // watches whose context has not ended
}

type seenRev struct {
	rev int64
	at  time.Time
}

// recentFor is how long a fired watch's rev is kept as the base of the
// job's next watch: a follower watches again as soon as it has read.
const recentFor = 30 * time.Second

func newWatcher(s *Store) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &watcher{s: s, ctx: ctx, cancel: cancel, entries: map[string]*watchEntry{}, recent: map[string]seenRev{}}
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
	t := time.NewTicker(w.s.cfg.WatchPollInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-w.ctx.Done():
			return
		}
		ids := w.watched()
		if ids == nil {
			return
		}
		seen, err := w.poll(ids)
		if err != nil {
			if w.ctx.Err() == nil {
				w.s.log.Warn("polling followed jobs for changes made by other servers", "error", err)
			}
			continue
		}
		w.mu.Lock()
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
		w.mu.Unlock()
	}
}

// watched lists the jobs with watchers and forgets old revs; nil (and the
// loop marked stopped) when there are none.
func (w *watcher) watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.entries) == 0 {
		// Nobody watches: keep nothing. A job watched again later costs
		// one wake-up at the first poll, its rev being unknown.
		clear(w.recent)
		w.running = false
		return nil
	}
	for id, r := range w.recent {
		if time.Since(r.at) > recentFor {
			delete(w.recent, id)
		}
	}
	ids := make([]string, 0, len(w.entries))
	for id := range w.entries {
		ids = append(ids, id)
	}
	return ids
}

type polled struct {
	rev   int64
	state spoolv1.JobState
}

// poll reads the rev and state of jobs. Reads are eventually consistent,
// half the price of strong ones: a change shows up a poll or so later at
// worst, and whoever is woken reads the job strongly consistently.
func (w *watcher) poll(ids []string) (map[string]polled, error) {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = jobKey(id)
	}
	ka := consistent(aJobID, aRev, aState, aKind)
	ka.ConsistentRead = aws.Bool(false)
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
		p := polled{rev: n.get(aRev), state: spoolv1.JobState(n.get(aState))}
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
