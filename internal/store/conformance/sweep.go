package conformance

import (
	"context"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// outageSweep is a reaper's sweep that takes sweeps more than half a
// lease apart for an outage, so a test sees one by waiting out a lease.
var outageSweep = store.Sweep{Grace: time.Minute, Gap: shortLease / 2}

// testGraceAfterAGap: a lease that runs out while no sweep reaches the
// store (the store, or every server, was away) is not settled by the first
// sweep after: its worker gets a lease length to renew it.
func testGraceAfterAGap(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueue(t, s, newJob(q))
	l := leaseOne(t, s, q, shortLease)
	if res, err := s.ExpireLeases(ctx, outageSweep); err != nil || res != (store.Swept{}) {
		t.Fatalf("first sweep: %+v, %v; want nothing done", res, err)
	}
	runOut(l) // no sweep meanwhile: an outage
	second := time.Now()
	res, err := s.ExpireLeases(ctx, outageSweep)
	if err != nil || res != (store.Swept{Graced: 1}) {
		t.Fatalf("sweep after the gap: %+v, %v; want 1 lease graced, none settled", res, err)
	}
	j := get(t, s, l.JobID)
	wantState(t, j, spoolv1.JobState_JOB_STATE_RUNNING)
	if left := time.Until(j.GetLeaseExpiresAt().AsTime()); left < outageSweep.Grace-10*time.Second {
		t.Fatalf("graced lease ends in %v, want about %v", left, outageSweep.Grace)
	}
	// The sweep recorded itself: the next one, close behind, is regular.
	// "Close behind" is measured rather than assumed, since a busy machine
	// can stall this goroutine for longer than the outage's gap: the gap
	// here is what passed since the second sweep began and a quarter lease,
	// still far less than the lease-long wait since the first sweep, so
	// only the second sweep's record keeps this one from seeing an outage.
	next := outageSweep
	next.Gap = time.Since(second) + shortLease/4
	if res, err := s.ExpireLeases(ctx, next); err != nil || res != (store.Swept{}) {
		t.Fatalf("sweep right after: %+v, %v; want nothing done", res, err)
	}
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
		t.Fatalf("the worker could not renew its graced lease: %v", err)
	}
}

// testGraceSince: a server that saw the store fail (Sweep.Since) gives
// grace to the leases alive then, though the sweeps' record shows no gap;
// a lease that had run out before then is settled as usual.
func testGraceSince(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueue(t, s, newJob(q))
	dead := leaseOne(t, s, q, shortLease)
	// Half a lease later by the clock, so the two leases end apart.
	time.Sleep(shortLease / 2)
	enqueue(t, s, newJob(q))
	live := leaseOne(t, s, q, shortLease)
	if !live.ExpiresAt.After(dead.ExpiresAt) {
		t.Fatalf("second lease ends at %v, not after the first (%v)", live.ExpiresAt, dead.ExpiresAt)
	}
	runOut(dead, live)
	sw := Sweep
	sw.Since = dead.ExpiresAt.Add(time.Millisecond)
	res, err := s.ExpireLeases(ctx, sw)
	if err != nil || res != (store.Swept{Graced: 1, Settled: 1}) {
		t.Fatalf("ExpireLeases since an outage: %+v, %v; want 1 graced, 1 settled", res, err)
	}
	wantState(t, get(t, s, live.JobID), spoolv1.JobState_JOB_STATE_RUNNING)
	wantState(t, get(t, s, dead.JobID), spoolv1.JobState_JOB_STATE_QUEUED)
}

// testSharedGraceAfterAGap: a server that never swept before (it started
// after the outage, or its calls hung instead of failing) still gives
// grace after an outage the other's sweeps recorded.
func testSharedGraceAfterAGap(t *testing.T, a, b store.JobStore) {
	ctx := context.Background()
	q := newQueue()
	enqueue(t, a, newJob(q))
	l := leaseOne(t, a, q, shortLease)
	if _, err := a.ExpireLeases(ctx, outageSweep); err != nil {
		t.Fatal(err)
	}
	runOut(l)
	res, err := b.ExpireLeases(ctx, outageSweep)
	if err != nil || res != (store.Swept{Graced: 1}) {
		t.Fatalf("the other server's sweep after the gap: %+v, %v; want 1 lease graced, none settled", res, err)
	}
	wantState(t, get(t, a, l.JobID), spoolv1.JobState_JOB_STATE_RUNNING)
}
