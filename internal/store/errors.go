package store

import (
	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// Stores report failures as one of spool's error kinds (spool.ErrNotFound,
// spool.ErrInvalidArgument, spool.ErrStaleLease, spool.ErrThrottled, …),
// made with apierr.Errorf, so the service core passes them on without
// translating. Any other error is the store's own failure, answered as
// internal.

// JobNotFound is the error for a job id no store knows.
func JobNotFound(jobID string) error {
	return apierr.Errorf(spool.ErrNotFound, "job %q not found", jobID)
}
