package store

import "time"

// Sweep is one round of a reaper: what ExpireLeases needs to tell a lease
// whose worker vanished from one whose worker could not reach the store.
//
// A worker keeps its command running while its heartbeats fail, so when the
// store (or every server) was away, the leases that ran out meanwhile
// belong to live workers: settling them would run their jobs a second time,
// beside the first. The store keeps the time of the last sweep of any
// server. Sweeps normally follow each other within a second or so; when
// the last one is more than Gap ago, no reaper could reach the store since
// then, and neither could any heartbeat. So before it settles anything, the
// sweep gives every running lease that was still alive at the last sweep
// Grace from now, time for its worker to get through again, and only then
// records itself and settles what is left. The record is in the store, not
// in each server, because a server that did not see the outage (one started
// just after, or one whose calls hung instead of failing) must follow the
// rule as well: whichever server sweeps first after an outage applies the
// grace, in the same transaction as its settling (or, without
// transactions, before it records the sweep), and every later sweep finds
// a fresh record only once that grace is written.
//
// Since adds what this server saw itself: a store call that failed because
// the store was away. Leases alive at Since get the grace too, even when the
// outage was too short for the sweeps' record to show it.
type Sweep struct {
	// Grace is how long from now an outage's leases get: a lease length.
	Grace time.Duration
	// Gap is the longest time between two sweeps that still says reapers
	// reached the store all along.
	Gap time.Duration
	// Since, when set, is when this server last knew the store to be
	// answering before it saw a call fail.
	Since time.Time
}

// Swept is what a sweep did.
type Swept struct {
	// Graced counts the leases given grace after an outage.
	Graced int
	// Settled counts the jobs whose lease ran out and that were queued
	// again, failed or cancelled.
	Settled int
}
