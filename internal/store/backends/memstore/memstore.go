// Package memstore is a JobStore held in memory: fast, nothing survives the
// process. It is the reference the conformance suite is written against and
// the store of unit tests.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"iter"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/notify"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// MaxItemBytes is the memory store's item limit, the same as SQLite's so
// tests exercise realistic limits.
const MaxItemBytes = 4 << 20

// Store is the in-memory JobStore.
type Store struct {
	mu   sync.Mutex
	jobs map[string]*record
	// created holds the jobs oldest first (by created_at, then id): the
	// listing order, read backwards.
	created []*record
	byReq   map[string]string // request_id -> job_id
	keys    []store.KeyRecord
	spent   spentIDs
	sc      scatters
	sources map[string]*source
	hub     notify.Hub
	polls   storekit.Polls
	// paused holds the paused queues and when each was paused.
	paused map[string]time.Time
	// maxRunning holds the queues' limits on running jobs.
	maxRunning map[string]int32
	// schedules holds the schedules by name.
	schedules map[string]*spoolv1.Schedule
	// swept is when leases were last swept (store.Sweep).
	swept time.Time
}

// ListScan is how many jobs a filtered List examines at most in one call.
// A filter that few jobs match gets a short, even empty, page and a cursor
// to go on from, rather than one call reading every job.
const ListScan = 1000

// record is a job and its log. job is mutated only under Store.mu and
// cloned on the way out.
type record struct {
	job     *spoolv1.Job
	leaseID string
	expires time.Time
	head    store.Head
	items   []storekit.Item
	// accepted are an external job's accepted events, in line order.
	accepted []store.Accepted
	// secrets are the job's sealed secrets (store.NewJob.Secrets).
	secrets []byte
}

var _ store.JobStore = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{jobs: map[string]*record{}, byReq: map[string]string{}}
}

func jobKey(id string) string { return "job:" + id }
func (s *Store) Close() error { return nil }
func (s *Store) Limits() store.Limits {
	return store.Limits{MaxItemBytes: MaxItemBytes}
}

// Capabilities implements store.JobStore: grace for leases, which run only
// while this process does. A completion is an append, then a completion,
// as the stores without a transaction for both make it, which keeps the
// core's path for them under test; one process has no other servers to
// share followers with, and nothing to give back to a file system.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{LeaseGracer: s}
}

// Watch implements store.JobStore.
func (s *Store) Watch(ctx context.Context, jobID string) <-chan struct{} {
	return s.hub.Watch(ctx, jobKey(jobID))
}

// Enqueue implements store.JobStore.
func (s *Store) Enqueue(_ context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	if err := nj.Check(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if nj.RequestID != "" {
		if id, ok := s.byReq[nj.RequestID]; ok {
			return s.view(s.jobs[id]), false, nil
		}
	}
	for _, id := range nj.After {
		if _, ok := s.jobs[id]; !ok {
			return nil, false, store.AfterNotFound(id)
		}
	}
	rec := s.insert(storekit.NewJobRecord(nj, storekit.Now()))
	rec.secrets = bytes.Clone(nj.Secrets)
	for _, id := range nj.After {
		if storekit.AddFollower(s.jobs[id].job, rec.job.JobId) {
			s.hub.Notify(jobKey(id))
		}
	}
	if nj.RequestID != "" {
		s.byReq[nj.RequestID] = rec.job.JobId
	}
	s.polls.Ready(nj.Queue)
	return s.view(rec), true, nil
}

// insert adds a new job.
func (s *Store) insert(j *spoolv1.Job) *record {
	rec := &record{job: j, head: store.NewHead()}
	s.jobs[j.JobId] = rec
	// Nearly always the newest: found at the end.
	i, _ := slices.BinarySearchFunc(s.created, rec, compareCreated)
	s.created = slices.Insert(s.created, i, rec)
	return rec
}

// view returns a copy of the record's job with its log position filled in.
func (s *Store) view(r *record) *spoolv1.Job {
	j := proto.CloneOf(r.job)
	j.LastSequence = r.head.NextSequence - 1
	j.LineCount = r.head.NextLine - 1
	if j.State == spoolv1.JobState_JOB_STATE_RUNNING && r.expires != never {
		j.LeaseExpiresAt = timestamppb.New(r.expires)
	}
	return j
}

// Get implements store.JobStore.
func (s *Store) Get(_ context.Context, id string) (*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, store.JobNotFound(id)
	}
	return s.view(r), nil
}

