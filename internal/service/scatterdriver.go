package service

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// A scatter moves on in rounds. A round reads the scatter's record, looks
// at the jobs of its batches in flight, and writes what changed in one
// compare-and-set: batches that ended, batches handed to the queue, the
// state. Only then does it act on the jobs (enqueue, cancel). Every server
// runs rounds, woken by its own batch jobs' ends and by a timer for the
// others', and two rounds of one scatter never both win: the loser reads
// again. Acting after the write means a round that lost never enqueued a
// batch the winner did not count, and a server killed between the write
// and the act leaves batches counted as released whose jobs do not exist
// yet: the next round, on any server, finds them missing and enqueues them
// under their fixed ids, so no batch runs twice and none is lost.

// scatterTick is how often a server looks at every active scatter, for the
// batch jobs that ended elsewhere (another server, the reaper).
const scatterTick = time.Second

// roundTries bounds the rounds one wake-up runs for a scatter that other
// servers keep moving on.
const roundTries = 5

// scatterKicks are the scatters this server should drive now.
type scatterKicks struct {
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

func (k *scatterKicks) init() {
	k.pending, k.wake = map[string]bool{}, make(chan struct{}, 1)
}

// kick asks for a round of scatter id soon. Kicks of the same scatter
// before its round merge into one.
func (k *scatterKicks) kick(id string) {
	k.mu.Lock()
	k.pending[id] = true
	k.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// take returns the kicked scatters and forgets them.
func (k *scatterKicks) take() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := make([]string, 0, len(k.pending))
	for id := range k.pending {
		ids = append(ids, id)
	}
	clear(k.pending)
	return ids
}

// kickScatterOf wakes the driver of the scatter job belongs to, if any.
func (s *Service) kickScatterOf(job *spoolv1.Job) {
	if id := job.GetParams().GetScatter().GetScatterId(); id != "" {
		s.scatters.kick(id)
	}
}

// RunScatters drives scatters until ctx ends: kicked ones at once, every
// active one each scatterTick. Every server may run it at once.
func (s *Service) RunScatters(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.scatters.wake:
			for _, id := range s.scatters.take() {
				s.driveLogged(ctx, id)
			}
		case <-t.C:
			s.driveActive(ctx)
			// Jitter keeps servers from driving in lockstep.
			t.Reset(scatterTick + rand.N(scatterTick/4))
		}
	}
}

// driveActive runs a round of every active scatter.
func (s *Service) driveActive(ctx context.Context) {
	cursor := ""
	for {
		recs, next, err := s.store.ListScatters(ctx, store.ScatterFilter{Active: true, Limit: store.MaxListLimit, Cursor: cursor})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("listing active scatters failed", "error", err)
			}
			return
		}
		for _, r := range recs {
			s.driveLogged(ctx, r.Scatter.GetScatterId())
		}
		if next == "" {
			return
		}
		cursor = next
	}
}

func (s *Service) driveLogged(ctx context.Context, id string) {
	if err := s.driveScatter(ctx, id); err != nil && ctx.Err() == nil {
		s.log.Warn("a scatter round failed; the next one tries again", "scatter_id", id, "error", err)
	}
}

// driveScatter runs rounds of a scatter until one is written (or nothing
// changed), then acts on what it decided.
func (s *Service) driveScatter(ctx context.Context, id string) error {
	for range roundTries {
		rec, err := s.store.GetScatter(ctx, id)
		if err != nil {
			return err
		}
		if !rec.Active {
			return nil
		}
		before := storekit.CloneScatter(rec)
		r := round{svc: s, rec: rec}
		if err := r.look(ctx); err != nil {
			return err
		}
		if sameScatter(before, rec) {
			return r.act(ctx)
		}
		rec.Scatter.UpdatedAt = timestamppb.New(storekit.Now())
		err = s.store.UpdateScatter(ctx, rec)
		if errors.Is(err, store.ErrScatterMoved) {
			continue
		}
		if err != nil {
			return err
		}
		r.report(ctx)
		return r.act(ctx)
	}
	return nil
}

