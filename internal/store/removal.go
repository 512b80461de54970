package store

import (
	"context"
	"time"
)

// RemovalStore deletes finished jobs: one at a time for an operator, and
// in small batches for the retention sweeper, which lists the jobs that
// ended long ago and deletes them one by one, so no call holds the store
// for long.
type RemovalStore interface {
	// DeleteJob removes a final job with everything stored for it: its log,
	// its request id (a later enqueue with it creates a new job) and, for
	// an external job, its accepted events. Afterwards the job is
	// spool.ErrNotFound everywhere. A job still queued or running is
	// spool.ErrConflict; an unknown one spool.ErrNotFound.
	DeleteJob(ctx context.Context, jobID string) error
	// EndedBefore returns the ids of up to limit final jobs that ended
	// (became final) before t, oldest end first where the backend can
	// order them. A backend may return fewer than limit, even none, while
	// more remain (it bounds the work of one call); callers delete what
	// they got and ask again.
	EndedBefore(ctx context.Context, t time.Time, limit int) ([]string, error)
}
