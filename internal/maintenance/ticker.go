package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/spool-run/spool/internal/store/storekit"
)

// tickInterval is the longest a ticker sleeps: it also sees schedules
// created or resumed on other servers within it.
const tickInterval = time.Second

// Ticks is the core as the ticker uses it: it runs every schedule's due
// tick (service.RunTicks).
type Ticks interface {
	RunTicks(ctx context.Context, now time.Time) (next time.Time, err error)
}

// TicksFunc is a function as Ticks.
type TicksFunc func(ctx context.Context, now time.Time) (time.Time, error)

// RunTicks implements Ticks.
func (f TicksFunc) RunTicks(ctx context.Context, now time.Time) (time.Time, error) {
	return f(ctx, now)
}

// TickerOptions are what a Ticker is built from.
type TickerOptions struct {
	Ticks Ticks
	Log   *slog.Logger
	// What the rounds do, for the log ("" : schedules' ticks).
	What string
	// Longest is the longest the ticker sleeps between rounds (0:
	// tickInterval).
	Longest time.Duration
}

// Ticker runs periodic work: each second (Longest), and at the next tick,
// it has the core run what is due. The server runs two: the schedules of
// periodic jobs (every server runs one; a tick's job has a request id of
// its own, so however many servers see it, one job is made) and the
// scheduled backfills from CloudWatch Logs (each round is claimed by one
// server).
type Ticker struct {
	runner
	o TickerOptions
}

// NewTicker returns a ticker over o.Ticks.
func NewTicker(o TickerOptions) *Ticker {
	o.Log = orDiscard(o.Log)
	if o.What == "" {
		o.What = "schedules' ticks"
	}
	if o.Longest <= 0 {
		o.Longest = tickInterval
	}
	return &Ticker{o: o}
}

// Start implements Service.
func (t *Ticker) Start(ctx context.Context) error {
	return t.start(ctx, func(ctx context.Context) {
		atEach(ctx, t.o.Longest, func(now time.Time) time.Time {
			next, err := t.o.Ticks.RunTicks(ctx, now)
			if err != nil && ctx.Err() == nil {
				t.o.Log.Warn("running "+t.o.What+" failed; the next round tries again", "error", err)
			}
			return next
		})
	})
}

// atEach calls round with the time now until ctx ends: again at the time
// round returns, or after at most longest.
func atEach(ctx context.Context, longest time.Duration, round func(now time.Time) (next time.Time)) {
	for {
		now := storekit.Now()
		wake := now.Add(longest)
		if next := round(now); !next.IsZero() && next.Before(wake) {
			wake = next
		}
		timer := time.NewTimer(time.Until(wake))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}
