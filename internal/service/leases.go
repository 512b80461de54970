package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/token"
)

// DequeueJobs leases up to max_jobs jobs of a queue to a worker (at most
// store.MaxDequeue, 500, in one call), waiting up to wait_seconds for one.
// Each lease carries a signed task token that names
// the job, its attempt and the lease.
func (s *Service) DequeueJobs(ctx context.Context, m *spoolv1.DequeueJobsRequest) (*spoolv1.DequeueJobsResponse, error) {
	caller, err := s.authorize(ctx, PermWork, cmp.Or(m.GetQueue(), store.DefaultQueue))
	if err != nil {
		return nil, err
	}
	queue, err := checkQueue(m.GetQueue())
	if err != nil {
		return nil, err
	}
	if m.GetMaxJobs() < 0 || m.GetWaitSeconds() < 0 {
		return nil, invalid("max_jobs and wait_seconds must not be negative")
	}
	lease, err := s.leaseDuration(m.GetVisibilityTimeoutSeconds())
	if err != nil {
		return nil, err
	}
	if err := checkText("worker_id", m.GetWorkerId(), maxWorkerID); err != nil {
		return nil, err
	}
	pollCtx, stop := s.untilDrain(ctx)
	defer stop()
	wait := time.Duration(min(m.GetWaitSeconds(), maxWaitSeconds)) * time.Second
	s.pollers.polled(queue, cmp.Or(m.GetWorkerId(), caller.Name), storekit.Now())
	leases, err := s.dequeue(ctx, pollCtx, store.DequeueRequest{
		Queue:         queue,
		Max:           int(m.GetMaxJobs()),
		LeaseDuration: lease,
		Wait:          wait,
		WorkerID:      m.GetWorkerId(),
	})
	if err != nil && s.draining() && ctx.Err() == nil {
		err = nil // shutting down: answer "nothing now" rather than an error
	}
	if err != nil {
		return nil, s.fail(ctx, "DequeueJobs", err)
	}
	leases, secrets := s.leaseSecrets(ctx, leases)
	resp := &spoolv1.DequeueJobsResponse{}
	for i, l := range leases {
		resp.Leases = append(resp.Leases, &spoolv1.JobLease{
			Secrets:        secrets[i],
			Job:            l.Job,
			TaskToken:      s.signer.Sign(token.Claims{JobID: l.JobID, Queue: l.Queue, Attempt: l.Attempt, LeaseID: l.LeaseID}),
			JobToken:       s.jobToken(l.Job, l.Attempt),
			NextSequence:   l.Head.NextSequence,
			NextLine:       l.Head.NextLine,
			LeaseExpiresAt: timestamppb.New(l.ExpiresAt),
			// The worker heartbeats at the interval the lease allows, not
			// at the one stored with the job: the configuration may have
			// changed since the job was enqueued.
			HeartbeatIntervalSeconds: int32(s.heartbeatInterval(lease) / time.Second),
			CompleteTakesEvents:      true,
			TakesEncodedEvents:       true,
		})
		s.log.InfoContext(ctx, "job leased", "job_id", l.JobID, "attempt", l.Attempt, "worker", m.GetWorkerId())
		if b := l.Job.GetParams().GetScatter(); b != nil && !b.GetGather() && l.Attempt == 1 {
			s.kickScatterOf(l.Job)
			s.metrics.batchesStarted.Add(ctx, 1, s.metrics.byQueue.of(queue, ""))
			s.log.InfoContext(ctx, "scatter batch started", "scatter_id", b.GetScatterId(), "batch", b.GetBatchIndex(), "job_id", l.JobID)
		}
	}
	s.metrics.leased.Add(ctx, int64(len(leases)), s.metrics.byQueue.of(queue, ""))
	return resp, nil
}

// dequeue leases jobs of a queue that is not paused, waiting up to req.Wait
// for them, or for a resume. A store that keeps pauses in its leases
// (store.PausedLeaser) does it in one; with any other, the core asks
// whether the queue is paused before the lease, and again after it, to
// hand back what a pause raced.
func (s *Service) dequeue(ctx, pollCtx context.Context, req store.DequeueRequest) ([]store.Lease, error) {
	if pl := s.store.Capabilities().PausedLeaser; pl != nil {
		return pl.DequeueUnpaused(pollCtx, req)
	}
	open, err := s.waitUnpaused(pollCtx, req.Queue, req.Wait)
	if err != nil || !open {
		return nil, err
	}
	leases, err := s.store.Dequeue(pollCtx, req)
	if err != nil {
		return nil, err
	}
	return s.handBackPaused(ctx, req.Queue, leases)
}