// JobSecrets implements store.JobStore.
func (s *Store) JobSecrets(_ context.Context, id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, store.JobNotFound(id)
	}
	return bytes.Clone(r.secrets), nil
}

// compareCreated orders records oldest first.
func compareCreated(a, b *record) int {
	return cmp.Or(a.job.CreatedAt.AsTime().Compare(b.job.CreatedAt.AsTime()), cmp.Compare(a.job.JobId, b.job.JobId))
}

// List implements store.JobStore. It walks the jobs newest first from the
// cursor, examining at most ListScan (or the page, when larger) per call.
func (s *Store) List(_ context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	after, err := storekit.ParseCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := store.ListLimit(f.Limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	// The jobs before end (oldest first) come after the cursor.
	end := len(s.created)
	if after != nil {
		end = sort.Search(len(s.created), func(i int) bool {
			j := s.created[i].job
			return !after.Before(j.CreatedAt.AsTime(), j.JobId)
		})
	}
	var out []*spoolv1.Job
	for i, scanned := end-1, 0; i >= 0; i, scanned = i-1, scanned+1 {
		j := s.created[i].job
		if scanned == max(ListScan, limit+1) {
			// Go on from the last job examined.
			last := s.created[i+1].job
			return out, storekit.Cursor{CreatedAt: last.CreatedAt.AsTime(), JobID: last.JobId}.Encode(), nil
		}
		if (f.Queue != "" && j.Queue != f.Queue) || (len(f.States) > 0 && !slices.Contains(f.States, j.State)) ||
			(f.Source != "" && j.GetParams().GetExternal().GetSource() != f.Source) {
			continue
		}
		if len(out) == limit {
			last := out[limit-1]
			return out, storekit.Cursor{CreatedAt: last.CreatedAt.AsTime(), JobID: last.JobId}.Encode(), nil
		}
		out = append(out, s.view(s.created[i]))
	}
	return out, "", nil
}

// Cancel implements store.JobStore.
func (s *Store) Cancel(_ context.Context, id, reason string) (*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, store.JobNotFound(id)
	}
	now := storekit.Now()
	switch r.job.State {
	case spoolv1.JobState_JOB_STATE_QUEUED, spoolv1.JobState_JOB_STATE_SCHEDULED:
		s.settle(r, storekit.CancelBeforeStart(reason, now), now)
	case spoolv1.JobState_JOB_STATE_RUNNING:
		if !r.job.CancelRequested {
			r.job.CancelRequested = true
			r.job.CancelReason = reason
			r.job.UpdatedAt = timestamppb.New(now)
			s.hub.Notify(jobKey(id))
		}
	}
	return s.view(r), nil
}

// AddNote implements store.JobStore.
func (s *Store) AddNote(_ context.Context, id, note string) (*spoolv1.Job, error) {
	return s.edit(id, func(j *spoolv1.Job) bool {
		storekit.AddNote(j, note)
		j.UpdatedAt = timestamppb.New(storekit.Now())
		return true
	})
}

// AddRerun implements store.JobStore. A link is not a change of the job's
// own: updated_at stays, so retention still counts from the job's end.
func (s *Store) AddRerun(_ context.Context, id, rerunID string) (*spoolv1.Job, error) {
	return s.edit(id, func(j *spoolv1.Job) bool { return storekit.AddRerun(j, rerunID) })
}

