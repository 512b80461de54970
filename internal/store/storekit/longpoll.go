package storekit

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// PollInterval is how often a waiting Dequeue looks again without being
// woken: leases expire without anyone announcing it, and other replicas'
// enqueues are not seen in-process.
const PollInterval = 200 * time.Millisecond

// LongPoll calls try until it returns leases or wait has passed, sleeping
// between calls until woken by watch or PollInterval. Each round takes a
// watch before its try, so an enqueue between the try and the sleep wakes
// it, and ends the watch's context when it is over, so the store keeps
// nothing for a poll that has returned.
func LongPoll(ctx context.Context, wait time.Duration, watch func(ctx context.Context) <-chan struct{}, try func() ([]store.Lease, error)) ([]store.Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		leases, again, err := pollOnce(ctx, deadline, watch, try)
		if !again {
			return leases, err
		}
	}
}

// pollOnce is one round of LongPoll: again says to go round once more.
func pollOnce(ctx context.Context, deadline time.Time, watch func(ctx context.Context) <-chan struct{}, try func() ([]store.Lease, error)) (leases []store.Lease, again bool, err error) {
	watchCtx, unwatch := context.WithCancel(ctx)
	defer unwatch()
	woken := watch(watchCtx)
	leases, err = try()
	if err != nil || len(leases) > 0 {
		return leases, false, err
	}
	left := time.Until(deadline)
	if left <= 0 {
		return nil, false, nil
	}
	t := time.NewTimer(min(left, PollInterval))
	defer t.Stop()
	select {
	case <-woken:
	case <-t.C:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	return nil, true, nil
}
