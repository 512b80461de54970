package storemetrics

import (
	"context"
	"iter"
	"time"

	"go.opentelemetry.io/otel/metric"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// Store is a store.JobStore measured.
type Store struct {
	inner store.JobStore
	in    *instruments
	// caps are the inner store's capabilities, measured: made once, since
	// the core asks for them at every lease and completion.
	caps store.Capabilities
}

var _ store.JobStore = (*Store)(nil)

// Wrap measures st with instruments of m; storeType (sqlite, postgres,
// aws, memory) labels its figures. A backend that reports its retries
// (store.RetryReporter) reports them to the wrapper from then on.
func Wrap(st store.JobStore, storeType string, m metric.Meter) *Store {
	s := &Store{inner: st, in: newInstruments(m, storeType)}
	c := st.Capabilities()
	s.caps = store.Capabilities{WatchSharer: c.WatchSharer, RetryReporter: c.RetryReporter}
	if c.Finisher != nil {
		s.caps.Finisher = finisher{s, c.Finisher}
	}
	if c.LeaseGracer != nil {
		s.caps.LeaseGracer = leaseGracer{s, c.LeaseGracer}
	}
	if c.SpaceReclaimer != nil {
		s.caps.SpaceReclaimer = spaceReclaimer{s, c.SpaceReclaimer}
	}
	if c.PausedLeaser != nil {
		s.caps.PausedLeaser = pausedLeaser{s, c.PausedLeaser}
	}
	if c.Pinger != nil {
		s.caps.Pinger = pinger{s, c.Pinger}
	}
	if c.PollerSharer != nil {
		s.caps.PollerSharer = pollerSharer{s, c.PollerSharer}
	}
	if c.RetryReporter != nil {
		c.RetryReporter.ReportRetries(s.in)
	}
	return s
}

// Unwrap returns the store that s measures.
func (s *Store) Unwrap() store.JobStore { return s.inner }

// Capabilities implements store.JobStore: the inner store's, measured.
func (s *Store) Capabilities() store.Capabilities { return s.caps }

// Limits implements store.JobStore.
func (s *Store) Limits() store.Limits { return s.inner.Limits() }

// Close implements store.JobStore.
func (s *Store) Close() error { return s.inner.Close() }

// Watch implements store.JobStore. It is not measured: it only registers
// a wait, and the wait is what a follower's call lasts.
func (s *Store) Watch(ctx context.Context, jobID string) <-chan struct{} {
	return s.inner.Watch(ctx, jobID)
}

// The methods below implement store.JobStore's: each calls the inner
// store's and records the call as its operation.

func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (*spoolv1.Job, bool, error) {
	t := time.Now()
	j, created, err := s.inner.Enqueue(ctx, nj)
	s.in.done(ctx, opEnqueue, t, err)
	return j, created, err
}

func (s *Store) Get(ctx context.Context, jobID string) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.Get(ctx, jobID)
	s.in.done(ctx, opGet, t, err)
	return j, err
}

func (s *Store) List(ctx context.Context, f store.ListFilter) ([]*spoolv1.Job, string, error) {
	t := time.Now()
	jobs, next, err := s.inner.List(ctx, f)
	s.in.done(ctx, opList, t, err)
	return jobs, next, err
}

func (s *Store) Cancel(ctx context.Context, jobID, reason string) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.Cancel(ctx, jobID, reason)
	s.in.done(ctx, opCancel, t, err)
	return j, err
}

func (s *Store) AddNote(ctx context.Context, jobID, note string) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.AddNote(ctx, jobID, note)
	s.in.done(ctx, opAddNote, t, err)
	return j, err
}

func (s *Store) AddRerun(ctx context.Context, jobID, rerunID string) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.AddRerun(ctx, jobID, rerunID)
	s.in.done(ctx, opAddRerun, t, err)
	return j, err
}

func (s *Store) JobSecrets(ctx context.Context, jobID string) ([]byte, error) {
	t := time.Now()
	b, err := s.inner.JobSecrets(ctx, jobID)
	s.in.done(ctx, opJobSecrets, t, err)
	return b, err
}

