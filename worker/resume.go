package worker

import (
	"context"
	"errors"
	"io"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/outbox"
)

// resumeOutboxes deals with what a previous worker on this spool directory
// left unsent (it was stopped, killed, or the server was away). While the
// attempt can still deliver its output (no later attempt has started), it
// is sent, and the job, whose command died with that worker, handed back.
// Once the job has moved on, what the server did not store is counted,
// recorded on the job, and kept aside: never silently dropped.
func (w *Worker) resumeOutboxes() error {
	paths, err := outbox.List(w.cfg.SpoolDir)
	if err != nil {
		return err
	}
	for _, path := range paths {
		ob, err := outbox.Open(path)
		if errors.Is(err, outbox.ErrEmpty) {
			continue // made as its worker died: nothing was written to it
		}
		if err != nil {
			w.log.Error("cannot reopen a leftover outbox; leaving it alone", "outbox", path, "error", err)
			continue
		}
		h := ob.Header()
		log := w.log.With("job_id", h.JobID, "attempt", h.Attempt)
		snd := &sender{w: w, ob: ob, token: h.Token, log: log}
		ctx, cancel := context.WithTimeout(w.sendCtx, 5*time.Second)
		resp, err := w.rpc.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: h.JobID}))
		cancel()
		var job *spoolv1.Job
		if err == nil {
			job = resp.Msg.GetJob()
		}
		if !ob.Finished() {
			ob.Seal()
		}
		switch {
		case err == nil && (convert.State(job.GetState()).IsFinal() || job.GetAttempt() != h.Attempt):
			// The attempt is over: another attempt owns the job, or it is
			// finished.
			w.sending.Add(1)
			go func() {
				defer w.sending.Done()
				w.settleLeftover(snd, h)
			}()
			continue
		case err == nil:
			snd.skipThrough = job.GetLastSequence()
		default:
			// Unknown for now: resend everything; repeats are no-ops.
			log.Warn("cannot check a leftover attempt's job yet; resending its output", "error", err)
		}
		if !ob.Finished() {
			// The command died with the previous worker: deliver its
			// output, then hand the job back for another attempt. That
			// attempt was lost, so it counts against max_attempts.
			snd.release("its worker was restarted; the command did not survive", true)
		}
		log.Info("resuming output left by a previous worker", "outbox", path)
		w.sending.Add(1)
		go func() {
			defer w.sending.Done()
			if err := snd.run(w.sendCtx); err != nil && !errors.Is(err, errLeaseLost) {
				_ = ob.Close()
			}
		}()
	}
	return nil
}

// settleLeftover handles the outbox of an attempt that is over: whatever in
// it the server did not store for that attempt is lost, and is reported and
// kept; an outbox whose output all arrived is removed.
func (w *Worker) settleLeftover(snd *sender, h outbox.Header) {
	var left []outbox.Event
	for {
		c, err := snd.ob.Next(w.sendCtx, publishMaxEvents, publishMaxBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, outbox.ErrBroken) {
				snd.log.Warn("cannot read a leftover outbox", "outbox", snd.ob.Path(), "error", err)
				_ = snd.ob.Close()
				return
			}
			break
		}
		left = append(left, c.Events...)
		snd.ob.Ack(c)
	}
	stored, err := w.storedThrough(h, left)
	if err != nil {
		snd.log.Warn("cannot learn what the server stored of a leftover attempt; keeping its output", "outbox", snd.ob.Path(), "error", err)
		_ = snd.ob.Close()
		return
	}
	var lost tally
	lost.add(left, stored)
	if lost.lines+lost.other == 0 {
		snd.log.Info("discarding output of an attempt that is over: the server has all of it")
		_ = snd.ob.Remove()
		return
	}
	_ = snd.keepLost(w.sendCtx, lost.lines, lost.other)
}

// storedThrough is the last sequence the server stored for attempt
// h.Attempt at or after the first of evs: its events form one run of the
// log, which a later attempt continues.
func (w *Worker) storedThrough(h outbox.Header, evs []outbox.Event) (int64, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(w.sendCtx, 30*time.Second)
	defer cancel()
	stream, err := w.rpc.StreamEvents(ctx, connect.NewRequest(&spoolv1.StreamEventsRequest{JobId: h.JobID, FromSequence: evs[0].Sequence()}))
	if err != nil {
		return 0, err
	}
	defer stream.Close()
	var last int64
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if ev == nil {
			continue
		}
		if ev.GetAttempt() != h.Attempt {
			break
		}
		last = events.EndSequence(ev)
	}
	return last, stream.Err()
}
