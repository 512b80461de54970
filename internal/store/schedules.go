package store

import (
	"context"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// ScheduleStore keeps the periodic jobs' schedules. A schedule is stored
// whole, as the message the API shows (less next_tick_at, which the
// service computes), and rewritten by compare-and-set on its revision: the
// servers that share a store each run the ticks they see, and the first to
// record a tick wins it. Every backend implements it.
type ScheduleStore interface {
	// CreateSchedule stores a new schedule with revision 1 (setting
	// s.Revision). A name in use is spool.ErrAlreadyExists.
	CreateSchedule(ctx context.Context, s *spoolv1.Schedule) error
	// GetSchedule returns a schedule, or spool.ErrNotFound.
	GetSchedule(ctx context.Context, name string) (*spoolv1.Schedule, error)
	// ListSchedules returns every schedule, by name (byte order).
	ListSchedules(ctx context.Context) ([]*spoolv1.Schedule, error)
	// UpdateSchedule replaces the schedule whose stored revision is
	// s.Revision, writing s with revision+1 (and setting s.Revision to
	// it). When the stored revision differs it writes nothing and returns
	// spool.ErrConflict; an unknown name is spool.ErrNotFound.
	UpdateSchedule(ctx context.Context, s *spoolv1.Schedule) error
	// DeleteSchedule removes a schedule, or returns spool.ErrNotFound.
	DeleteSchedule(ctx context.Context, name string) error
}
