package scatter

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// Jobs is how a round looks at the jobs of a scatter's batches: a job, or
// spool.ErrNotFound.
type Jobs interface {
	Get(ctx context.Context, jobID string) (*spoolv1.Job, error)
}

// Round is what one round of a scatter decided: the record as it is to be
// written, and what is then to be done to its jobs.
type Round struct {
	Rec *store.ScatterRecord
	// Enqueue are the batches whose jobs are to be created: newly released
	// ones and released ones whose job is missing.
	Enqueue []int32
	// Cancel are the batch jobs to cancel (running ones too when
	// CancelRunning).
	Cancel        []int32
	CancelRunning bool
	// Gather: enqueue the gather job; CancelGather: cancel it.
	Gather, CancelGather bool
	// Ended and Failed are the batches this round saw end, for telemetry.
	Ended, Failed []int32
}

// Look decides a round of rec, changing rec as the round would write it:
// it reads the jobs of the batches in flight, counts those that ended,
// releases more while the concurrency limit allows, checks the failure
// tolerance and moves on to the gather or the end.
func Look(ctx context.Context, jobs Jobs, rec *store.ScatterRecord) (*Round, error) {
	r := &Round{Rec: rec}
	sc := rec.Scatter
	p := sc.GetProgress()
	final := convert.ScatterState(sc.GetState()).IsFinal()
	p.Queued, p.Running = 0, 0
	for i := range rec.Released {
		if rec.Ended.Has(i) {
			continue
		}
		job, err := jobs.Get(ctx, BatchJobID(sc.GetScatterId(), i))
		if errors.Is(err, spool.ErrNotFound) {
			// Released by a round whose server stopped before enqueueing.
			r.Enqueue = append(r.Enqueue, i)
			p.Queued++
			continue
		}
		if err != nil {
			return nil, err
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
		return r, nil
	}
	if TooManyFailed(rec) {
		Stop(rec, spoolv1.ScatterState_SCATTER_STATE_FAILED, fmt.Sprintf("%d of %d batches failed, more than the %s tolerated",
			p.GetFailed()+p.GetCancelled(), p.GetBatchCount(), Tolerance(sc.GetSpec())))
		r.windDown()
		return r, nil
	}
	r.release()
	if rec.Ended.Count() < p.GetBatchCount() {
		return r, nil
	}
	return r, r.gatherOrFinish(ctx, jobs)
}

// settle counts a batch whose job ended.
func (r *Round) settle(i int32, job *spoolv1.Job) {
	p := r.Rec.Scatter.GetProgress()
	r.Rec.Ended.Set(i)
	r.Ended = append(r.Ended, i)
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
	r.Rec.Failed.Set(i)
	r.Failed = append(r.Failed, i)
}

// release hands batches to the queue while the concurrency limit allows.
func (r *Round) release() {
	sc := r.Rec.Scatter
	p := sc.GetProgress()
	limit := sc.GetSpec().GetMaxConcurrency()
	for r.Rec.Released < p.GetBatchCount() && (limit == 0 || p.GetQueued()+p.GetRunning() < limit) {
		r.Enqueue = append(r.Enqueue, r.Rec.Released)
		r.Rec.Released++
		p.Queued++
	}
	p.Waiting = p.GetBatchCount() - r.Rec.Released
}

// gatherOrFinish moves a scatter whose batches all ended within tolerance
// on: to its gather, or to success.
func (r *Round) gatherOrFinish(ctx context.Context, jobs Jobs) error {
	sc := r.Rec.Scatter
	if sc.GetSpec().GetGather() == nil {
		sc.State = spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED
		r.Rec.Active = false
		return nil
	}
	id := GatherJobID(sc.GetScatterId())
	sc.State, sc.GatherJobId = spoolv1.ScatterState_SCATTER_STATE_GATHERING, id
	job, err := jobs.Get(ctx, id)
	switch {
	case errors.Is(err, spool.ErrNotFound):
		r.Gather = true
	case err != nil:
		return err
	case job.GetState() == spoolv1.JobState_JOB_STATE_SUCCEEDED:
		sc.State = spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED
		r.Rec.Active = false
	case convert.State(job.GetState()).IsFinal():
		sc.State, sc.Error = spoolv1.ScatterState_SCATTER_STATE_FAILED, "the gather job "+convert.State(job.GetState()).String()
		r.Rec.Active = false
	}
	return nil
}

// windDown is a round of a scatter that failed or was cancelled: the batch
// jobs not started are cancelled (running ones too when cancelled), and the
// scatter stays active until none is left in flight.
func (r *Round) windDown() {
	sc := r.Rec.Scatter
	p := sc.GetProgress()
	r.CancelRunning = sc.GetState() == spoolv1.ScatterState_SCATTER_STATE_CANCELLED
	r.CancelGather = r.CancelRunning && sc.GetGatherJobId() != ""
	for i := range r.Rec.Released {
		if !r.Rec.Ended.Has(i) {
			r.Cancel = append(r.Cancel, i)
		}
	}
	p.Waiting = 0
	r.Rec.Active = p.GetQueued()+p.GetRunning() > 0
}

// TooManyFailed reports whether more batches failed than the scatter
// tolerates. As in Step Functions: with neither a count nor a percentage,
// no failure is tolerated; with either, the scatter fails once the
// failures pass any that is set (reaching it is still tolerated).
func TooManyFailed(rec *store.ScatterRecord) bool {
	spec := rec.Scatter.GetSpec()
	failed := rec.Failed.Count()
	if failed == 0 {
		return false
	}
	if spec.ToleratedFailureCount == nil && spec.ToleratedFailurePercentage == nil {
		return true
	}
	if spec.ToleratedFailureCount != nil && failed > spec.GetToleratedFailureCount() {
		return true
	}
	n := rec.Scatter.GetProgress().GetBatchCount()
	return spec.ToleratedFailurePercentage != nil && float64(failed)*100 > float64(spec.GetToleratedFailurePercentage())*float64(n)
}

// Tolerance says what a spec tolerates, for people.
func Tolerance(spec *spoolv1.ScatterSpec) string {
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

// Same reports whether a round changed nothing worth writing.
func Same(a, b *store.ScatterRecord) bool {
	return a.Active == b.Active && a.Released == b.Released && string(a.Ended) == string(b.Ended) &&
		string(a.Failed) == string(b.Failed) && proto.Equal(a.Scatter, b.Scatter)
}