func (s *Store) Dequeue(ctx context.Context, r store.DequeueRequest) ([]store.Lease, error) {
	t := time.Now()
	ls, err := s.inner.Dequeue(ctx, r)
	s.in.done(ctx, opDequeue, t, err)
	return ls, err
}

func (s *Store) Heartbeat(ctx context.Context, l store.LeaseRef, d time.Duration) (time.Time, bool, error) {
	t := time.Now()
	exp, cancelled, err := s.inner.Heartbeat(ctx, l, d)
	s.in.done(ctx, opHeartbeat, t, err)
	return exp, cancelled, err
}

func (s *Store) Complete(ctx context.Context, l store.LeaseRef, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.Complete(ctx, l, res)
	s.in.done(ctx, opComplete, t, err)
	return j, err
}

func (s *Store) Release(ctx context.Context, l store.LeaseRef, countAttempt bool, reason string) (*spoolv1.Job, error) {
	t := time.Now()
	j, err := s.inner.Release(ctx, l, countAttempt, reason)
	s.in.done(ctx, opRelease, t, err)
	return j, err
}

func (s *Store) ExpireLeases(ctx context.Context, r store.Sweep) (store.Swept, error) {
	t := time.Now()
	sw, err := s.inner.ExpireLeases(ctx, r)
	s.in.done(ctx, opExpireLeases, t, err)
	return sw, err
}

func (s *Store) Append(ctx context.Context, l store.LeaseRef, evs []events.Published) (store.Head, error) {
	t := time.Now()
	h, err := s.inner.Append(ctx, l, evs)
	s.in.done(ctx, opAppend, t, err)
	return h, err
}

// ReadStored implements store.JobStore. Its duration is the time spent in
// the store, not in the caller's loop: a follower's reader takes its time
// with every item.
func (s *Store) ReadStored(ctx context.Context, r store.ReadRequest) iter.Seq2[*events.Stored, error] {
	return measureSeq(s, ctx, opReadStored, s.inner.ReadStored(ctx, r))
}

func (s *Store) CreateKey(ctx context.Context, k store.KeyRecord) error {
	t := time.Now()
	err := s.inner.CreateKey(ctx, k)
	s.in.done(ctx, opCreateKey, t, err)
	return err
}

func (s *Store) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	t := time.Now()
	k, err := s.inner.KeyByHash(ctx, hash)
	s.in.done(ctx, opKeyByHash, t, err)
	return k, err
}

func (s *Store) ListKeys(ctx context.Context) ([]*spoolv1.Key, error) {
	t := time.Now()
	keys, err := s.inner.ListKeys(ctx)
	s.in.done(ctx, opListKeys, t, err)
	return keys, err
}

func (s *Store) RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	t := time.Now()
	k, err := s.inner.RevokeKey(ctx, name, at)
	s.in.done(ctx, opRevokeKey, t, err)
	return k, err
}

func (s *Store) TouchKey(ctx context.Context, hash string, at time.Time) error {
	t := time.Now()
	err := s.inner.TouchKey(ctx, hash, at)
	s.in.done(ctx, opTouchKey, t, err)
	return err
}

func (s *Store) SpendOnce(ctx context.Context, id string, until time.Time) (bool, error) {
	t := time.Now()
	first, err := s.inner.SpendOnce(ctx, id, until)
	s.in.done(ctx, opSpendOnce, t, err)
	return first, err
}

func (s *Store) Spent(ctx context.Context, id string) (bool, error) {
	t := time.Now()
	spent, err := s.inner.Spent(ctx, id)
	s.in.done(ctx, opSpent, t, err)
	return spent, err
}

func (s *Store) CreateScatter(ctx context.Context, rec *store.ScatterRecord, batches [][]byte) error {
	t := time.Now()
	err := s.inner.CreateScatter(ctx, rec, batches)
	s.in.done(ctx, opCreateScatter, t, err)
	return err
}

