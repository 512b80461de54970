package service

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// EnqueueJob creates a job, or returns the one an earlier call with the same
// request_id created (Deduplicated).
func (s *Service) EnqueueJob(ctx context.Context, m *spoolv1.EnqueueJobRequest) (*spoolv1.EnqueueJobResponse, error) {
	caller, err := s.authorize(ctx, PermSubmit, m.GetQueue())
	if err != nil {
		return nil, err
	}
	e, err := s.enqueue(ctx, caller, m)
	if err != nil {
		return nil, err
	}
	switch {
	case e.created && e.rejected:
		s.audit(ctx, caller, "job recorded as rejected", "job_id", e.job.GetJobId(), "queue", e.job.GetQueue(), "reason", m.GetRejectReason())
	case e.created:
		s.audit(ctx, caller, "job enqueued", "job_id", e.job.GetJobId(), "queue", e.job.GetQueue())
	}
	s.metrics.jobsEnqueued(ctx, e.job.GetQueue(), e.tally())
	return &spoolv1.EnqueueJobResponse{Job: e.job, Deduplicated: !e.created}, nil
}

// enqueued is what enqueue did with one job.
type enqueued struct {
	job *spoolv1.Job
	// created: the job is new, not an earlier request's.
	created bool
	// rejected: the job was recorded as failed from the start.
	rejected bool
}

// tally is e counted as the enqueue metrics count it.
func (e enqueued) tally() enqueueTally {
	switch {
	case e.created && e.rejected:
		return enqueueTally{rejected: 1}
	case e.created:
		return enqueueTally{enqueued: 1}
	}
	return enqueueTally{}
}

// enqueue checks one job's request, for a caller whose key allows
// submitting, and creates the job or finds the one its request_id made.
// It neither logs nor counts: a single enqueue and a batch of them report
// differently.
func (s *Service) enqueue(ctx context.Context, caller Caller, m *spoolv1.EnqueueJobRequest) (enqueued, error) {
	return s.enqueueFor(ctx, caller, m, "")
}

// enqueueFor is enqueue for a job that schedule's tick makes (empty: a
// job asked for by a request).
func (s *Service) enqueueFor(ctx context.Context, caller Caller, m *spoolv1.EnqueueJobRequest, schedule string) (enqueued, error) {
	queue, err := checkQueue(m.GetQueue())
	if err != nil {
		return enqueued{}, err
	}
	if err := caller.useQueue(PermSubmit, queue); err != nil {
		return enqueued{}, err
	}
	rejected := m.GetRejectReason() != ""
	if err := s.checkParams(m.GetParams(), rejected); err != nil {
		return enqueued{}, err
	}
	if err := checkText("reject_reason", m.GetRejectReason(), maxResultError); err != nil {
		return enqueued{}, err
	}
	if err := checkSecrets(m.GetSecrets(), m.GetParams().GetEnv()); err != nil {
		return enqueued{}, err
	}
	if rejected && len(m.GetSecrets()) > 0 {
		return enqueued{}, invalid("secrets: a job recorded as rejected never runs; give it none")
	}
	if err := checkText("request_id", m.GetRequestId(), maxRequestID); err != nil {
		return enqueued{}, err
	}
	attempts, err := s.checkBudget(m.GetMaxAttempts(), m.GetRetries())
	if err != nil {
		return enqueued{}, err
	}
	when, err := s.checkTiming(ctx, caller, m, storekit.Now())
	if err != nil {
		return enqueued{}, err
	}
	notify, err := s.notifyURLs(queue, m.GetNotify())
	if err != nil {
		return enqueued{}, err
	}
	params := m.GetParams()
	if params == nil {
		params = &spoolv1.JobParams{}
	}
	nj := store.NewJob{
		RunAfter:     when.runAfter,
		Priority:     when.priority,
		After:        when.after,
		Notify:       notify,
		Schedule:     schedule,
		Queue:        queue,
		RequestID:    m.GetRequestId(),
		Params:       params,
		Execution:    s.execution(params),
		MaxAttempts:  attempts,
		Retries:      m.GetRetries(),
		RejectReason: m.GetRejectReason(),
	}
	if err := s.withSecrets(&nj, m.GetSecrets()); err != nil {
		return enqueued{}, err
	}
	// A job with an uploaded stdin has its id before it is stored (its
	// secrets may have given it one), so the stdin is beside it before
	// any worker can lease it.
	var copied string
	if params.GetStdinUpload() != "" {
		copied = cmp.Or(nj.ID, newJobID())
		if nj.Params, err = s.adoptUpload(ctx, nj.Params, copied); err != nil {
			return enqueued{}, s.fail(ctx, "EnqueueJob", err)
		}
		nj.ID = copied
	}
	job, created, err := s.store.Enqueue(ctx, nj)
	s.settleStdin(ctx, copied, job, created && err == nil)
	if err != nil {
		return enqueued{}, s.fail(ctx, "EnqueueJob", err)
	}
	if !created && !sameRequest(job, nj) {
		// An idempotency key names one request: the same key with another
		// request is a mistake the caller must hear about, not the other
		// job silently.
		return enqueued{}, apierr.Errorf(spool.ErrAlreadyExists, "request_id %q was already used for job %s, which runs something else; use a new request_id",
			m.GetRequestId(), job.GetJobId())
	}
	if created {
		s.scheduledMade(job)
	}
	return enqueued{job: job, created: created, rejected: created && rejected}, nil
}

