package maintenance

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// scatterTick is how often a server looks at every active scatter, for the
// batch jobs that ended elsewhere (another server, the reaper).
const scatterTick = time.Second

// ScatterRounds runs scatters' rounds (scatter.Driver, which the core
// kicks when one of a scatter's jobs ends on this server).
type ScatterRounds interface {
	// Woken is sent on when scatters were kicked.
	Woken() <-chan struct{}
	// Kicked returns the scatters kicked since the last call.
	Kicked() []string
	// Drive runs a round of a scatter.
	Drive(ctx context.Context, scatterID string) error
	// Serve lets the rounds start work that outlives a round (reading a
	// scatter's items) in ctx; wait returns once that work has stopped.
	Serve(ctx context.Context) (wait func())
}

// ScatterLister is the store as the driver finds the active scatters.
type ScatterLister interface {
	ListScatters(ctx context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error)
}

// ScatterOptions are what a ScatterDriver is built from.
type ScatterOptions struct {
	Store  ScatterLister
	Rounds ScatterRounds
	Log    *slog.Logger
}

// ScatterDriver drives scatters: a kicked one at once, every active one
// each scatterTick. Every server may run one at once: a round is written
// by a compare-and-set, and only the round that won acts.
type ScatterDriver struct {
	runner
	o ScatterOptions
}

// NewScatterDriver returns the driver o describes.
func NewScatterDriver(o ScatterOptions) *ScatterDriver {
	o.Log = orDiscard(o.Log)
	return &ScatterDriver{o: o}
}

// Start implements Service.
func (d *ScatterDriver) Start(ctx context.Context) error { return d.start(ctx, d.loop) }

func (d *ScatterDriver) loop(ctx context.Context) {
	defer d.o.Rounds.Serve(ctx)()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.o.Rounds.Woken():
			for _, id := range d.o.Rounds.Kicked() {
				d.drive(ctx, id)
			}
		case <-t.C:
			d.driveActive(ctx)
			// Jitter keeps servers from driving in lockstep.
			t.Reset(scatterTick + rand.N(scatterTick/4))
		}
	}
}

// driveActive runs a round of every active scatter.
func (d *ScatterDriver) driveActive(ctx context.Context) {
	cursor := ""
	for {
		recs, next, err := d.o.Store.ListScatters(ctx, store.ScatterFilter{Active: true, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			if ctx.Err() == nil {
				d.o.Log.Warn("listing active scatters failed", "error", err)
			}
			return
		}
		for _, r := range recs {
			d.drive(ctx, r.Scatter.GetScatterId())
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

func (d *ScatterDriver) drive(ctx context.Context, id string) {
	if err := d.o.Rounds.Drive(ctx, id); err != nil && ctx.Err() == nil {
		d.o.Log.Warn("a scatter round failed; the next one tries again", "scatter_id", id, "error", err)
	}
}
