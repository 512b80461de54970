package maintenance

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/telemetry"
)

// promoteInterval is the longest a promoter sleeps: a job that another
// server made due, or whose after jobs another server ended, is queued
// within it.
const promoteInterval = time.Second

// Promoter is the store as the promoter uses it.
type Promoter interface {
	PromoteScheduled(ctx context.Context, now time.Time) (store.Promoted, error)
}

// Alarm wakes the promoter before its time: the core rings it when it
// made a job due sooner, or ended a job others run after.
type Alarm interface {
	// Sleeping says when the promoter wakes by itself.
	Sleeping(until time.Time)
	// C is rung to wake it now.
	C() <-chan struct{}
}

// PromoterOptions are what a Promoter is built from.
type PromoterOptions struct {
	Store Promoter
	// Alarm wakes it early (nil: it wakes each promoteInterval and at the
	// next due time only).
	Alarm Alarm
	Log   *slog.Logger
	Meter metric.Meter
}

// ScheduledPromoter queues the SCHEDULED jobs whose time came and whose
// after jobs succeeded, and cancels those whose after jobs failed. It
// looks every second, at the next due time the store knows, and at once
// when the alarm rings. Every server runs one; the store moves each job
// once.
type ScheduledPromoter struct {
	runner
	o PromoterOptions
	// interval is the longest it sleeps (promoteInterval; longer in
	// tests, to show that the alarm wakes it).
	interval          time.Duration
	queued, cancelled metric.Int64Counter
}

// NewPromoter returns a promoter of o.Store's scheduled jobs.
func NewPromoter(o PromoterOptions) *ScheduledPromoter {
	o.Log = orDiscard(o.Log)
	m := orNoop(o.Meter)
	return &ScheduledPromoter{o: o, interval: promoteInterval,
		queued: telemetry.Must(m.Int64Counter("spool.scheduled.queued",
			metric.WithDescription("Scheduled jobs queued by this server's promoter (their time came, their after jobs succeeded)."))),
		cancelled: telemetry.Must(m.Int64Counter("spool.scheduled.cancelled",
			metric.WithDescription("Scheduled jobs cancelled by this server's promoter because a job they run after failed."))),
	}
}

// Start implements Service.
func (p *ScheduledPromoter) Start(ctx context.Context) error { return p.start(ctx, p.loop) }

func (p *ScheduledPromoter) loop(ctx context.Context) {
	var ring <-chan struct{}
	if p.o.Alarm != nil {
		ring = p.o.Alarm.C()
	}
	for {
		wake := p.round(ctx)
		if p.o.Alarm != nil {
			p.o.Alarm.Sleeping(wake)
		}
		t := time.NewTimer(time.Until(wake))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-ring:
			t.Stop()
		}
	}
}

// round promotes what is due now and returns when to look again.
func (p *ScheduledPromoter) round(ctx context.Context) time.Time {
	now := storekit.Now()
	wake := now.Add(p.interval)
	res, err := p.Promote(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			p.o.Log.Warn("queueing scheduled jobs failed", "error", err)
		}
		return wake
	}
	if !res.Next.IsZero() && res.Next.Before(wake) {
		wake = res.Next
	}
	return wake
}

// Promote queues and cancels what is due at now, once, and counts it.
func (p *ScheduledPromoter) Promote(ctx context.Context, now time.Time) (store.Promoted, error) {
	res, err := p.o.Store.PromoteScheduled(ctx, now)
	if err != nil {
		return res, err
	}
	if res.Queued > 0 {
		p.queued.Add(ctx, int64(res.Queued))
	}
	if res.Cancelled > 0 {
		p.cancelled.Add(ctx, int64(res.Cancelled))
		p.o.Log.Info("cancelled scheduled jobs whose after jobs failed", "jobs", res.Cancelled)
	}
	return res, nil
}
