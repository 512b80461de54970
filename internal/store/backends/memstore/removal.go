package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// DeleteJob implements store.RemovalStore.
func (s *Store) DeleteJob(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return store.JobNotFound(id)
	}
	if !convert.State(r.job.State).IsFinal() {
		return storekit.NotFinished(id, r.job.State)
	}
	delete(s.jobs, id)
	if i, ok := slices.BinarySearchFunc(s.created, r, compareCreated); ok {
		s.created = slices.Delete(s.created, i, i+1)
	}
	if rid := r.job.RequestId; rid != "" && s.byReq[rid] == id {
		delete(s.byReq, rid)
	}
	if src := s.sources[r.job.GetParams().GetExternal().GetSource()]; src != nil {
		for _, a := range r.accepted {
			if src.seen[a.ID] == id {
				delete(src.seen, a.ID)
			}
		}
	}
	s.hub.Notify(jobKey(id))
	return nil
}

// EndedBefore implements store.RemovalStore, by each job's end (endedAt).
func (s *Store) EndedBefore(_ context.Context, t time.Time, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ended []*record
	for _, r := range s.jobs {
		if convert.State(r.job.State).IsFinal() && endedAt(r.job).Before(t) {
			ended = append(ended, r)
		}
	}
	slices.SortFunc(ended, func(a, b *record) int {
		return cmp.Or(endedAt(a.job).Compare(endedAt(b.job)), cmp.Compare(a.job.JobId, b.job.JobId))
	})
	ids := make([]string, 0, min(len(ended), limit))
	for _, r := range ended[:min(len(ended), limit)] {
		ids = append(ids, r.job.JobId)
	}
	return ids, nil
}

// endedAt is when a final job ended, which this store keeps no column
// for: its result's finished_at. Every way a job becomes final gives it a
// result with one (storekit: Outcome.Apply stores the outcome's result,
// and Completed, Released, Expired, CancelledResult and NewJobRecord for a
// rejected job all set it), so unlike updated_at it does not move when a
// note is added afterwards. It is the store's clock at the end except
// after a completion whose worker reported its own finished_at, which is
// kept as given. updated_at stands in should a final job have none.
func endedAt(j *spoolv1.Job) time.Time {
	if f := j.GetResult().GetFinishedAt(); f != nil {
		return f.AsTime()
	}
	return j.GetUpdatedAt().AsTime()
}