func (s *Store) GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error) {
	t := time.Now()
	rec, err := s.inner.GetScatter(ctx, id)
	s.in.done(ctx, opGetScatter, t, err)
	return rec, err
}

func (s *Store) ListScatters(ctx context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error) {
	t := time.Now()
	recs, next, err := s.inner.ListScatters(ctx, f)
	s.in.done(ctx, opListScatters, t, err)
	return recs, next, err
}

func (s *Store) UpdateScatter(ctx context.Context, rec *store.ScatterRecord) error {
	t := time.Now()
	err := s.inner.UpdateScatter(ctx, rec)
	s.in.done(ctx, opUpdateScatter, t, err)
	return err
}

func (s *Store) ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error) {
	t := time.Now()
	b, err := s.inner.ScatterBatch(ctx, id, index)
	s.in.done(ctx, opScatterBatch, t, err)
	return b, err
}

func (s *Store) Ingest(ctx context.Context, r store.IngestRequest) (store.IngestResult, error) {
	t := time.Now()
	res, err := s.inner.Ingest(ctx, r)
	s.in.done(ctx, opIngest, t, err)
	return res, err
}

// Accepted implements store.JobStore, measured as ReadStored is.
func (s *Store) Accepted(ctx context.Context, jobID string) iter.Seq2[store.Accepted, error] {
	return measureSeq(s, ctx, opAccepted, s.inner.Accepted(ctx, jobID))
}

func (s *Store) ReplaceLog(ctx context.Context, jobID string, evs []*spoolv1.JobEvent) error {
	t := time.Now()
	err := s.inner.ReplaceLog(ctx, jobID, evs)
	s.in.done(ctx, opReplaceLog, t, err)
	return err
}

func (s *Store) QueueStats(ctx context.Context, since time.Time) ([]store.QueueStats, error) {
	t := time.Now()
	qs, err := s.inner.QueueStats(ctx, since)
	s.in.done(ctx, opQueueStats, t, err)
	return qs, err
}

func (s *Store) EndedPerMinute(ctx context.Context, since time.Time) ([]store.EndedMinute, error) {
	t := time.Now()
	ms, err := s.inner.EndedPerMinute(ctx, since)
	s.in.done(ctx, opEndedPerMinute, t, err)
	return ms, err
}

func (s *Store) SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error {
	t := time.Now()
	err := s.inner.SetQueuePaused(ctx, name, paused, at)
	s.in.done(ctx, opSetQueuePaused, t, err)
	return err
}

func (s *Store) QueuePaused(ctx context.Context, name string) (bool, error) {
	t := time.Now()
	paused, err := s.inner.QueuePaused(ctx, name)
	s.in.done(ctx, opQueuePaused, t, err)
	return paused, err
}

func (s *Store) DeleteJob(ctx context.Context, jobID string) error {
	t := time.Now()
	err := s.inner.DeleteJob(ctx, jobID)
	s.in.done(ctx, opDeleteJob, t, err)
	return err
}

func (s *Store) EndedBefore(ctx context.Context, before time.Time, limit int) ([]string, error) {
	t := time.Now()
	ids, err := s.inner.EndedBefore(ctx, before, limit)
	s.in.done(ctx, opEndedBefore, t, err)
	return ids, err
}

// measureSeq measures a read that yields as it goes: one call, lasting as
// long as the store worked on it (the time the caller spent with each item
// is taken out), with the first error it yielded.
func measureSeq[T any](s *Store, ctx context.Context, o op, seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		start := time.Now()
		var away time.Duration
		var failed error
		for v, err := range seq {
			if err != nil && failed == nil {
				failed = err
			}
			t := time.Now()
			more := yield(v, err)
			away += time.Since(t)
			if !more {
				break
			}
		}
		s.in.duration.Record(ctx, (time.Since(start) - away).Seconds(), s.in.byOp[o]...)
		if failed != nil {
			s.in.errs.Add(ctx, 1, s.in.byErr[o][kindOf(failed)]...)
		}
	}
}
