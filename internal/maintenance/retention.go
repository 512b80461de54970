package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Retention sweeping: how often, and how many jobs one store call returns.
// Each job is deleted in its own short write, so a sweep never holds the
// store long enough to keep workers from taking jobs.
const (
	retentionInterval = time.Minute
	retentionBatch    = 100
	// retentionRound caps one round, so a store far behind (a retention
	// just shortened) catches up over several minutes, not in one burst.
	retentionRound = 50 * retentionBatch
)

// EndedLister is the store as the retention sweeper reads it.
type EndedLister interface {
	EndedBefore(ctx context.Context, t time.Time, limit int) ([]string, error)
}

// JobRemover deletes a finished job by the core's rule (service.RemoveJob):
// its files beside it first, then the job; a batch of a scatter still
// running stays (spool.ErrConflict), a job gone already is
// spool.ErrNotFound.
type JobRemover interface {
	RemoveJob(ctx context.Context, jobID, reason string) error
}

// UploadSweeper deletes the uploads (stdins sent ahead of their jobs)
// stored before a time (service.SweepUploads).
type UploadSweeper interface {
	SweepUploads(ctx context.Context, before time.Time) (int, error)
}

// RetentionOptions are what a Retention is built from.
type RetentionOptions struct {
	Store EndedLister
	Jobs  JobRemover
	// Reclaimer gives the space of deleted jobs back after a round that
	// deleted some (nil: the store needs no telling).
	Reclaimer store.SpaceReclaimer
	// Retention is how long a finished job is kept (jobs.retention_days;
	// 0: for ever, and the sweeper does nothing).
	Retention time.Duration
	// Uploads, when set, has every round also delete the uploads older
	// than UploadAge, whatever the retention: no job took them in time,
	// and a job that took one keeps a copy of its own.
	Uploads   UploadSweeper
	UploadAge time.Duration
	// Clock is what the sweeper takes for now (nil: the store's clock).
	// Tests move it to see jobs age.
	Clock func() time.Time
	Log   *slog.Logger
}

// Retention deletes the jobs that ended more than the retention ago. Every
// server may run it: deleting a job twice finds it gone.
type Retention struct {
	sweeper
	o RetentionOptions
}

// NewRetention returns the retention sweeper o describes.
func NewRetention(o RetentionOptions) *Retention {
	o.Log = orDiscard(o.Log)
	if o.Clock == nil {
		o.Clock = storekit.Now
	}
	r := &Retention{o: o}
	interval := retentionInterval
	if o.Retention <= 0 && o.Uploads == nil {
		interval = 0
	}
	r.sweeper = sweeper{what: "deleted jobs past retention", interval: interval, log: o.Log, round: r.round}
	return r
}

// round is one round of both sweeps; it counts the jobs deleted.
func (r *Retention) round(ctx context.Context) (int, error) {
	n, err := r.Sweep(ctx)
	gone, uerr := r.SweepUploads(ctx)
	if gone > 0 {
		r.o.Log.Info("deleted uploads no job took", "uploads", gone, "older_than", r.o.UploadAge)
	}
	if uerr != nil {
		uerr = fmt.Errorf("deleting old uploads: %w", uerr)
	}
	return n, errors.Join(err, uerr)
}

// SweepUploads deletes the uploads older than the upload age now and
// returns how many went.
func (r *Retention) SweepUploads(ctx context.Context) (int, error) {
	if r.o.Uploads == nil || r.o.UploadAge <= 0 {
		return 0, nil
	}
	return r.o.Uploads.SweepUploads(ctx, r.o.Clock().Add(-r.o.UploadAge))
}

// Sweep runs one round now and returns how many jobs it deleted.
func (r *Retention) Sweep(ctx context.Context) (int, error) {
	if r.o.Retention <= 0 {
		return 0, nil
	}
	cut := r.o.Clock().Add(-r.o.Retention)
	deleted := 0
	for deleted < retentionRound {
		ids, err := r.o.Store.EndedBefore(ctx, cut, retentionBatch)
		if err != nil {
			return deleted, err
		}
		gone := 0
		for _, id := range ids {
			switch err := r.o.Jobs.RemoveJob(ctx, id, "retention"); {
			case err == nil:
				gone++
			case errors.Is(err, spool.ErrNotFound), errors.Is(err, spool.ErrConflict):
				// Deleted by another server, or kept for its scatter.
			default:
				return deleted + gone, err
			}
		}
		deleted += gone
		if gone == 0 || len(ids) < retentionBatch {
			break
		}
	}
	if r.o.Reclaimer != nil && deleted > 0 {
		if err := r.o.Reclaimer.ReclaimSpace(ctx); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
