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
	for {
		// Jitter keeps replicas from sweeping in lockstep.
		t := time.NewTimer(reapInterval + rand.N(reapInterval/4))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n, err := s.store.ExpireLeases(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("settling expired leases failed", "error", err)
		case n > 0:
			s.log.Info("settled expired leases", "jobs", n)
			s.metrics.settled.Add(ctx, int64(n))
		}
	}
}
