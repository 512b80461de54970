package store

import (
	"context"
	"time"
)

// PollInterval is how often a waiting Dequeue looks again without being
// woken: leases expire without anyone announcing it, and other replicas'
// enqueues are not seen in-process.
const PollInterval = 200 * time.Millisecond

// LongPoll calls try until it returns leases or wait has passed, sleeping
// between calls until woken by watch() or PollInterval. watch is taken before
// each try, so an enqueue between the try and the sleep wakes it.
func LongPoll(ctx context.Context, wait time.Duration, watch func() <-chan struct{}, try func() ([]Lease, error)) ([]Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		woken := watch()
		leases, err := try()
		if err != nil || len(leases) > 0 {
			return leases, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, PollInterval))
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}
