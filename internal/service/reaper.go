package service

import (
	"context"
	"math/rand/v2"
	"time"
)

// reapInterval is how often expired leases are settled.
const reapInterval = time.Second

// RunReaper settles expired leases until ctx ends, so a job whose worker
// died shows as queued again (or failed, or cancelled) without waiting for
// a worker to poll. Every server may run it at once: settling is a
// conditional write in every store.
func (s *Service) RunReaper(ctx context.Context) {
	s.sweep(ctx, reapInterval, "settled expired leases", func(ctx context.Context) (int, error) {
		n, err := s.store.ExpireLeases(ctx)
		s.metrics.settled.Add(ctx, int64(n))
		return n, err
	})
}

// sweep runs one of the core's background chores every interval, until
// ctx ends, and logs what it did: how many jobs it changed, or how it
// failed (it tries again at the next round). Jitter keeps servers sharing
// a store from sweeping in lockstep.
func (s *Service) sweep(ctx context.Context, interval time.Duration, what string, chore func(context.Context) (int, error)) {
	for {
		t := time.NewTimer(interval + rand.N(interval/4))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n, err := chore(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn(what+" failed", "error", err)
		case n > 0:
			s.log.Info(what, "jobs", n)
		}
	}
}
