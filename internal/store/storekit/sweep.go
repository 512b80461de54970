package storekit

import (
	"sync"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// GraceFrom decides, for a sweep at now whose store recorded the last
// sweep at last (zero: none yet), whether an outage came before it (see
// store.Sweep) and, if so, from when: the running leases that expire at or
// after from get r.Grace from now before anything is settled.
func GraceFrom(last time.Time, r store.Sweep, now time.Time) (from time.Time, ok bool) {
	if !last.IsZero() && now.Sub(last) > r.Gap {
		from = last
	}
	if !r.Since.IsZero() && (from.IsZero() || r.Since.Before(from)) {
		from = r.Since
	}
	return from, !from.IsZero()
}

// Graced reports whether a running lease expiring at expires gets grace
// until until from a sweep that graces from from: it was alive at from,
// and the grace lengthens it. (A lease with no expiry, an external job's,
// gets none.)
func Graced(expires, from, until time.Time) bool {
	return !expires.IsZero() && !expires.Before(from) && expires.Before(until)
}

// SweepClock keeps the time of the last sweep for a store that one server
// owns (SQLite): no other server sweeps it, so the record need not outlive
// the process. A server that starts gives every running lease a lease
// length anyway (store.LeaseGracer).
type SweepClock struct {
	mu   sync.Mutex
	last time.Time
}

// Last is the time of the last sweep recorded (zero: none yet).
func (c *SweepClock) Last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Swept records a sweep at now, whose work is stored.
func (c *SweepClock) Swept(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.last) {
		c.last = now
	}
}
