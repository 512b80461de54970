package memstore

import (
	"context"
	"maps"
	"slices"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// QueueStats implements store.QueueStore; a final job counts as ended
// since by its end (endedAt), not its last change.
func (s *Store) QueueStats(_ context.Context, since time.Time) ([]store.QueueStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byName := map[string]*store.QueueStats{}
	get := func(name string) *store.QueueStats {
		q := byName[name]
		if q == nil {
			q = &store.QueueStats{Name: name}
			byName[name] = q
		}
		return q
	}
	for name, at := range s.paused {
		q := get(name)
		q.Paused, q.PausedAt = true, at
	}
	for name, n := range s.maxRunning {
		get(name).MaxRunning = n
	}
	for _, r := range s.created {
		j := r.job
		q := get(j.Queue)
		ended := !endedAt(j).Before(since)
		switch j.State {
		case spoolv1.JobState_JOB_STATE_SCHEDULED:
			q.Scheduled++
		case spoolv1.JobState_JOB_STATE_QUEUED:
			q.Queued++
			if c := j.CreatedAt.AsTime(); q.OldestQueued.IsZero() || c.Before(q.OldestQueued) {
				q.OldestQueued = c
			}
		case spoolv1.JobState_JOB_STATE_RUNNING:
			q.Running++
		case spoolv1.JobState_JOB_STATE_SUCCEEDED:
			if ended {
				q.Succeeded++
			}
		case spoolv1.JobState_JOB_STATE_FAILED:
			if ended {
				q.Failed++
			}
		case spoolv1.JobState_JOB_STATE_CANCELLED:
			if ended {
				q.Cancelled++
			}
		}
	}
	out := make([]store.QueueStats, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// EndedPerMinute implements store.QueueStore, by each final job's end
// (endedAt).
func (s *Store) EndedPerMinute(_ context.Context, since time.Time) ([]store.EndedMinute, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t store.EndedTally
	for _, r := range s.created {
		j := r.job
		if at := endedAt(j); convert.State(j.State).IsFinal() && !at.Before(since) {
			t.Add(j.Queue, at, j.State, 1)
		}
	}
	return t.Minutes(), nil
}

// SetQueuePaused implements store.QueueStore.
func (s *Store) SetQueuePaused(_ context.Context, name string, paused bool, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !paused {
		delete(s.paused, name)
		return nil
	}
	if s.paused == nil {
		s.paused = map[string]time.Time{}
	}
	if _, ok := s.paused[name]; !ok {
		s.paused[name] = at
	}
	return nil
}

// QueuePaused implements store.QueueStore.
func (s *Store) QueuePaused(_ context.Context, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.paused[name]
	return ok, nil
}