// sameScatter reports whether a round changed nothing worth writing.
func sameScatter(a, b *store.ScatterRecord) bool {
	return a.Active == b.Active && a.Released == b.Released && string(a.Ended) == string(b.Ended) &&
		string(a.Failed) == string(b.Failed) && proto.Equal(a.Scatter, b.Scatter)
}

// round is one round of a scatter: what look decided, for act and report.
type round struct {
	svc *Service
	rec *store.ScatterRecord
	// enqueue are the batches whose jobs act creates: newly released ones
	// and released ones whose job is missing.
	enqueue []int32
	// cancel are the batch jobs act cancels (and cancelRunning whether
	// running ones too).
	cancel        []int32
	cancelRunning bool
	// gather: act enqueues the gather job; cancelGather: act cancels it.
	gather, cancelGather bool
	// ended and failed are the batches this round saw end, for telemetry.
	ended, failed []int32
}

// look reads the jobs of the batches in flight and decides the round.
func (r *round) look(ctx context.Context) error {
	sc := r.rec.Scatter
	p := sc.GetProgress()
	final := spool.ScatterIsFinal(sc.GetState())
	p.Queued, p.Running = 0, 0
	for i := range r.rec.Released {
		if r.rec.Ended.Has(i) {
			continue
		}
		job, err := r.svc.store.Get(ctx, BatchJobID(sc.GetScatterId(), i))
		if errors.Is(err, spool.ErrNotFound) {
			// Released by a round whose server stopped before enqueueing.
			r.enqueue = append(r.enqueue, i)
			p.Queued++
			continue
		}
		if err != nil {
			return err
		}
		switch job.GetState() {
		case spoolv1.JobState_JOB_STATE_QUEUED:
			p.Queued++
		case spoolv1.JobState_JOB_STATE_RUNNING:
			p.Running++
		default:
			r.settle(i, job)
		}
	}
	if final {
		r.windDown()
		return nil
	}
	if r.tooManyFailed() {
		stop(r.rec, spoolv1.ScatterState_SCATTER_STATE_FAILED, fmt.Sprintf("%d of %d batches failed, more than the %s tolerated",
			p.GetFailed()+p.GetCancelled(), p.GetBatchCount(), tolerance(sc.GetSpec())))
		r.windDown()
		return nil
	}
	r.release()
	if r.rec.Ended.Count() < p.GetBatchCount() {
		return nil
	}
	return r.gatherOrFinish(ctx)
}

// settle counts a batch whose job ended.
func (r *round) settle(i int32, job *spoolv1.Job) {
	p := r.rec.Scatter.GetProgress()
	r.rec.Ended.Set(i)
	r.ended = append(r.ended, i)
	switch job.GetState() {
	case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		p.Succeeded++
		p.ItemsDone += int64(job.GetParams().GetScatter().GetItemCount())
		return
	case spoolv1.JobState_JOB_STATE_CANCELLED:
		p.Cancelled++
	default:
		p.Failed++
	}
	r.rec.Failed.Set(i)
	r.failed = append(r.failed, i)
}

// release hands batches to the queue while the concurrency limit allows.
func (r *round) release() {
	sc := r.rec.Scatter
	p := sc.GetProgress()
	limit := sc.GetSpec().GetMaxConcurrency()
	for r.rec.Released < p.GetBatchCount() && (limit == 0 || p.GetQueued()+p.GetRunning() < limit) {
		r.enqueue = append(r.enqueue, r.rec.Released)
		r.rec.Released++
		p.Queued++
	}
	p.Waiting = p.GetBatchCount() - r.rec.Released
}

// gatherOrFinish moves a scatter whose batches all ended within tolerance
// on: to its gather, or to success.
func (r *round) gatherOrFinish(ctx context.Context) error {
	sc := r.rec.Scatter
	if sc.GetSpec().GetGather() == nil {
		sc.State = spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED
		r.rec.Active = false
		return nil
	}
	id := GatherJobID(sc.GetScatterId())
	sc.State, sc.GatherJobId = spoolv1.ScatterState_SCATTER_STATE_GATHERING, id
	job, err := r.svc.store.Get(ctx, id)
	switch {
	case errors.Is(err, spool.ErrNotFound):
		r.gather = true
	case err != nil:
		return err
	case job.GetState() == spoolv1.JobState_JOB_STATE_SUCCEEDED:
		sc.State = spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED
		r.rec.Active = false
	case spool.IsFinal(job.GetState()):
		sc.State, sc.Error = spoolv1.ScatterState_SCATTER_STATE_FAILED, "the gather job "+spool.StateName(job.GetState())
		r.rec.Active = false
	}
	return nil
}

