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

// reapInterval is how often expired leases are settled.
const reapInterval = time.Second

// reapGap is how far apart two sweeps of the store (by any server) may be
// and still show that reapers reached it all along: a few intervals, so a
// slow sweep or a busy machine is not taken for an outage (which would
// only delay the settling of a vanished worker's job by a lease).
const reapGap = 3 * reapInterval

// LeaseExpirer is the store as the reaper uses it.
type LeaseExpirer interface {
	ExpireLeases(ctx context.Context, r store.Sweep) (store.Swept, error)
}

// ReaperOptions are what a Reaper is built from.
type ReaperOptions struct {
	Store LeaseExpirer
	// Outage is what this server saw of the store being away; the core
	// records the failed calls in it (nil: a record of the reaper's own
	// failed sweeps only).
	Outage *Outage
	// Grace is how long the leases an outage kept from their heartbeats
	// get: a lease length (jobs.lease_seconds).
	Grace time.Duration
	Log   *slog.Logger
	Meter metric.Meter
}

// Reaper settles expired leases, so a job whose worker died shows as
// queued again (or failed, or cancelled) without waiting for a worker to
// poll. Every server may run one: settling is a conditional write in every
// store. After the store was away, the leases it kept from their
// heartbeats get a lease length first (store.Sweep).
type Reaper struct {
	sweeper
	o       ReaperOptions
	settled metric.Int64Counter
}

// NewReaper returns a reaper of o.Store's leases.
func NewReaper(o ReaperOptions) *Reaper {
	o.Log = orDiscard(o.Log)
	if o.Outage == nil {
		o.Outage = NewOutage(storekit.Now())
	}
	r := &Reaper{o: o, settled: telemetry.Must(orNoop(o.Meter).Int64Counter("spool.leases.settled",
		metric.WithDescription("Expired leases settled by the reaper (re-queued, failed or cancelled).")))}
	r.sweeper = sweeper{what: "settled expired leases", interval: reapInterval, log: o.Log, round: r.Sweep}
	return r
}

// Sweep settles the leases that expired now and says how many.
func (r *Reaper) Sweep(ctx context.Context) (int, error) {
	since, seen := r.o.Outage.since()
	start := storekit.Now()
	res, err := r.o.Store.ExpireLeases(ctx, store.Sweep{Grace: r.o.Grace, Gap: reapGap, Since: since})
	if err != nil {
		// Whatever kept the sweep from the store may have kept heartbeats
		// from it too.
		if ctx.Err() == nil {
			r.o.Outage.Saw()
		}
		return 0, err
	}
	r.o.Outage.swept(start, seen)
	if res.Graced > 0 {
		r.o.Log.Warn("the store was away: running jobs' leases extended, so their workers, which kept them running, can renew them instead of the jobs running again",
			"jobs", res.Graced, "for", r.o.Grace)
	}
	r.settled.Add(ctx, int64(res.Settled))
	return res.Settled, nil
}