// lease checks that the caller may run jobs (a task token alone is not
// enough: a leaked one is useless without a worker key) and the task
// token, and returns the lease it names.
func (s *Service) lease(ctx context.Context, op, tok string) (store.LeaseRef, error) {
	// The key first: a task token alone, leaked, is not enough.
	caller, err := s.authorize(ctx, PermWork, "")
	if err != nil {
		return store.LeaseRef{}, err
	}
	return s.leaseOf(ctx, caller, op, tok)
}

// leaseOf checks a task token for a caller whose key was checked.
func (s *Service) leaseOf(ctx context.Context, caller Caller, op, tok string) (store.LeaseRef, error) {
	if tok == "" {
		return store.LeaseRef{}, invalid("task_token is required: use the one DequeueJobs returned")
	}
	c, err := s.signer.Verify(tok)
	if err != nil {
		return store.LeaseRef{}, s.fail(ctx, op, err)
	}
	if err := caller.useQueue(PermWork, c.Queue); err != nil {
		return store.LeaseRef{}, err
	}
	return store.LeaseRef{JobID: c.JobID, Queue: c.Queue, Attempt: c.Attempt, LeaseID: c.LeaseID}, nil
}

// Heartbeat extends a lease (the UpdateJobVisibility call) and tells the
// worker whether the job was cancelled and whether someone is watching.
// With wait_seconds, it then holds the answer until one of those changes or
// the wait (at most the heartbeat interval) is over: a worker keeping such
// a call open hears of a cancel at once, with no more writes than before.
func (s *Service) Heartbeat(ctx context.Context, m *spoolv1.UpdateJobVisibilityRequest) (*spoolv1.UpdateJobVisibilityResponse, error) {
	ref, err := s.lease(ctx, "UpdateJobVisibility", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	lease, err := s.leaseDuration(m.GetVisibilityTimeoutSeconds())
	if err != nil {
		return nil, err
	}
	if m.GetWaitSeconds() < 0 {
		return nil, invalid("wait_seconds must not be negative")
	}
	expires, cancel, err := s.store.Heartbeat(ctx, ref, lease)
	if err != nil {
		return nil, s.fail(ctx, "UpdateJobVisibility", err)
	}
	interval := s.heartbeatInterval(lease)
	watched := s.watchers.watched(ref.JobID)
	if wait := min(time.Duration(m.GetWaitSeconds())*time.Second, interval); wait > 0 && !cancel && watched == m.GetWatched() {
		cancel, watched = s.awaitSignal(ctx, ref.JobID, cancel, m.GetWatched(), wait)
	}
	return &spoolv1.UpdateJobVisibilityResponse{LeaseExpiresAt: timestamppb.New(expires), CancelRequested: cancel,
		Watched: watched, HeartbeatIntervalSeconds: int32(interval / time.Second)}, nil
}

// CompleteJob records how an attempt ended and makes the job final. The
// attempt's last events, when the request carries them, are appended first,
// as PublishEvents appends them: the worker saves a round trip, and the job
// is never final without the output before its result.
func (s *Service) CompleteJob(ctx context.Context, m *spoolv1.CompleteJobRequest) (*spoolv1.CompleteJobResponse, error) {
	ref, err := s.lease(ctx, "CompleteJob", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	job, err := s.complete(ctx, ref, m)
	if err != nil {
		return nil, err
	}
	return &spoolv1.CompleteJobResponse{Job: job}, nil
}

// maxCompletions bounds a CompleteJobs call.
const maxCompletions = 100

// CompleteJobs records several completions, each as CompleteJob does, side
// by side: their writes share the store's commits. The worker's key is
// checked once.
func (s *Service) CompleteJobs(ctx context.Context, m *spoolv1.CompleteJobsRequest) (*spoolv1.CompleteJobsResponse, error) {
	caller, err := s.authorize(ctx, PermWork, "")
	if err != nil {
		return nil, err
	}
	cs := m.GetCompletions()
	if len(cs) == 0 || len(cs) > maxCompletions {
		return nil, invalid("completions: %d in one call; send 1 to %d", len(cs), maxCompletions)
	}
	results := make([]*spoolv1.CompletionResult, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			ref, err := s.leaseOf(ctx, caller, "CompleteJobs", c.GetTaskToken())
			var job *spoolv1.Job
			if err == nil {
				job, err = s.complete(ctx, ref, c)
			}
			if job != nil && m.GetBrief() {
				job = briefJob(job)
			}
			results[i] = &spoolv1.CompletionResult{Job: job}
			if err != nil {
				results[i].ErrorCode, results[i].ErrorMessage = apierr.Code(err).String(), err.Error()
			}
		})
	}
	wg.Wait()
	return &spoolv1.CompleteJobsResponse{Results: results}, nil
}

