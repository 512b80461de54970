package memstore

import (
	"context"
	"iter"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// source is what the memory store knows of one source of external logs.
type source struct {
	open string            // the job id of its open job, if any
	seen map[string]string // event id -> the job that accepted it
}

// never is the lease expiry of an external job: it never comes.
var never = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Ingest implements store.IngestStore.
func (s *Store) Ingest(_ context.Context, req store.IngestRequest) (store.IngestResult, error) {
	if err := storekit.CheckIngest(req); err != nil {
		return store.IngestResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sources == nil {
		s.sources = map[string]*source{}
	}
	src := s.sources[req.Source]
	if src == nil {
		src = &source{seen: map[string]string{}}
		s.sources[req.Source] = src
	}
	fresh := make([]store.RawEvent, 0, len(req.Events))
	for _, e := range req.Events {
		if _, dup := src.seen[e.ID]; !dup {
			fresh = append(fresh, e)
		}
	}
	r, created := s.jobs[src.open], false
	if r == nil || r.job.State != spoolv1.JobState_JOB_STATE_RUNNING {
		if len(fresh) == 0 {
			// Nothing new: a delivery seen before does not reopen a source.
			return store.IngestResult{}, nil
		}
		r, created = s.insert(storekit.NewJobRecord(req.Job, storekit.Now())), true
		r.leaseID, r.expires = store.ExternalLease, never
		src.open = r.job.JobId
	}
	plan, accepted, err := storekit.PlanIngest(r.head, r.job.ExecutionConfig.GetBatching(), s.Limits(), fresh)
	if err != nil {
		return store.IngestResult{}, err
	}
	for _, a := range accepted {
		src.seen[a.ID] = r.job.JobId
	}
	r.accepted = append(r.accepted, accepted...)
	if len(plan.Items) > 0 {
		r.items = append(r.items, plan.Items...)
		r.head = plan.Head
		r.job.UpdatedAt = timestamppb.New(storekit.Now())
		s.hub.Notify(jobKey(r.job.JobId))
	}
	return store.IngestResult{Job: s.view(r), Created: created, Accepted: len(accepted)}, nil
}

// Accepted implements store.IngestStore.
func (s *Store) Accepted(_ context.Context, jobID string) iter.Seq2[store.Accepted, error] {
	return func(yield func(store.Accepted, error) bool) {
		s.mu.Lock()
		var acc []store.Accepted
		if r := s.jobs[jobID]; r != nil {
			acc = slices.Clone(r.accepted)
		}
		s.mu.Unlock()
		for _, a := range acc {
			if !yield(a, nil) {
				return
			}
		}
	}
}

// ReplaceLog implements store.IngestStore.
func (s *Store) ReplaceLog(_ context.Context, jobID string, evs []*spoolv1.JobEvent) error {
	items, err := storekit.StoredItems(evs, s.Limits())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[jobID]
	if !ok {
		return store.JobNotFound(jobID)
	}
	if err := storekit.CheckReplace(r.job); err != nil {
		return err
	}
	r.items = items
	s.hub.Notify(jobKey(jobID))
	return nil
}
