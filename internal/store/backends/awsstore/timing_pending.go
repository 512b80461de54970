package awsstore

import (
	"context"
	"errors"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// PLACEHOLDER while the store's timing, schedules and webhooks are built:
// this file must be gone before anything lands.

var errPending = errors.New("not built yet")

func (s *Store) PromoteScheduled(context.Context, time.Time) (store.Promoted, error) {
	return store.Promoted{}, errPending
}
func (s *Store) SetQueueMaxRunning(context.Context, string, int32) error { return errPending }
func (s *Store) CreateSchedule(context.Context, *spoolv1.Schedule) error { return errPending }
func (s *Store) GetSchedule(context.Context, string) (*spoolv1.Schedule, error) {
	return nil, errPending
}
func (s *Store) ListSchedules(context.Context) ([]*spoolv1.Schedule, error) { return nil, errPending }
func (s *Store) UpdateSchedule(context.Context, *spoolv1.Schedule) error    { return errPending }
func (s *Store) DeleteSchedule(context.Context, string) error               { return errPending }
func (s *Store) ClaimNotifications(context.Context, time.Time, time.Duration, int) ([]*spoolv1.Job, error) {
	return nil, errPending
}
func (s *Store) RecordDeliveries(context.Context, string, []*spoolv1.Delivery, time.Time) error {
	return errPending
}
