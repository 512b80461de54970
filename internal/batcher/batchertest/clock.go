// Package batchertest provides a fake batcher.Clock for deterministic tests
// of code that batches or flushes on time.
package batchertest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/spool-run/spool/internal/batcher"
)

// Clock is a fake batcher.Clock. Time stands still until Advance moves it;
// timers fire only inside Advance, synchronously, in the caller's
// goroutine. It is safe for concurrent use, so code under test may arm
// timers from its own goroutines while the test advances.
type Clock struct {
	mu      sync.Mutex
	changed *sync.Cond // broadcast when timers are added, for WaitTimers
	now     time.Time
	timers  []*timer // pending, ordered by due time, then by creation
	seq     uint64
}

// NewClock returns a fake clock reading start (a fixed date when zero, so
// tests never depend on the real time).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	c := &Clock{now: start}
	c.changed = sync.NewCond(&c.mu)
	return c
}

type timer struct {
	c   *Clock
	due time.Time
	seq uint64
	f   func()
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for when the clock has been advanced by d. A d of
// zero or less makes f due at the next Advance (even Advance(0)).
func (c *Clock) AfterFunc(d time.Duration, f func()) batcher.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, due: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	i, _ := slices.BinarySearchFunc(c.timers, t, func(a, b *timer) int {
		if n := a.due.Compare(b.due); n != 0 {
			return n
		}
		return cmp.Compare(a.seq, b.seq)
	})
	c.timers = slices.Insert(c.timers, i, t)
	c.changed.Broadcast()
	return t
}

// Stop removes the timer if it has not fired yet.
func (t *timer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Advance moves the clock forward by d, firing every timer that falls due,
// in due order, each with Now() reading its due time. A callback may arm
// further timers; those fire too if they fall due within d. Callbacks run
// without the clock's lock, so they may use the clock.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for len(c.timers) > 0 && !c.timers[0].due.After(end) {
		t := c.timers[0]
		c.timers = c.timers[1:]
		if t.due.After(c.now) {
			c.now = t.due
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	if end.After(c.now) {
		c.now = end
	}
	c.mu.Unlock()
}

// Pending returns how many timers are waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDue returns how long until the earliest pending timer is due, and
// false when none is pending.
func (c *Clock) NextDue() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return 0, false
	}
	return c.timers[0].due.Sub(c.now), true
}

// WaitTimers blocks until at least n timers are pending, for tests whose
// code under test arms timers from another goroutine. It returns ctx's
// error if ctx ends first.
func (c *Clock) WaitTimers(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.changed.Broadcast()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.changed.Wait()
	}
	return nil
}

// LateStops wraps c so that stopping a timer always fails, as it does for a
// real timer that fired just as the code under test stopped it: the callback
// still runs when c reaches its deadline. Code that must ignore such stale
// callbacks is tested with it.
func LateStops(c *Clock) batcher.Clock { return lateClock{c} }

type lateClock struct{ *Clock }

func (c lateClock) AfterFunc(d time.Duration, f func()) batcher.Timer {
	c.Clock.AfterFunc(d, f)
	return lateTimer{}
}

type lateTimer struct{}

func (lateTimer) Stop() bool { return false }
