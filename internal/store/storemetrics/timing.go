package storemetrics

import (
	"context"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// The TimingStore, ScheduleStore and NotifyStore methods, measured.

func (s *Store) PromoteScheduled(ctx context.Context, now time.Time) (store.Promoted, error) {
	t := time.Now()
	p, err := s.inner.PromoteScheduled(ctx, now)
	s.in.done(ctx, opPromoteScheduled, t, err)
	return p, err
}

func (s *Store) SetQueueMaxRunning(ctx context.Context, name string, max int32) error {
	t := time.Now()
	err := s.inner.SetQueueMaxRunning(ctx, name, max)
	s.in.done(ctx, opSetQueueMaxRunning, t, err)
	return err
}

func (s *Store) CreateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	t := time.Now()
	err := s.inner.CreateSchedule(ctx, sc)
	s.in.done(ctx, opCreateSchedule, t, err)
	return err
}

func (s *Store) GetSchedule(ctx context.Context, name string) (*spoolv1.Schedule, error) {
	t := time.Now()
	sc, err := s.inner.GetSchedule(ctx, name)
	s.in.done(ctx, opGetSchedule, t, err)
	return sc, err
}

func (s *Store) ListSchedules(ctx context.Context) ([]*spoolv1.Schedule, error) {
	t := time.Now()
	scs, err := s.inner.ListSchedules(ctx)
	s.in.done(ctx, opListSchedules, t, err)
	return scs, err
}

func (s *Store) UpdateSchedule(ctx context.Context, sc *spoolv1.Schedule) error {
	t := time.Now()
	err := s.inner.UpdateSchedule(ctx, sc)
	s.in.done(ctx, opUpdateSchedule, t, err)
	return err
}

func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	t := time.Now()
	err := s.inner.DeleteSchedule(ctx, name)
	s.in.done(ctx, opDeleteSchedule, t, err)
	return err
}

func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, hold time.Duration, max int) ([]*spoolv1.Job, error) {
	t := time.Now()
	js, err := s.inner.ClaimNotifications(ctx, now, hold, max)
	s.in.done(ctx, opClaimNotifications, t, err)
	return js, err
}

func (s *Store) RecordDeliveries(ctx context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error {
	t := time.Now()
	err := s.inner.RecordDeliveries(ctx, jobID, ds, next)
	s.in.done(ctx, opRecordDeliveries, t, err)
	return err
}
