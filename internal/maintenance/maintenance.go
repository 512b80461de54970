// Package maintenance holds a server's background chores, each a Service
// with the same start and stop:
//
//   - Reaper settles the leases of workers that vanished (reaper.go), with
//     grace after the store was away (outage.go);
//   - Retention deletes the jobs that ended past jobs.retention_days
//     (retention.go);
//   - IdleSources ends the external jobs whose source went quiet
//     (idle.go);
//   - ScatterDriver runs scatters' rounds (scatters.go);
//   - ScheduledPromoter queues the SCHEDULED jobs whose time came and
//     whose after jobs succeeded (promoter.go);
//   - Ticker runs the periodic jobs' schedules (ticker.go);
//   - Notifier sends the webhooks of jobs' ends (notifier.go, through
//     package webhook).
//
// Each talks to the store, and to the service core where a rule is the
// core's (deleting a job, ending an external job, a scatter's round),
// through an interface of the few calls it makes. The server starts them
// after the core and stops them before the store closes. Every server
// sharing a store runs them all: each chore's writes are conditional, so
// two servers doing the same round change nothing twice.
package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Service is a background chore.
type Service interface {
	// Start runs the chore in the background until Stop is called or ctx
	// ends. A chore that has nothing to do as configured (retention 0)
	// starts nothing. Starting a service twice is an error.
	Start(ctx context.Context) error
	// Stop ends the chore and waits for the round under way, if any, to
	// end. Stopping a service not started does nothing.
	Stop()
}

// ErrStarted is Start's error for a service started before.
var ErrStarted = errors.New("maintenance: the service was started already")

// runner runs a service's loop in a goroutine of its own: what every
// service's Start and Stop share.
type runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs loop(ctx) in the background, ctx ending at Stop.
func (r *runner) start(ctx context.Context, loop func(ctx context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return ErrStarted
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		loop(ctx)
	}()
	return nil
}

// Stop implements Service.
func (r *runner) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

// sweeper is a service that does a chore every interval, with jitter so
// that servers sharing a store do not sweep in lockstep, and logs what
// each round did: how many jobs it changed, or how it failed (the next
// round tries again).
type sweeper struct {
	runner
	what     string        // what a round did, for the log: "settled expired leases"
	interval time.Duration // 0: nothing to do
	log      *slog.Logger
	round    func(ctx context.Context) (int, error)
}

// Start implements Service.
func (s *sweeper) Start(ctx context.Context) error {
	if s.interval <= 0 {
		return nil
	}
	return s.start(ctx, s.loop)
}

func (s *sweeper) loop(ctx context.Context) {
	for {
		t := time.NewTimer(s.interval + rand.N(s.interval/4))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n, err := s.round(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn(s.what+" failed", "error", err)
		case n > 0:
			s.log.Info(s.what, "jobs", n)
		}
	}
}

// orDiscard is log, or a logger that drops everything.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// orNoop is m, or a meter that records nothing.
func orNoop(m metric.Meter) metric.Meter {
	if m == nil {
		return noop.NewMeterProvider().Meter("spool")
	}
	return m
}

var (
	_ Service = (*Reaper)(nil)
	_ Service = (*Retention)(nil)
	_ Service = (*IdleSources)(nil)
	_ Service = (*ScatterDriver)(nil)
	_ Service = (*ScheduledPromoter)(nil)
	_ Service = (*Ticker)(nil)
	_ Service = (*Notifier)(nil)
)
