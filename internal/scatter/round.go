package scatter

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		if rec.Ended.Has(i) || rec.Held.Has(i) {
			continue
		}
		job, err := jobs.Get(ctx, JobOf(rec, i))
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
		case spoolv1.JobState_JOB_STATE_QUEUED, spoolv1.JobState_JOB_STATE_SCHEDULED:
			// A batch waiting out a retry's backoff is scheduled: still
			// to run, so counted with the waiting ones.
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
		Stop(rec, spoolv1.ScatterState_SCATTER_STATE_FAILED, fmt.Sprintf("%d of %d batches failed, more than the %s tolerated%s",
			p.GetFailed()+p.GetCancelled(), p.GetBatchCount(), Tolerance(sc.GetSpec()), seeJobs(sc.GetFailedJobIds())))
		r.windDown()
		return r, nil
	}
	r.release()
	// A scatter whose items are still being read may get more batches.
	if rec.Ended.Count() < p.GetBatchCount() || Reading(rec) {
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
	// The jobs a person looks at to learn why: those that failed, and
	// those cancelled while the scatter ran (by someone, or a timeout),
	// not the ones the scatter cancelled itself on its way out.
	sc := r.Rec.Scatter
	final := convert.ScatterState(sc.GetState()).IsFinal()
	if len(sc.GetFailedJobIds()) < MaxFailedJobIDs && (job.GetState() != spoolv1.JobState_JOB_STATE_CANCELLED || !final) {
		sc.FailedJobIds = append(sc.FailedJobIds, job.GetJobId())
	}
}

// MaxFailedJobIDs bounds the failed batches' jobs a scatter names: enough
// to start looking, few enough to read in a listing. The progress counts
// them all.
const MaxFailedJobIDs = 20

// seeJobs is the end of a failed scatter's error: which jobs to look at.
func seeJobs(ids []string) string {
	const shown = 3
	switch {
	case len(ids) == 0:
		return ""
	case len(ids) > shown:
		return fmt.Sprintf("; failed jobs: %s and more (spool logs %s)", strings.Join(ids[:shown], ", "), ids[0])
	}
	return fmt.Sprintf("; failed jobs: %s (spool logs %s)", strings.Join(ids, ", "), ids[0])
}

// release hands batches to the queue while the concurrency limit allows:
// first those a redrive holds, in index order, then the ones never
// released.
func (r *Round) release() {
	rec := r.Rec
	p := rec.Scatter.GetProgress()
	limit := rec.Scatter.GetSpec().GetMaxConcurrency()
	n := p.GetBatchCount()
	free := func() bool { return limit == 0 || p.GetQueued()+p.GetRunning() < limit }
	for i := int32(0); i < n && len(rec.Held) > 0 && free(); i++ {
		if rec.Held.Has(i) {
			rec.Held.Clear(i)
			r.Enqueue = append(r.Enqueue, i)
			p.Queued++
		}
	}
	for rec.Released < n && free() {
		r.Enqueue = append(r.Enqueue, rec.Released)
		rec.Released++
		p.Queued++
	}
	p.Waiting = n - rec.Released + rec.Held.Count()
}

// gatherOrFinish moves a scatter whose batches all ended within tolerance
// on: to its gather, or to success.
func (r *Round) gatherOrFinish(ctx context.Context, jobs Jobs) error {
	sc := r.Rec.Scatter
	if sc.GetSpec().GetGather() == nil {
		sc.State = spoolv1.ScatterState_SCATTER_STATE_SUCCEEDED
		sc.ResultManifest = ManifestOf(sc)
		r.Rec.Active = false
		return nil
	}
	id := GatherOf(r.Rec)
	sc.State, sc.GatherJobId = spoolv1.ScatterState_SCATTER_STATE_GATHERING, id
	sc.ResultManifest = ManifestOf(sc)
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
		sc.State, sc.Error = spoolv1.ScatterState_SCATTER_STATE_FAILED, fmt.Sprintf("the gather job %s %s (spool logs %s)", id, convert.State(job.GetState()).String(), id)
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
		if !r.Rec.Ended.Has(i) && !r.Rec.Held.Has(i) {
			r.Cancel = append(r.Cancel, i)
		}
	}
	p.Waiting = 0
	r.Rec.Active = p.GetQueued()+p.GetRunning() > 0
	if !r.Rec.Active {
		sc.ResultManifest = ManifestOf(sc)
	}
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
	// While the items are still being read, the batches known are not
	// all there will be: a percentage of them would fail a scatter for
	// its first few batches. The count alone applies until the end.
	return spec.ToleratedFailurePercentage != nil && !Reading(rec) && float64(failed)*100 > float64(spec.GetToleratedFailurePercentage())*float64(n)
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
		string(a.Failed) == string(b.Failed) && string(a.Held) == string(b.Held) && string(a.Gen) == string(b.Gen) &&
		proto.Equal(a.Scatter, b.Scatter)
}
