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

// TickerOptions are what a Ticker is built from.
type TickerOptions struct {
	Ticks Ticks
	Log   *slog.Logger
}

// Ticker runs periodic jobs: each second, and at the next tick, it has the
// core enqueue the job of every schedule's due tick. Every server runs
// one; a tick's job has a request id of its own, so however many servers
// see it, one job is made.
type Ticker struct {
	runner
	o TickerOptions
}

// NewTicker returns a ticker over o.Ticks.
func NewTicker(o TickerOptions) *Ticker {
	o.Log = orDiscard(o.Log)
	return &Ticker{o: o}
}

// Start implements Service.
func (t *Ticker) Start(ctx context.Context) error { return t.start(ctx, t.loop) }

func (t *Ticker) loop(ctx context.Context) {
	for {
		now := storekit.Now()
		wake := now.Add(tickInterval)
		next, err := t.o.Ticks.RunTicks(ctx, now)
		if err != nil && ctx.Err() == nil {
			t.o.Log.Warn("running schedules' ticks failed; the next round tries again", "error", err)
		}
		if !next.IsZero() && next.Before(wake) {
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