// windDown is a round of a scatter that failed or was cancelled: the batch
// jobs not started are cancelled (running ones too when cancelled), and the
// scatter stays active until none is left in flight.
func (r *round) windDown() {
	sc := r.rec.Scatter
	p := sc.GetProgress()
	r.cancelRunning = sc.GetState() == spoolv1.ScatterState_SCATTER_STATE_CANCELLED
	r.cancelGather = r.cancelRunning && sc.GetGatherJobId() != ""
	for i := range r.rec.Released {
		if !r.rec.Ended.Has(i) {
			r.cancel = append(r.cancel, i)
		}
	}
	p.Waiting = 0
	r.rec.Active = p.GetQueued()+p.GetRunning() > 0
}

// stop makes a scatter final: the batches never released count as
// cancelled.
func stop(rec *store.ScatterRecord, st spoolv1.ScatterState, why string) {
	sc := rec.Scatter
	p := sc.GetProgress()
	sc.State, sc.Error = st, why
	for i := rec.Released; i < p.GetBatchCount(); i++ {
		rec.Ended.Set(i)
		rec.Failed.Set(i)
		p.Cancelled++
	}
	p.Waiting = 0
}

// tooManyFailed reports whether more batches failed than the scatter
// tolerates. As in Step Functions: with neither a count nor a percentage,
// no failure is tolerated; with either, the scatter fails once the
// failures pass any that is set (reaching it is still tolerated).
func (r *round) tooManyFailed() bool {
	spec := r.rec.Scatter.GetSpec()
	failed := r.rec.Failed.Count()
	if failed == 0 {
		return false
	}
	if spec.ToleratedFailureCount == nil && spec.ToleratedFailurePercentage == nil {
		return true
	}
	if spec.ToleratedFailureCount != nil && failed > spec.GetToleratedFailureCount() {
		return true
	}
	n := r.rec.Scatter.GetProgress().GetBatchCount()
	return spec.ToleratedFailurePercentage != nil && float64(failed)*100 > float64(spec.GetToleratedFailurePercentage())*float64(n)
}

// tolerance says what a spec tolerates, for people.
func tolerance(spec *spoolv1.ScatterSpec) string {
	switch c, p := spec.ToleratedFailureCount, spec.ToleratedFailurePercentage; {
	case c != nil && p != nil:
		return fmt.Sprintf("%d or %g%%", *c, *p)
	case c != nil:
		return fmt.Sprint(*c)
	case p != nil:
		return fmt.Sprintf("%g%%", *p)
	}
	return "0"
}

// report records the round's news as metrics and log events, once: only
// the round whose write won reports.
func (r *round) report(ctx context.Context) {
	s, sc := r.svc, r.rec.Scatter
	attrs := metric.WithAttributes(attribute.String("queue", sc.GetSpec().GetQueue()))
	failed := map[int32]bool{}
	for _, i := range r.failed {
		failed[i] = true
		s.log.WarnContext(ctx, "scatter batch failed", "scatter_id", sc.GetScatterId(), "batch", i, "job_id", BatchJobID(sc.GetScatterId(), i))
	}
	for _, i := range r.ended {
		if !failed[i] {
			s.log.InfoContext(ctx, "scatter batch completed", "scatter_id", sc.GetScatterId(), "batch", i)
		}
	}
	s.metrics.batchesFailed.Add(ctx, int64(len(r.failed)), attrs)
	s.metrics.batchesCompleted.Add(ctx, int64(len(r.ended)-len(r.failed)), attrs)
	if spool.ScatterIsFinal(sc.GetState()) && !r.rec.Active {
		s.log.InfoContext(ctx, "scatter finished", "scatter_id", sc.GetScatterId(), "state", spool.ScatterStateName(sc.GetState()), "error", sc.GetError())
	}
}

