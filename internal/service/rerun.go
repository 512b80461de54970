package service

import (
	"cmp"
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store"
)

// RerunJob enqueues a finished job again: a new job with the same queue,
// command, secrets and budgets, under today's execution settings. The new
// job's rerun_of names the old one and the old one's reruns list the new
// one. A repeat with the same request_id returns the job the first call
// made.
func (s *Service) RerunJob(ctx context.Context, m *spoolv1.RerunJobRequest) (*spoolv1.RerunJobResponse, error) {
	old, err := s.job(ctx, "RerunJob", m.GetJobId())
	if err != nil {
		return nil, err
	}
	caller, err := s.authorize(ctx, PermSubmit, old.GetQueue())
	if err != nil {
		return nil, err
	}
	if err := checkText("request_id", m.GetRequestId(), maxRequestID); err != nil {
		return nil, err
	}
	if err := rerunnable(old); err != nil {
		return nil, err
	}
	// The bounds are the server's now, which may have narrowed since the
	// job was submitted.
	if err := checkBatching(old.GetParams().GetBatching(), s.cfg.Execution.Batching); err != nil {
		return nil, err
	}
	nj := store.NewJob{
		Queue:       old.GetQueue(),
		RequestID:   m.GetRequestId(),
		Params:      proto.CloneOf(old.GetParams()),
		Execution:   s.execution(old.GetParams()),
		MaxAttempts: old.GetMaxAttempts(),
		Retries:     old.GetRetries(),
		RerunOf:     old.GetJobId(),
		// Its priority and webhooks are the job's; its time and the jobs
		// it ran after were about the first run.
		Priority: old.GetPriority(),
		Notify:   old.GetNotify(),
	}
	secrets, err := s.secretsOf(ctx, old)
	if errors.Is(err, seal.ErrOpen) {
		return nil, apierr.Errorf(spool.ErrConflict, "%v: submit it again with its secrets instead", err)
	}
	if err != nil {
		return nil, s.fail(ctx, "RerunJob", err)
	}
	if err := s.withSecrets(&nj, secrets); err != nil {
		return nil, err
	}
	// A stdin kept beside the old job is copied beside the new one
	// before it exists: each job's files go with that job alone.
	var copied string
	if old.GetParams().GetStdinSize() > 0 {
		copied = cmp.Or(nj.ID, newJobID())
		nj.ID = copied
		nj.Params, err = s.stdinBeside(ctx, nj.Params, jobStdinKey(old.GetJobId()), copied)
		if errors.Is(err, blob.ErrNotFound) {
			return nil, apierr.Errorf(spool.ErrConflict, "the stdin of job %s is gone (the job is being deleted): submit it again with its stdin", old.GetJobId())
		}
		if err != nil {
			return nil, s.fail(ctx, "RerunJob", err)
		}
	}
	job, created, err := s.store.Enqueue(ctx, nj)
	s.settleStdin(ctx, copied, job, created && err == nil)
	if err != nil {
		return nil, s.fail(ctx, "RerunJob", err)
	}
	if !created && (!sameRequest(job, nj) || job.GetRerunOf() != old.GetJobId()) {
		return nil, apierr.Errorf(spool.ErrAlreadyExists, "request_id %q was already used for job %s, which is not a rerun of %s; use a new request_id",
			m.GetRequestId(), job.GetJobId(), old.GetJobId())
	}
	// The link back is written after the job exists (a repeat writes it
	// again if a failure came between), so the old job never names a job
	// that is not there.
	if _, err := s.store.AddRerun(ctx, old.GetJobId(), job.GetJobId()); err != nil {
		return nil, s.fail(ctx, "RerunJob", err)
	}
	if created {
		s.audit(ctx, caller, "job rerun", "job_id", job.GetJobId(), "rerun_of", old.GetJobId(), "queue", job.GetQueue())
		s.metrics.enqueued.Add(ctx, 1, s.metrics.byQueue.of(job.GetQueue(), ""))
	}
	return &spoolv1.RerunJobResponse{Job: job}, nil
}

// rerunnable refuses to run again what cannot be: a job that has not
// finished, the log of a program spool did not start, and a scatter's part,
// which only means something inside its scatter.
func rerunnable(j *spoolv1.Job) error {
	switch {
	case !convert.State(j.GetState()).IsFinal():
		return apierr.Errorf(spool.ErrConflict, "job %s is %s: wait for it to finish (or cancel it) before running it again",
			j.GetJobId(), convert.State(j.GetState()).String())
	case j.GetParams().GetExternal() != nil:
		return invalid("job %s is the log of source %q, not a command spool ran: it cannot be run again",
			j.GetJobId(), j.GetParams().GetExternal().GetSource())
	case j.GetParams().GetScatter() != nil:
		return invalid("job %s is part of scatter %s: submit the scatter again instead",
			j.GetJobId(), j.GetParams().GetScatter().GetScatterId())
	case len(j.GetParams().GetArgv()) == 0 && j.GetParams().GetScript() == "":
		return invalid("job %s was never runnable (it has no command): it cannot be run again", j.GetJobId())
	}
	return nil
}
