package worker

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/outbox"
	"github.com/spool-run/spool/internal/store"
)

// resumeOutboxes sends what a previous worker on this spool directory left
// unsent (it was stopped, killed, or the server was away). An attempt whose
// job has moved on is discarded: the server would refuse it anyway.
func (w *Worker) resumeOutboxes() error {
	dirs, err := outbox.List(w.cfg.SpoolDir)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		ob, err := outbox.Open(dir)
		if err != nil {
			w.log.Error("cannot reopen a leftover outbox; leaving it alone", "dir", dir, "error", err)
			continue
		}
		h := ob.Header()
		log := w.log.With("job_id", h.JobID, "attempt", h.Attempt)
		var skip int64
		ctx, cancel := context.WithTimeout(w.sendCtx, 5*time.Second)
		job, err := w.api.Job(ctx, h.JobID)
		cancel()
		switch {
		case err == nil && (store.IsFinal(job.GetState()) || job.GetAttempt() != h.Attempt):
			log.Info("discarding output of an attempt that is over", "state", store.StateName(job.GetState()), "current_attempt", job.GetAttempt())
			_ = ob.Remove()
			continue
		case err == nil:
			skip = job.GetLastSequence()
		default:
			// Unknown for now: resend everything; repeats are no-ops.
			log.Warn("cannot check a leftover attempt's job yet; resending its output", "error", err)
		}
		if !ob.Finished() {
			// The command died with the previous worker: send its output,
			// but no result, so the job is retried when its lease expires.
			ob.Seal()
		}
		log.Info("resuming output left by a previous worker", "dir", dir)
		snd := &sender{api: w.api, ob: ob, token: h.Token, log: log, skipThrough: skip}
		w.sending.Add(1)
		go func() {
			defer w.sending.Done()
			if err := snd.run(w.sendCtx); err != nil && err != errLeaseLost {
				_ = ob.Close()
			}
		}()
	}
	return nil
}