// briefJob is j as a brief CompleteJobs answer gives it: what a worker
// reads of a completed job.
func briefJob(j *spoolv1.Job) *spoolv1.Job {
	return &spoolv1.Job{JobId: j.GetJobId(), Queue: j.GetQueue(), State: j.GetState(), Attempt: j.GetAttempt(),
		LastSequence: j.GetLastSequence(), LineCount: j.GetLineCount()}
}

// complete records one attempt's result, under a lease already checked.
func (s *Service) complete(ctx context.Context, ref store.LeaseRef, m *spoolv1.CompleteJobRequest) (*spoolv1.Job, error) {
	res := m.GetResult()
	if res == nil {
		return nil, invalid("result is required (exit_code, error, times)")
	}
	if err := checkText("result.error", res.GetError(), maxResultError); err != nil {
		return nil, err
	}
	if err := checkOutput(res.GetOutput()); err != nil {
		return nil, err
	}
	evs, err := published(m.GetEvents(), m.GetEncodedEvents())
	if err != nil {
		return nil, err
	}
	job, err := s.finish(ctx, ref, evs, res)
	if err != nil {
		return nil, s.fail(ctx, "CompleteJob", err)
	}
	s.kickScatterOf(job)
	// A retry waits out its backoff SCHEDULED; an end lets the jobs that
	// run after this one move.
	s.scheduledMade(job)
	s.endedWithFollowers(job)
	s.log.InfoContext(ctx, "job finished", "job_id", job.GetJobId(), "attempt", ref.Attempt,
		"state", convert.State(job.GetState()).String(), "exit_code", job.GetResult().GetExitCode())
	s.metrics.jobFinished(ctx, job)
	return job, nil
}

// finish stores an attempt's last events, if any, and its result: in one
// write where the store can (store.Finisher), else one after the other.
func (s *Service) finish(ctx context.Context, ref store.LeaseRef, evs []events.Published, res *spoolv1.JobResult) (*spoolv1.Job, error) {
	if f := s.store.Capabilities().Finisher; f != nil && len(evs) > 0 {
		job, err := f.Finish(ctx, ref, evs, res)
		if err == nil {
			s.metrics.eventsPublished(ctx, evs)
		}
		return job, err
	}
	if len(evs) > 0 {
		_, err := s.store.Append(ctx, ref, evs)
		switch {
		case err == nil:
			s.metrics.eventsPublished(ctx, evs)
		case !errors.Is(err, spool.ErrStaleLease):
			return nil, err
		}
		// A stale lease may be this very completion, repeated after its
		// answer was lost: the job is final by this lease, so the first
		// call stored these events before it. Complete recognises that
		// repeat and refuses any other stale lease.
	}
	return s.store.Complete(ctx, ref, res)
}

