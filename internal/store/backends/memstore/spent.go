package memstore

import (
	"context"
	"sync"
	"time"
)

// spentIDs are the ids spent and until when (store.SpentStore), under a
// lock of their own: spending never waits for the jobs.
type spentIDs struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// SpendOnce implements store.SpentStore. Each call also forgets the ids
// whose time has passed, so the map holds only live ones.
func (s *Store) SpendOnce(_ context.Context, id string, until time.Time) (bool, error) {
	sp := &s.spent
	sp.mu.Lock()
	defer sp.mu.Unlock()
	now := time.Now()
	if sp.until == nil {
		sp.until = map[string]time.Time{}
	}
	for old, u := range sp.until {
		if !u.After(now) {
			delete(sp.until, old)
		}
	}
	if _, ok := sp.until[id]; ok {
		return false, nil
	}
	sp.until[id] = until
	return true, nil
}

// Spent implements store.SpentStore.
func (s *Store) Spent(_ context.Context, id string) (bool, error) {
	s.spent.mu.Lock()
	defer s.spent.mu.Unlock()
	u, ok := s.spent.until[id]
	return ok && u.After(time.Now()), nil
}
