package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// reapInterval is how often expired leases are settled.
const reapInterval = time.Second

// reapGap is how far apart two sweeps of the store (by any server) may be
// and still show that reapers reached it all along: a few intervals, so a
// slow sweep or a busy machine is not taken for an outage (which would
// only delay the settling of a vanished worker's job by a lease).
const reapGap = 3 * reapInterval

// RunReaper settles expired leases until ctx ends, so a job whose worker
// died shows as queued again (or failed, or cancelled) without waiting for
// a worker to poll. Every server may run it at once: settling is a
// conditional write in every store. After the store was away, the leases
// it kept from their heartbeats get a lease length first (store.Sweep).
func (s *Service) RunReaper(ctx context.Context) {
	s.sweep(ctx, reapInterval, "settled expired leases", s.reap)
}

// reap is one sweep of the reaper.
func (s *Service) reap(ctx context.Context) (int, error) {
	since, seen := s.outage.since()
	start := storekit.Now()
	grace := s.cfg.Jobs.Lease()
	res, err := s.store.ExpireLeases(ctx, store.Sweep{Grace: grace, Gap: reapGap, Since: since})
	if err != nil {
		// Whatever kept the sweep from the store may have kept heartbeats
		// from it too.
		if ctx.Err() == nil {
			s.outage.saw()
		}
		return 0, err
	}
	s.outage.swept(start, seen)
	if res.Graced > 0 {
		s.log.Warn("the store was away: running jobs' leases extended, so their workers, which kept them running, can renew them instead of the jobs running again",
			"jobs", res.Graced, "for", grace)
	}
	s.metrics.settled.Add(ctx, int64(res.Settled))
	return res.Settled, nil
}

// noticeOutage records a failed store call that found the store away.
func (s *Service) noticeOutage(err error) {
	if errors.Is(err, spool.ErrUnavailable) {
		s.outage.saw()
	}
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