// act does what the written round decided to the jobs. Failures are left
// to the next round, which finds the same work undone.
func (r *round) act(ctx context.Context) error {
	sc := r.rec.Scatter
	var errs []error
	for _, i := range r.enqueue {
		errs = append(errs, r.svc.enqueueBatch(ctx, r.rec, i))
	}
	if r.gather {
		errs = append(errs, r.svc.enqueueGather(ctx, r.rec))
	}
	if r.cancelGather {
		if _, err := r.svc.store.Cancel(ctx, sc.GetGatherJobId(), "scatter "+sc.GetScatterId()+" "+sc.GetError()); err != nil && !errors.Is(err, spool.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	for _, i := range r.cancel {
		id := BatchJobID(sc.GetScatterId(), i)
		job, err := r.svc.store.Get(ctx, id)
		if errors.Is(err, spool.ErrNotFound) {
			// Its enqueue may still be on its way: create the job so the
			// cancel sticks, and the enqueue finds it cancelled.
			if err = r.svc.enqueueBatch(ctx, r.rec, i); err == nil {
				job, err = r.svc.store.Get(ctx, id)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if job.GetState() == spoolv1.JobState_JOB_STATE_RUNNING && !r.cancelRunning || spool.IsFinal(job.GetState()) {
			continue
		}
		if _, err := r.svc.store.Cancel(ctx, id, "scatter "+sc.GetScatterId()+" "+sc.GetError()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// enqueueBatch creates the job of batch i, or finds it created.
func (s *Service) enqueueBatch(ctx context.Context, rec *store.ScatterRecord, i int32) error {
	sc := rec.Scatter
	items, err := s.store.ScatterBatch(ctx, sc.GetScatterId(), i)
	if err != nil {
		return err
	}
	k, err := countItems(string(items))
	if err != nil {
		return fmt.Errorf("batch %d of scatter %s as stored: %w", i, sc.GetScatterId(), err)
	}
	member := &spoolv1.ScatterMember{ScatterId: sc.GetScatterId(), BatchIndex: i, BatchCount: sc.GetProgress().GetBatchCount(), ItemCount: int32(k)}
	created, err := s.enqueueMember(ctx, sc.GetSpec(), sc.GetSpec().GetParams(), BatchJobID(sc.GetScatterId(), i), member)
	if err == nil && created {
		s.metrics.batchesCreated.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", sc.GetSpec().GetQueue())))
		s.log.InfoContext(ctx, "scatter batch created", "scatter_id", sc.GetScatterId(), "batch", i, "job_id", BatchJobID(sc.GetScatterId(), i), "items", k)
	}
	return err
}

// enqueueGather creates the scatter's gather job, or finds it created.
func (s *Service) enqueueGather(ctx context.Context, rec *store.ScatterRecord) error {
	sc := rec.Scatter
	member := &spoolv1.ScatterMember{ScatterId: sc.GetScatterId(), BatchCount: sc.GetProgress().GetBatchCount(), Gather: true}
	created, err := s.enqueueMember(ctx, sc.GetSpec(), sc.GetSpec().GetGather(), GatherJobID(sc.GetScatterId()), member)
	if err == nil && created {
		s.log.InfoContext(ctx, "scatter gather queued", "scatter_id", sc.GetScatterId(), "job_id", GatherJobID(sc.GetScatterId()))
	}
	return err
}

// enqueueMember enqueues one of a scatter's jobs under its fixed id.
func (s *Service) enqueueMember(ctx context.Context, spec *spoolv1.ScatterSpec, params *spoolv1.JobParams, id string, m *spoolv1.ScatterMember) (bool, error) {
	p := proto.Clone(params).(*spoolv1.JobParams)
	p.Scatter = m
	_, created, err := s.store.Enqueue(ctx, store.NewJob{
		ID:          id,
		Queue:       spec.GetQueue(),
		RequestID:   "scatter:" + id,
		Params:      p,
		Execution:   s.cfg.ExecutionConfig(),
		MaxAttempts: spec.GetMaxAttempts(),
		Retries:     spec.GetRetries(),
	})
	if err == nil && created {
		s.metrics.enqueued.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", spec.GetQueue())))
	}
	return created, err
}