// PublishEvents appends an attempt's events to its job's log.
func (s *Service) PublishEvents(ctx context.Context, m *spoolv1.PublishEventsRequest) (*spoolv1.PublishEventsResponse, error) {
	ref, err := s.lease(ctx, "PublishEvents", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	evs, err := published(m.GetEvents(), m.GetEncodedEvents())
	if err != nil {
		return nil, err
	}
	head, err := s.store.Append(ctx, ref, evs)
	if err != nil {
		return nil, s.fail(ctx, "PublishEvents", err)
	}
	s.metrics.eventsPublished(ctx, evs)
	return &spoolv1.PublishEventsResponse{LastSequence: head.NextSequence - 1, LineCount: head.NextLine - 1,
		Watched: s.watchers.watched(ref.JobID)}, nil
}

// published is what a publish or a completion carries, as messages or
// encoded: an encoded event is read as far as its summary, and stored as
// it came when the store finds it complete.
func published(msgs []*spoolv1.JobEvent, encoded [][]byte) ([]events.Published, error) {
	switch n := len(msgs) + len(encoded); {
	case len(msgs) > 0 && len(encoded) > 0:
		return nil, invalid("events and encoded_events: send one or the other in a call, not both")
	case n > maxEventsPerPublish:
		return nil, invalid("events: %d in one call; send at most %d", n, maxEventsPerPublish)
	}
	if len(encoded) == 0 {
		return events.Messages(msgs...), nil
	}
	out := make([]events.Published, len(encoded))
	for i, b := range encoded {
		p, err := events.ParseEncoded(b)
		if err != nil {
			return nil, invalid("encoded_events[%d]: %v", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// ReleaseJob hands a leased job back to its queue at once (a stopping
// worker's jobs), as storekit.Released decides.
func (s *Service) ReleaseJob(ctx context.Context, m *spoolv1.ReleaseJobRequest) (*spoolv1.ReleaseJobResponse, error) {
	ref, err := s.lease(ctx, "ReleaseJob", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	if err := checkText("reason", m.GetReason(), maxReason); err != nil {
		return nil, err
	}
	job, err := s.store.Release(ctx, ref, m.GetCountAttempt(), m.GetReason())
	if err != nil {
		return nil, s.fail(ctx, "ReleaseJob", err)
	}
	s.kickScatterOf(job)
	s.log.InfoContext(ctx, "job handed back", "job_id", job.GetJobId(), "attempt", ref.Attempt, "state", convert.State(job.GetState()).String(), "reason", m.GetReason())
	s.metrics.released.Add(ctx, 1, s.metrics.byQueue.of(job.GetQueue(), ""))
	return &spoolv1.ReleaseJobResponse{Job: job}, nil
}

// ReportUndelivered records on a job that an attempt's output was lost. The
// task token needs a valid signature but not a current lease: reporting is
// what an attempt that has lost its lease still has to do.
func (s *Service) ReportUndelivered(ctx context.Context, m *spoolv1.ReportUndeliveredRequest) (*spoolv1.ReportUndeliveredResponse, error) {
	ref, err := s.lease(ctx, "ReportUndelivered", m.GetTaskToken())
	if err != nil {
		return nil, err
	}
	if m.GetLines() < 0 || m.GetEvents() < 0 || m.GetLines()+m.GetEvents() == 0 {
		return nil, invalid("lines and events: say how much was lost (not negative, not both 0)")
	}
	if err := checkText("kept_at", m.GetKeptAt(), maxKeptAt); err != nil {
		return nil, err
	}
	note := fmt.Sprintf("attempt %d: %d lines could not be delivered", ref.Attempt, m.GetLines())
	if m.GetEvents() > 0 {
		note = fmt.Sprintf("attempt %d: %d lines and %d other events could not be delivered", ref.Attempt, m.GetLines(), m.GetEvents())
	}
	note += " (the job had moved on before the worker could send them)"
	if m.GetKeptAt() != "" {
		note += "; the worker kept them in " + m.GetKeptAt()
	}
	job, err := s.store.AddNote(ctx, ref.JobID, note)
	if err != nil {
		return nil, s.fail(ctx, "ReportUndelivered", err)
	}
	s.log.WarnContext(ctx, "output lost", "job_id", ref.JobID, "attempt", ref.Attempt, "lines", m.GetLines(), "events", m.GetEvents(), "kept_at", m.GetKeptAt())
	return &spoolv1.ReportUndeliveredResponse{Job: job}, nil
}

// heartbeatInterval is how often a worker holding a lease of length lease
// heartbeats: the configured interval, but at most half the lease, so one
// late heartbeat never loses it whatever the configuration and the worker
// ask for.
func (s *Service) heartbeatInterval(lease time.Duration) time.Duration {
	return max(time.Second, min(s.cfg.Execution.HeartbeatInterval(), lease/2))
}

// awaitSignal holds a heartbeat until the job is cancelled, its watched
// state differs from what the worker believes, wait has passed, or the
// server drains, and returns the job's cancel and watched states then.
func (s *Service) awaitSignal(ctx context.Context, jobID string, cancel, believed bool, wait time.Duration) (bool, bool) {
	ctx, stop := s.untilDrain(ctx)
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	watched := s.watchers.watched(jobID)
	for !cancel && watched == believed {
		if s.waitOnce(ctx, jobID, timer.C, &cancel, &watched, believed) {
			break
		}
	}
	return cancel, watched
}

// waitOnce is one round of awaitSignal: it watches the job and its
// followers, reads them again (so no change falls between), and waits for a
// change. It reports whether awaitSignal is done: news, the wait is over,
// or the server drains.
func (s *Service) waitOnce(ctx context.Context, jobID string, over <-chan time.Time, cancel, watched *bool, believed bool) bool {
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	jobChanged := s.store.Watch(wctx, jobID)
	flipped, done := s.watchers.changes(jobID)
	defer done()
	if j, err := s.store.Get(ctx, jobID); err == nil {
		*cancel = j.GetCancelRequested() || convert.State(j.GetState()).IsFinal()
	}
	if *watched = s.watchers.watched(jobID); *cancel || *watched != believed {
		return true
	}
	select {
	case <-jobChanged:
		return false
	case <-flipped:
		return false
	case <-over:
	case <-ctx.Done():
	}
	return true
}
