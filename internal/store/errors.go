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

// AfterNotFound is the error for a job named in NewJob.After that no store
// knows.
func AfterNotFound(jobID string) error {
	return apierr.Errorf(spool.ErrInvalidArgument, "job %q, which the job is to run after, does not exist", jobID)
}

// ScheduleNotFound is the error for a schedule name no store knows.
func ScheduleNotFound(name string) error {
	return apierr.Errorf(spool.ErrNotFound, "schedule %q not found", name)
}

// ScheduleMoved is UpdateSchedule's error when the schedule changed since
// it was read.
func ScheduleMoved(name string) error {
	return apierr.Errorf(spool.ErrConflict, "schedule %q changed meanwhile: read it again", name)
}
