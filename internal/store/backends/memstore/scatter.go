package memstore

import (
	"context"
	"slices"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// scatters are the memory store's scatter records and their batches.
type scatters struct {
	recs    map[string]*store.ScatterRecord
	batches map[string][][]byte
}

// CreateScatter implements store.ScatterStore.
func (s *Store) CreateScatter(_ context.Context, rec *store.ScatterRecord, batches [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := rec.Scatter.GetScatterId()
	if s.sc.recs == nil {
		s.sc.recs, s.sc.batches = map[string]*store.ScatterRecord{}, map[string][][]byte{}
	}
	if _, ok := s.sc.recs[id]; ok {
		return store.ScatterExists(id)
	}
	rec.Version = 1
	s.sc.recs[id] = storekit.CloneScatter(rec)
	kept := make([][]byte, len(batches))
	for i, b := range batches {
		kept[i] = slices.Clone(b)
	}
	s.sc.batches[id] = kept
	return nil
}

// GetScatter implements store.ScatterStore.
func (s *Store) GetScatter(_ context.Context, id string) (*store.ScatterRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sc.recs[id]
	if !ok {
		return nil, store.ScatterNotFound(id)
	}
	return storekit.CloneScatter(rec), nil
}

// ListScatters implements store.ScatterStore.
func (s *Store) ListScatters(_ context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.sc.recs))
	for id, rec := range s.sc.recs {
		if (f.Cursor == "" || id < f.Cursor) && (!f.Active || rec.Active) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	limit := store.ListLimit(f.Limit)
	next := ""
	if len(ids) > limit {
		ids, next = ids[:limit], ids[limit-1]
	}
	out := make([]*store.ScatterRecord, len(ids))
	for i, id := range ids {
		out[i] = storekit.CloneScatter(s.sc.recs[id])
	}
	return out, next, nil
}

// UpdateScatter implements store.ScatterStore.
func (s *Store) UpdateScatter(_ context.Context, rec *store.ScatterRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := rec.Scatter.GetScatterId()
	cur, ok := s.sc.recs[id]
	if !ok {
		return store.ScatterNotFound(id)
	}
	if cur.Version != rec.Version {
		return store.ErrScatterMoved
	}
	rec.Version++
	s.sc.recs[id] = storekit.CloneScatter(rec)
	return nil
}

// ScatterBatch implements store.ScatterStore.
func (s *Store) ScatterBatch(_ context.Context, id string, index int32) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs, ok := s.sc.batches[id]
	if !ok || index < 0 || int(index) >= len(bs) {
		return nil, store.ScatterNotFound(id)
	}
	return slices.Clone(bs[index]), nil
}