// edit changes a job with fn, which reports whether it changed anything.
func (s *Store) edit(id string, fn func(*spoolv1.Job) bool) (*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, store.JobNotFound(id)
	}
	if fn(r.job) {
		s.hub.Notify(jobKey(id))
	}
	return s.view(r), nil
}

// settle applies a lease's outcome; a job queued again wakes the queue.
func (s *Store) settle(r *record, o storekit.Outcome, now time.Time) {
	o.Apply(r.job, now)
	s.hub.Notify(jobKey(r.job.JobId))
	if o.State == spoolv1.JobState_JOB_STATE_QUEUED {
		s.polls.Ready(r.job.Queue)
	}
}

// Dequeue implements store.JobStore.
func (s *Store) Dequeue(ctx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	return s.polls.Dequeue(ctx, req, func() ([]store.Lease, error) {
		return s.lease(req), nil
	})
}

// lease takes up to req.Max ready jobs, highest priority first, then
// oldest first, as many as the queue's max_running leaves room for.
func (s *Store) lease(req store.DequeueRequest) []store.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := storekit.Now()
	var ready []*record
	running := 0
	for _, r := range s.jobs {
		if r.job.Queue != req.Queue {
			continue
		}
		if storekit.Ready(r.job, now) {
			ready = append(ready, r)
		}
		if r.job.State == spoolv1.JobState_JOB_STATE_RUNNING {
			running++
		}
	}
	n := store.DequeueLimit(req.Max)
	if limit := int(s.maxRunning[req.Queue]); limit > 0 {
		n = max(0, min(n, limit-running))
	}
	slices.SortFunc(ready, func(a, b *record) int {
		return cmp.Or(cmp.Compare(a.job.Priority, b.job.Priority),
			a.job.CreatedAt.AsTime().Compare(b.job.CreatedAt.AsTime()), cmp.Compare(a.job.JobId, b.job.JobId))
	})
	var out []store.Lease
	for _, r := range ready[:min(len(ready), n)] {
		r.job.State = spoolv1.JobState_JOB_STATE_RUNNING
		r.job.Attempt++
		r.job.UpdatedAt = timestamppb.New(now)
		r.job.StartedAt = r.job.UpdatedAt
		r.leaseID = storekit.NewLeaseID()
		r.expires = now.Add(req.LeaseDuration)
		s.hub.Notify(jobKey(r.job.JobId))
		out = append(out, store.Lease{
			LeaseRef:  store.LeaseRef{JobID: r.job.JobId, Queue: r.job.Queue, Attempt: r.job.Attempt, LeaseID: r.leaseID},
			Job:       s.view(r),
			ExpiresAt: r.expires,
			Head:      r.head,
		})
	}
	return out
}

// ExpireLeases implements store.JobStore.
func (s *Store) ExpireLeases(_ context.Context, sw store.Sweep) (store.Swept, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := storekit.Now()
	var out store.Swept
	from, grace := storekit.GraceFrom(s.swept, sw, now)
	until := now.Add(sw.Grace)
	for _, r := range s.jobs {
		if r.job.State != spoolv1.JobState_JOB_STATE_RUNNING {
			continue
		}
		switch {
		case grace && storekit.Graced(r.expires, from, until):
			r.expires = until
			out.Graced++
		case !r.expires.After(now):
			r.leaseID = ""
			s.settle(r, storekit.Expired(r.job, now), now)
			out.Settled++
		}
	}
	s.swept = now
	return out, nil
}

// current returns the job ref holds a current lease on.
func (s *Store) current(ref store.LeaseRef) (*record, error) {
	r, ok := s.jobs[ref.JobID]
	if !ok {
		return nil, store.JobNotFound(ref.JobID)
	}
	return r, storekit.CheckLease(ref, r.job.State, r.job.Attempt, r.leaseID)
}

