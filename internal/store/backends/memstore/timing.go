package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// PromoteScheduled implements store.TimingStore, by a look at every job:
// the memory store holds few.
func (s *Store) PromoteScheduled(_ context.Context, now time.Time) (store.Promoted, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out store.Promoted
	for _, r := range s.created {
		j := r.job
		if !storekit.Scheduled(j) {
			continue
		}
		parents := map[string]*spoolv1.Job{}
		for _, id := range j.After {
			if p, ok := s.jobs[id]; ok {
				parents[id] = p.job
			}
		}
		switch w, broken := storekit.Decide(j, parents, now); w {
		case storekit.WaitDone:
			s.settle(r, storekit.Promote(), now)
			out.Queued++
		case storekit.WaitBroken:
			s.settle(r, storekit.AfterFailed(broken, parents[broken], now), now)
			out.Cancelled++
		default:
			if len(j.After) == 0 && (out.Next.IsZero() || j.RunAfter.AsTime().Before(out.Next)) {
				out.Next = j.RunAfter.AsTime()
			}
		}
	}
	return out, nil
}

// SetQueueMaxRunning implements store.TimingStore.
func (s *Store) SetQueueMaxRunning(_ context.Context, name string, n int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.maxRunning, name)
		return nil
	}
	if s.maxRunning == nil {
		s.maxRunning = map[string]int32{}
	}
	s.maxRunning[name] = n
	return nil
}

// CreateSchedule implements store.ScheduleStore.
func (s *Store) CreateSchedule(_ context.Context, sc *spoolv1.Schedule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[sc.Name]; ok {
		return apierr.Errorf(spool.ErrAlreadyExists, "a schedule named %q exists already", sc.Name)
	}
	if s.schedules == nil {
		s.schedules = map[string]*spoolv1.Schedule{}
	}
	sc.Revision = 1
	s.schedules[sc.Name] = proto.CloneOf(sc)
	return nil
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(_ context.Context, name string) (*spoolv1.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[name]
	if !ok {
		return nil, store.ScheduleNotFound(name)
	}
	return proto.CloneOf(sc), nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(context.Context) ([]*spoolv1.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*spoolv1.Schedule, 0, len(s.schedules))
	for _, name := range slices.Sorted(maps.Keys(s.schedules)) {
		out = append(out, proto.CloneOf(s.schedules[name]))
	}
	return out, nil
}

// UpdateSchedule implements store.ScheduleStore.
func (s *Store) UpdateSchedule(_ context.Context, sc *spoolv1.Schedule) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.schedules[sc.Name]
	switch {
	case !ok:
		return store.ScheduleNotFound(sc.Name)
	case cur.Revision != sc.Revision:
		return store.ScheduleMoved(sc.Name)
	}
	sc.Revision++
	s.schedules[sc.Name] = proto.CloneOf(sc)
	return nil
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[name]; !ok {
		return store.ScheduleNotFound(name)
	}
	delete(s.schedules, name)
	return nil
}

// ClaimNotifications implements store.NotifyStore.
func (s *Store) ClaimNotifications(_ context.Context, now time.Time, hold time.Duration, limit int) ([]*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*record
	for _, r := range s.created {
		if d := r.job.NotifyDue; d != nil && !d.AsTime().After(now) {
			due = append(due, r)
		}
	}
	slices.SortStableFunc(due, func(a, b *record) int { return a.job.NotifyDue.AsTime().Compare(b.job.NotifyDue.AsTime()) })
	out := make([]*spoolv1.Job, 0, min(len(due), limit))
	for _, r := range due[:min(len(due), limit)] {
		r.job.NotifyDue = timestamppb.New(now.Add(hold))
		out = append(out, s.view(r))
	}
	return out, nil
}

// RecordDeliveries implements store.NotifyStore.
func (s *Store) RecordDeliveries(_ context.Context, jobID string, ds []*spoolv1.Delivery, next time.Time) error {
	_, err := s.edit(jobID, func(j *spoolv1.Job) bool {
		storekit.AddDeliveries(j, ds, next)
		return true
	})
	return err
}
