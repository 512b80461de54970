package storekit

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/notify"
	"github.com/spool-run/spool/internal/store"
)

// PollInterval is how often a waiting Dequeue looks again without being
// woken: a job whose retry delay runs out becomes ready without anyone
// announcing it, and a job another dequeue took and gave back (a rolled
// back transaction) reappears silently.
const PollInterval = 200 * time.Millisecond

// Polls runs a store's long-polling dequeues and wakes them when their
// queue may have a job (Ready). The polls of one queue take turns asking
// the store, and one answer serves them all: an enqueue wakes every poll of
// its queue, and if each then ran the same query, a queue with many idle
// workers would cost a query per worker per job. Instead the first woken
// poll asks; when it finds the queue drained (fewer ready jobs than it
// could take) and nothing changed since it asked, that answer stands for
// the next half interval and the other polls wait again without asking.
// Idle polls, likewise, look again on their timers at most once per half
// interval between them. The zero value is ready to use.
type Polls struct {
	// Interval is how often a poll looks again without being woken (zero:
	// PollInterval).
	Interval time.Duration

	mu     sync.Mutex
	queues map[string]*turns
}

// turns is one queue's polls, kept while any is under way.
type turns struct {
	users int // polls under way (guarded by Polls.mu)

	asking sync.Mutex // held while a poll asks the store, unless it is busy

	mu       sync.Mutex
	sleeping int           // polls waiting for a wake-up
	changes  uint64        // Ready calls so far
	wake     chan struct{} // closed by the next Ready
	drained  bool          // the last answer found the queue drained,
	asked    uint64        // when changes was this much,
	at       time.Time     // at this time
}

// Ready wakes the polls of queue: it may have a job now. It never blocks.
func (p *Polls) Ready(queue string) {
	p.mu.Lock()
	t := p.queues[queue]
	p.mu.Unlock()
	if t != nil {
		t.ready()
	}
}

// ReadyAll wakes every poll: for when changes may have been missed.
func (p *Polls) ReadyAll() {
	p.mu.Lock()
	all := make([]*turns, 0, len(p.queues))
	for _, t := range p.queues {
		all = append(all, t)
	}
	p.mu.Unlock()
	for _, t := range all {
		t.ready()
	}
}

// Dequeue waits up to req.Wait for lease to return leases of req.Queue,
// asking again whenever Ready or the interval wakes it. Each round takes
// its wake-up channel before it asks, so a change between the question and
// the sleep wakes it.
func (p *Polls) Dequeue(ctx context.Context, req store.DequeueRequest, lease func() ([]store.Lease, error)) ([]store.Lease, error) {
	t := p.enter(req.Queue)
	defer p.leave(req.Queue, t)
	interval := cmp.Or(p.Interval, PollInterval)
	deadline := time.Now().Add(req.Wait)
	limit := store.DequeueLimit(req.Max)
	for {
		wake := t.waker()
		leases, err := t.ask(interval/2, limit, lease)
		if err != nil || len(leases) > 0 {
			return leases, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		if err := t.sleep(ctx, wake, min(left, interval)); err != nil {
			return nil, err
		}
	}
}

// sleep waits for wake, d or the end of ctx.
func (t *turns) sleep(ctx context.Context, wake <-chan struct{}, d time.Duration) error {
	t.mu.Lock()
	t.sleeping++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.sleeping--
		t.mu.Unlock()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-wake:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Sleeping is how many polls of queue are waiting for a wake-up (or their
// interval) at this moment: a test starts a change only once a poll waits
// for it, so that nothing but the wake-up can end the wait in time.
func (p *Polls) Sleeping(queue string) int {
	p.mu.Lock()
	t := p.queues[queue]
	p.mu.Unlock()
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sleeping
}

// enter and leave count the polls of a queue, so that a queue's turns are
// kept only while someone polls it.
func (p *Polls) enter(queue string) *turns {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queues == nil {
		p.queues = map[string]*turns{}
	}
	t := p.queues[queue]
	if t == nil {
		t = &turns{wake: make(chan struct{})}
		p.queues[queue] = t
	}
	t.users++
	return t
}

func (p *Polls) leave(queue string, t *turns) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.users--; t.users == 0 {
		delete(p.queues, queue)
	}
}

func (t *turns) ready() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.changes++
	close(t.wake)
	t.wake = make(chan struct{})
}

// waker returns the channel the next Ready closes.
func (t *turns) waker() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wake
}

// ask calls lease unless the last answer found the queue drained, less
// than recent ago, with no Ready since the question was asked. While the
// last answer found the queue busy (it filled its request), polls ask side
// by side instead of in turn: there are jobs for each, and their leases,
// made together, share the store's commits (the stores lease safely side
// by side, as the servers sharing one do).
func (t *turns) ask(recent time.Duration, limit int, lease func() ([]store.Lease, error)) ([]store.Lease, error) {
	t.mu.Lock()
	busy := !t.at.IsZero() && !t.drained
	t.mu.Unlock()
	if !busy {
		t.asking.Lock()
		defer t.asking.Unlock()
	}
	t.mu.Lock()
	if t.drained && t.asked == t.changes && time.Since(t.at) < recent {
		t.mu.Unlock()
		return nil, nil
	}
	changes, at := t.changes, time.Now()
	t.mu.Unlock()
	leases, err := lease()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.drained, t.asked, t.at = len(leases) < limit, changes, at
	t.mu.Unlock()
	return leases, nil
}

// QueueKey is the note that a queue may have a job ready, as the SQL
// stores collect them with a transaction's other notes ("job:ID", woken
// through a notify.Hub).
func QueueKey(queue string) string { return queuePrefix + queue }

const queuePrefix = "queue:"

// Wake wakes the waiters of a note: a queue's polls, or the hub's waiters
// of any other key.
func Wake(h *notify.Hub, p *Polls, key string) {
	if q, ok := strings.CutPrefix(key, queuePrefix); ok {
		p.Ready(q)
		return
	}
	h.Notify(key)
}