// Heartbeat implements store.JobStore.
func (s *Store) Heartbeat(_ context.Context, ref store.LeaseRef, d time.Duration) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.current(ref)
	if err != nil {
		return time.Time{}, false, err
	}
	r.expires = storekit.Now().Add(d)
	return r.expires, r.job.CancelRequested, nil
}

// Complete implements store.JobStore.
func (s *Store) Complete(_ context.Context, ref store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.current(ref)
	if r != nil && storekit.SameCompletion(ref, r.job.State, r.job.Attempt, r.leaseID) {
		return s.view(r), nil
	}
	if err != nil {
		return nil, err
	}
	now := storekit.Now()
	o := storekit.Completed(r.job, res, ref.Attempt, now)
	if !convert.State(o.State).IsFinal() {
		r.leaseID = "" // a retry: the next attempt gets a lease of its own
	}
	s.settle(r, o, now)
	return s.view(r), nil
}

// Release implements store.JobStore.
func (s *Store) Release(_ context.Context, ref store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.current(ref)
	if err != nil {
		return nil, err
	}
	r.leaseID = ""
	s.settle(r, storekit.Released(r.job, countAttempt, reason, storekit.Now()), storekit.Now())
	return s.view(r), nil
}

// Append implements store.JobStore.
func (s *Store) Append(_ context.Context, ref store.LeaseRef, evs []events.Published) (store.Head, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[ref.JobID]
	if !ok {
		return store.Head{}, store.JobNotFound(ref.JobID)
	}
	if err := storekit.CheckAppend(ref, r.job.State, r.job.Attempt, r.leaseID); err != nil {
		return store.Head{}, err
	}
	plan, err := storekit.PlanAppend(r.head, ref.Attempt, r.job.ExecutionConfig.GetBatching(), s.Limits(), evs)
	if err != nil {
		return store.Head{}, err
	}
	for _, rep := range plan.Repeats {
		i, found := slices.BinarySearchFunc(r.items, rep.Sequence, func(it storekit.Item, seq int64) int { return cmp.Compare(it.Sequence, seq) })
		var it storekit.Item
		if found {
			it = r.items[i]
		}
		if err := rep.Check(it.EndSequence, it.Attempt, found); err != nil {
			return store.Head{}, err
		}
	}
	if len(plan.Items) > 0 {
		r.items = append(r.items, plan.Items...)
		r.head = plan.Head
		r.job.UpdatedAt = timestamppb.New(storekit.Now())
		s.hub.Notify(jobKey(ref.JobID))
	}
	return r.head, nil
}

// ReadStored implements store.JobStore: items are read from their payloads,
// as a store on disk reads them.
func (s *Store) ReadStored(_ context.Context, req store.ReadRequest) iter.Seq2[*events.Stored, error] {
	return func(yield func(*events.Stored, error) bool) {
		s.mu.Lock()
		r, ok := s.jobs[req.JobID]
		var items []storekit.Item
		if ok {
			// Items are never changed once stored, so the snapshot is
			// safe to read after unlocking.
			items = r.items[:len(r.items):len(r.items)]
		}
		s.mu.Unlock()
		var start int
		if req.FromLine > 0 {
			start = sort.Search(len(items), func(i int) bool { return items[i].SeekLine >= req.FromLine })
		} else {
			start = sort.Search(len(items), func(i int) bool { return items[i].EndSequence >= req.FromSequence })
		}
		for n, it := range items[start:] {
			if req.Limit > 0 && n >= req.Limit {
				return
			}
			if req.Stats != nil {
				req.Stats.ItemsRead++
			}
			st, err := storekit.ItemFromPayload(it.Payload, it.Sequence)
			if !yield(st, err) || err != nil {
				return
			}
		}
	}
}

// GraceLeases implements store.LeaseGracer.
func (s *Store) GraceLeases(_ context.Context, until time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.jobs {
		if r.job.State == spoolv1.JobState_JOB_STATE_RUNNING && r.expires.Before(until) {
			r.expires = until
			n++
		}
	}
	return n, nil
}
