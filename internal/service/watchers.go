package service

import (
	"sync"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// watchers counts live followers per job on this server, so a worker
// publishing the job's output can be told to flush promptly: latency
// matters only while someone watches, and while no one does, fewer, larger
// batches mean fewer writes. On a store shared by several servers that can
// say so (store.WatchSharer), followers on the other servers count too;
// otherwise a worker whose server has none falls back to the configured
// flush interval.
type watchers struct {
	mu sync.Mutex
	n  map[string]int
	// share, when set, carries this server's follows to the others and
	// theirs here.
	share store.WatchSharer
	// waits are the channels of workers waiting for a job's watched state
	// to flip (a long-polling heartbeat), closed when it does.
	waits map[string]*flip
	// polls are the jobs that readers polling pages of their log keep
	// watched: each counts as one follower until its deadline.
	polls map[string]*poll
}

// poll is a job kept watched by pollers until a deadline that each of
// their reads pushes back.
type poll struct {
	until time.Time
	timer *time.Timer
}

// flip is one job's wake-up channel and how many wait on it.
type flip struct {
	ch      chan struct{}
	waiters int
}

// add registers a follower of job and returns the function that removes it.
func (w *watchers) add(job string) (remove func()) {
	w.mu.Lock()
	w.inc(job)
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.dec(job)
		})
	}
}

// polled keeps job watched for the next d, as one follower however many
// poll it: a reader that polls pages of a running job's log instead of
// following it wants its lines as promptly, and polls again before d is
// over if it goes on; once it stops, the worker goes back to its own pace.
func (w *watchers) polled(job string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	until := time.Now().Add(d)
	if p := w.polls[job]; p != nil {
		p.until = until
		return
	}
	if w.polls == nil {
		w.polls = map[string]*poll{}
	}
	p := &poll{until: until}
	w.polls[job] = p
	w.inc(job)
	p.timer = time.AfterFunc(d, func() { w.pollOver(job, p) })
}

// pollOver ends p's watch of job once its deadline has passed, or waits
// for the deadline a later poll set.
func (w *watchers) pollOver(job string, p *poll) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if left := time.Until(p.until); left > 0 {
		p.timer.Reset(left)
		return
	}
	delete(w.polls, job)
	w.dec(job)
}

// inc counts one more follower of job. w.mu is held.
func (w *watchers) inc(job string) {
	if w.n == nil {
		w.n = map[string]int{}
	}
	if w.n[job]++; w.n[job] == 1 {
		w.flipped(job)
		if w.share != nil {
			w.share.ShareWatch(job, true)
		}
	}
}

// dec counts one follower of job less. w.mu is held.
func (w *watchers) dec(job string) {
	if w.n[job]--; w.n[job] <= 0 {
		delete(w.n, job)
		w.flipped(job)
		if w.share != nil {
			w.share.ShareWatch(job, false)
		}
	}
}

// shareWith makes the followers on other servers sharing st count.
func (w *watchers) shareWith(st store.WatchSharer) {
	w.share = st
	st.OnWatchChange(func(job string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.flipped(job) // the waiters look again
	})
}

// flipped wakes the waiters of job's watched state. w.mu is held.
func (w *watchers) flipped(job string) {
	if f := w.waits[job]; f != nil {
		close(f.ch)
		delete(w.waits, job)
	}
}

// changes returns a channel closed when job's watched state next flips, and
// the function to call when no longer waiting (so nothing is kept for a job
// no one waits on).
func (w *watchers) changes(job string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waits == nil {
		w.waits = map[string]*flip{}
	}
	f := w.waits[job]
	if f == nil {
		f = &flip{ch: make(chan struct{})}
		w.waits[job] = f
	}
	f.waiters++
	var once sync.Once
	return f.ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if f.waiters--; f.waiters == 0 && w.waits[job] == f {
				delete(w.waits, job)
			}
		})
	}
}

// pending is how many jobs have waiters (for tests).
func (w *watchers) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waits)
}

// watched reports whether job has a follower, here or on another server.
func (w *watchers) watched(job string) bool {
	w.mu.Lock()
	here := w.n[job] > 0
	w.mu.Unlock()
	return here || (w.share != nil && w.share.WatchedElsewhere(job))
}

// total is the number of followers of all jobs on this server (jobs
// kept watched by pollers are not counted: no one follows them).
func (w *watchers) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, k := range w.n {
		n += k
	}
	return n - len(w.polls)
}