// GetJob returns one job.
func (s *Service) GetJob(ctx context.Context, m *spoolv1.GetJobRequest) (*spoolv1.GetJobResponse, error) {
	job, err := s.job(ctx, "GetJob", m.GetJobId())
	if err != nil {
		return nil, err
	}
	return &spoolv1.GetJobResponse{Job: job}, nil
}

// job checks the caller may read jobs, validates an id and reads the job.
// A worker key limited to some queues sees only their jobs.
func (s *Service) job(ctx context.Context, op, id string) (*spoolv1.Job, error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return nil, err
	}
	if err := checkJobID(id); err != nil {
		return nil, err
	}
	job, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	if !caller.mayUse(job.GetQueue()) {
		return nil, store.JobNotFound(id)
	}
	return job, nil
}

// ListJobs returns a page of jobs, newest first.
func (s *Service) ListJobs(ctx context.Context, m *spoolv1.ListJobsRequest) (*spoolv1.ListJobsResponse, error) {
	caller, err := s.authorize(ctx, PermRead, m.GetQueue())
	if err != nil {
		return nil, err
	}
	if len(caller.Queues) > 0 && m.GetQueue() == "" {
		return nil, apierr.Errorf(spool.ErrPermissionDenied, "key %q may only list the jobs of queues %s: name one (spool jobs list -q %s)", caller.Name, strings.Join(caller.Queues, ", "), caller.Queues[0])
	}
	if m.GetQueue() != "" {
		if _, err := checkQueue(m.GetQueue()); err != nil {
			return nil, err
		}
	}
	if m.GetPageSize() < 0 {
		return nil, invalid("page_size must not be negative")
	}
	if err := checkStates(m.GetStates()); err != nil {
		return nil, err
	}
	if err := checkText("cursor", m.GetCursor(), maxCursor); err != nil {
		return nil, err
	}
	if err := checkSource(m.GetSource()); err != nil {
		return nil, err
	}
	jobs, next, err := s.store.List(ctx, store.ListFilter{Queue: m.GetQueue(), Source: m.GetSource(), States: m.GetStates(),
		Limit: int(m.GetPageSize()), Cursor: m.GetCursor()})
	if err != nil {
		return nil, s.fail(ctx, "ListJobs", err)
	}
	return &spoolv1.ListJobsResponse{Jobs: jobs, NextCursor: next}, nil
}

// CancelJob cancels a queued job at once and asks a running one's worker to
// stop it; a finished job is returned as it is.
func (s *Service) CancelJob(ctx context.Context, m *spoolv1.CancelJobRequest) (*spoolv1.CancelJobResponse, error) {
	caller, err := s.authorize(ctx, PermSubmit, "")
	if err != nil {
		return nil, err
	}
	if err := checkJobID(m.GetJobId()); err != nil {
		return nil, err
	}
	if err := checkText("reason", m.GetReason(), maxReason); err != nil {
		return nil, err
	}
	if len(caller.Queues) > 0 {
		// A key limited to some queues cancels only their jobs; to it, a
		// job of another queue does not exist, as for its reads.
		if _, err := s.job(ctx, "CancelJob", m.GetJobId()); err != nil {
			return nil, err
		}
	}
	job, err := s.store.Cancel(ctx, m.GetJobId(), m.GetReason())
	if err != nil {
		return nil, s.fail(ctx, "CancelJob", err)
	}
	if job.GetParams().GetExternal() != nil {
		// No worker will hear of the cancel: the job ends here, cancelled
		// (its cancel is recorded), and its source's next events open a
		// new job.
		if job, err = s.endExternal(ctx, job, &spoolv1.JobResult{ExitCode: -1, Error: "cancelled"}, ""); err != nil {
			return nil, s.fail(ctx, "CancelJob", err)
		}
	}
	s.kickScatterOf(job)
	s.endedWithFollowers(job)
	s.audit(ctx, caller, "job cancel requested", "job_id", job.GetJobId(), "state", convert.State(job.GetState()).String(), "reason", m.GetReason())
	return &spoolv1.CancelJobResponse{Job: job}, nil
}

// checkBudget checks a job's attempts and retries and returns the attempts
// to use (0: the configured default).
func (s *Service) checkBudget(maxAttempts, retries int32) (int32, error) {
	attempts, err := checkSeconds("max_attempts", maxAttempts, int32(s.cfg.Jobs.MaxAttempts), 1, 100)
	if err != nil {
		return 0, err
	}
	if retries < 0 || retries > maxRetries {
		return 0, invalid("retries must be between 0 and %d, got %d", maxRetries, retries)
	}
	return attempts, nil
}

// sameRequest reports whether job was created by the request nj describes:
// the same queue, command, budgets, priority and jobs it runs after (not
// its time: a repeat of a request that gave run_in comes later). Of secrets, only their names
// (params.secret_names) count: comparing values would tell whoever holds
// a request id whether a guess of them is right.
func sameRequest(job *spoolv1.Job, nj store.NewJob) bool {
	return job.GetQueue() == nj.Queue && proto.Equal(job.GetParams(), nj.Params) &&
		job.GetMaxAttempts() == nj.MaxAttempts && job.GetRetries() == nj.Retries &&
		cmp.Or(job.GetPriority(), store.DefaultPriority) == cmp.Or(nj.Priority, store.DefaultPriority) && slices.Equal(job.GetAfter(), nj.After)
}
