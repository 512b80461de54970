package scatter

import (
	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// MaxRedrives bounds how often one scatter may be redriven: the record
// keeps, per batch, the redrive that runs it in a byte.
const MaxRedrives = 255

// Redrive changes rec as a redrive does, as Step Functions redrives a Map
// Run: the scatter runs again, but only its batches that failed or were
// cancelled (or never ran), each as a new job under the same concurrency
// limit, then the gather, with every batch's result. Batches that
// succeeded keep their jobs and results, so their work is not done twice.
// The failure tolerance counts the batches of the whole scatter, as
// before.
//
// Only a scatter that ended other than succeeded, with none of its jobs
// still in flight, may be redriven: a running one has its own batches on
// their way, and a succeeded one has nothing left to do.
func Redrive(rec *store.ScatterRecord) error {
	sc := rec.Scatter
	id, st := sc.GetScatterId(), convert.ScatterState(sc.GetState())
	switch {
	case !st.IsFinal():
		return apierr.Errorf(spool.ErrConflict, "scatter %s is %s: only a scatter that failed or was cancelled can be redriven; wait for it to end (or cancel it)", id, st)
	case st == spool.ScatterSucceeded:
		return apierr.Errorf(spool.ErrConflict, "scatter %s succeeded: there is nothing to run again", id)
	case rec.Active:
		return apierr.Errorf(spool.ErrConflict, "scatter %s %s, but some of its batch jobs are still running: redrive it once they have ended (spool scatters get %s)", id, st, id)
	case Reading(rec):
		return apierr.Errorf(spool.ErrConflict, "scatter %s stopped before all its items were read (%d read): a redrive would run only those; start a new scatter of the same items", id, sc.GetReading().GetItemsRead())
	case sc.GetRedriveCount() >= MaxRedrives:
		return apierr.Errorf(spool.ErrConflict, "scatter %s was redriven %d times, the most a scatter may be: start a new scatter with the items of its failed batches", id, sc.GetRedriveCount())
	}
	p := sc.GetProgress()
	n := p.GetBatchCount()
	if rec.Held == nil {
		rec.Held = store.NewBits(n)
	}
	if rec.Gen == nil {
		rec.Gen = make([]byte, n)
	}
	sc.RedriveCount++
	for i := range n {
		if rec.Failed.Has(i) {
			rec.Failed.Clear(i)
			rec.Ended.Clear(i)
			rec.Held.Set(i)
			rec.Gen[i] = byte(sc.GetRedriveCount())
		}
	}
	// Every batch not released yet was stopped, so is held now: the
	// redrive releases them in index order with the rest.
	rec.Released = n
	rec.Active = true
	sc.State, sc.Error, sc.GatherJobId, sc.FailedJobIds = spoolv1.ScatterState_SCATTER_STATE_RUNNING, "", "", nil
	p.Failed, p.Cancelled, p.Queued, p.Running = 0, 0, 0, 0
	p.Waiting = rec.Held.Count()
	return nil
}
