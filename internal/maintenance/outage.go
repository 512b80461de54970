package maintenance

import (
	"sync"
	"time"
)

// Outage is what this server saw of its store being away: calls that
// failed because the store could not be reached, and when the store last
// answered a sweep of leases before them. The reaper's next sweep passes
// that time to the store (store.Sweep.Since), so leases an outage kept from
// their heartbeats get grace however short the outage; the store's own
// record of sweeps catches the outages this server did not see. While
// calls keep failing, every sweep gives that grace again: a store that
// cannot be relied on to take heartbeats settles no lease.
type Outage struct {
	mu       sync.Mutex
	answered time.Time // the start of the last sweep the store answered
	failures int       // calls that found the store away, ever
	handled  int       // failures the sweeps since have given grace for
}

// NewOutage starts the record at t, when the store is known to answer
// (the server has just opened it).
func NewOutage(t time.Time) *Outage {
	return &Outage{answered: t}
}

// Saw records that a call found the store away.
func (o *Outage) Saw() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures++
}

// since returns, for a sweep about to begin, when the store last answered
// before failures not yet given grace for (zero: none), and how many
// failures the sweep deals with.
func (o *Outage) since() (time.Time, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failures > o.handled {
		return o.answered, o.failures
	}
	return time.Time{}, o.failures
}

// swept records that a sweep begun at start was answered, having dealt
// with seen failures. A failure seen during it is left for the next sweep,
// which then gives grace from before it.
func (o *Outage) swept(start time.Time, seen int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handled = max(o.handled, seen)
	if o.failures == seen && start.After(o.answered) {
		o.answered = start
	}
}
