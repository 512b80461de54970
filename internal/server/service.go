package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// Service implements the JobService API over a JobStore.
type Service struct {
	store  store.JobStore
	signer *token.Signer
	cfg    *config.Config
	log    *slog.Logger
	// drain, when closed, ends long polls and streams (server shutdown).
	drain <-chan struct{}
	// watchers counts live followers, reported to publishing workers.
	watchers watchers
	metrics  *serverMetrics
}

// untilDrain returns ctx, cancelled also when the server starts draining.
func (s *Service) untilDrain(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if s.drain != nil {
		go func() {
			select {
			case <-s.drain:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

func (s *Service) draining() bool {
	select {
	case <-s.drain:
		return true
	default:
		return false
	}
}

var _ spoolv1connect.JobServiceHandler = (*Service)(nil)

// NewService returns the API over st. Tokens are signed with signer; job
// defaults come from cfg.
func NewService(st store.JobStore, signer *token.Signer, cfg *config.Config, log *slog.Logger) *Service {
	return &Service{store: st, signer: signer, cfg: cfg, log: log}
}

func (s *Service) fail(ctx context.Context, op string, err error) error {
	return apiError(ctx, s.log, op, err)
}

// EnqueueJob implements the API.
func (s *Service) EnqueueJob(ctx context.Context, req *connect.Request[spoolv1.EnqueueJobRequest]) (*connect.Response[spoolv1.EnqueueJobResponse], error) {
	m := req.Msg
	queue, err := checkQueue(m.GetQueue())
	if err != nil {
		return nil, err
	}
	if err := checkParams(m.GetParams()); err != nil {
		return nil, err
	}
	if err := checkText("request_id", m.GetRequestId(), maxRequestID); err != nil {
		return nil, err
	}
	attempts, err := checkSeconds("max_attempts", m.GetMaxAttempts(), int32(s.cfg.Jobs.MaxAttempts), 1, 100)
	if err != nil {
		return nil, err
	}
	job, created, err := s.store.Enqueue(ctx, store.NewJob{
		Queue:       queue,
		RequestID:   m.GetRequestId(),
		Params:      m.GetParams(),
		Execution:   s.cfg.ExecutionConfig(),
		MaxAttempts: attempts,
	})
	if err != nil {
		return nil, s.fail(ctx, "EnqueueJob", err)
	}
	if created {
		s.log.InfoContext(ctx, "job enqueued", "job_id", job.GetJobId(), "queue", queue)
		s.metrics.enqueued.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", queue)))
	}
	return connect.NewResponse(&spoolv1.EnqueueJobResponse{Job: job, Deduplicated: !created}), nil
}

// GetJob implements the API.
func (s *Service) GetJob(ctx context.Context, req *connect.Request[spoolv1.GetJobRequest]) (*connect.Response[spoolv1.GetJobResponse], error) {
	if err := checkJobID(req.Msg.GetJobId()); err != nil {
		return nil, err
	}
	job, err := s.store.Get(ctx, req.Msg.GetJobId())
	if err != nil {
		return nil, s.fail(ctx, "GetJob", err)
	}
	return connect.NewResponse(&spoolv1.GetJobResponse{Job: job}), nil
}

// ListJobs implements the API.
func (s *Service) ListJobs(ctx context.Context, req *connect.Request[spoolv1.ListJobsRequest]) (*connect.Response[spoolv1.ListJobsResponse], error) {
	m := req.Msg
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
	jobs, next, err := s.store.List(ctx, store.ListFilter{Queue: m.GetQueue(), States: m.GetStates(), Limit: int(m.GetPageSize()), Cursor: m.GetCursor()})
	if err != nil {
		return nil, s.fail(ctx, "ListJobs", err)
	}
	return connect.NewResponse(&spoolv1.ListJobsResponse{Jobs: jobs, NextCursor: next}), nil
}

// CancelJob implements the API.
func (s *Service) CancelJob(ctx context.Context, req *connect.Request[spoolv1.CancelJobRequest]) (*connect.Response[spoolv1.CancelJobResponse], error) {
	if err := checkJobID(req.Msg.GetJobId()); err != nil {
		return nil, err
	}
	if err := checkText("reason", req.Msg.GetReason(), maxReason); err != nil {
		return nil, err
	}
	job, err := s.store.Cancel(ctx, req.Msg.GetJobId(), req.Msg.GetReason())
	if err != nil {
		return nil, s.fail(ctx, "CancelJob", err)
	}
	s.log.InfoContext(ctx, "job cancel requested", "job_id", job.GetJobId(), "state", store.StateName(job.GetState()))
	return connect.NewResponse(&spoolv1.CancelJobResponse{Job: job}), nil
}

// visibility validates a requested lease length (0: the default). A lease
// must outlast the heartbeat interval, or every job would lose its lease
// between two heartbeats.
func (s *Service) visibility(v int32) (time.Duration, error) {
	hb := int32(s.cfg.Execution.HeartbeatIntervalSeconds)
	secs, err := checkSeconds("visibility_timeout_seconds", v, int32(s.cfg.Jobs.VisibilityTimeoutSeconds), hb+1, maxVisibility)
	return time.Duration(secs) * time.Second, err
}

// DequeueJobs implements the API.
func (s *Service) DequeueJobs(ctx context.Context, req *connect.Request[spoolv1.DequeueJobsRequest]) (*connect.Response[spoolv1.DequeueJobsResponse], error) {
	m := req.Msg
	queue, err := checkQueue(m.GetQueue())
	if err != nil {
		return nil, err
	}
	if m.GetMaxJobs() < 0 || m.GetWaitSeconds() < 0 {
		return nil, invalid("max_jobs and wait_seconds must not be negative")
	}
	vis, err := s.visibility(m.GetVisibilityTimeoutSeconds())
	if err != nil {
		return nil, err
	}
	if err := checkText("worker_id", m.GetWorkerId(), 200); err != nil {
		return nil, err
	}
	pollCtx, stop := s.untilDrain(ctx)
	defer stop()
	leases, err := s.store.Dequeue(pollCtx, store.DequeueRequest{
		Queue:      queue,
		Max:        int(m.GetMaxJobs()),
		Visibility: vis,
		Wait:       time.Duration(min(m.GetWaitSeconds(), maxWaitSeconds)) * time.Second,
		WorkerID:   m.GetWorkerId(),
	})
	if err != nil && s.draining() && ctx.Err() == nil {
		err = nil // shutting down: answer "nothing now" rather than an error
	}
	if err != nil {
		return nil, s.fail(ctx, "DequeueJobs", err)
	}
	resp := &spoolv1.DequeueJobsResponse{}
	for _, l := range leases {
		resp.Leases = append(resp.Leases, &spoolv1.JobLease{
			Job:            l.Job,
			TaskToken:      s.signer.Sign(token.Claims{JobID: l.JobID, Queue: l.Queue, Attempt: l.Attempt, LeaseID: l.LeaseID}),
			NextSequence:   l.Head.NextSequence,
			NextLine:       l.Head.NextLine,
			LeaseExpiresAt: timestamppb.New(l.ExpiresAt),
		})
		s.log.InfoContext(ctx, "job leased", "job_id", l.JobID, "attempt", l.Attempt, "worker", m.GetWorkerId())
	}
	s.metrics.leased.Add(ctx, int64(len(leases)), metric.WithAttributes(attribute.String("queue", queue)))
	return connect.NewResponse(resp), nil
}

// lease verifies a task token and returns the lease it names.
func (s *Service) lease(tok string) (store.LeaseRef, error) {
	if tok == "" {
		return store.LeaseRef{}, invalid("task_token is required: use the one DequeueJobs returned")
	}
	c, err := s.signer.Verify(tok)
	if err != nil {
		return store.LeaseRef{}, err
	}
	return store.LeaseRef{JobID: c.JobID, Queue: c.Queue, Attempt: c.Attempt, LeaseID: c.LeaseID}, nil
}

// UpdateJobVisibility implements the API.
func (s *Service) UpdateJobVisibility(ctx context.Context, req *connect.Request[spoolv1.UpdateJobVisibilityRequest]) (*connect.Response[spoolv1.UpdateJobVisibilityResponse], error) {
	ref, err := s.lease(req.Msg.GetTaskToken())
	if err != nil {
		return nil, s.fail(ctx, "UpdateJobVisibility", err)
	}
	vis, err := s.visibility(req.Msg.GetVisibilityTimeoutSeconds())
	if err != nil {
		return nil, err
	}
	expires, cancel, err := s.store.Heartbeat(ctx, ref, vis)
	if err != nil {
		return nil, s.fail(ctx, "UpdateJobVisibility", err)
	}
	return connect.NewResponse(&spoolv1.UpdateJobVisibilityResponse{LeaseExpiresAt: timestamppb.New(expires), CancelRequested: cancel,
		Watched: s.watchers.watched(ref.JobID)}), nil
}

// CompleteJob implements the API.
func (s *Service) CompleteJob(ctx context.Context, req *connect.Request[spoolv1.CompleteJobRequest]) (*connect.Response[spoolv1.CompleteJobResponse], error) {
	ref, err := s.lease(req.Msg.GetTaskToken())
	if err != nil {
		return nil, s.fail(ctx, "CompleteJob", err)
	}
	res := req.Msg.GetResult()
	if res == nil {
		return nil, invalid("result is required (exit_code, error, times)")
	}
	if err := checkText("result.error", res.GetError(), 16<<10); err != nil {
		return nil, err
	}
	job, err := s.store.Complete(ctx, ref, res)
	if err != nil {
		return nil, s.fail(ctx, "CompleteJob", err)
	}
	s.log.InfoContext(ctx, "job finished", "job_id", job.GetJobId(), "attempt", ref.Attempt,
		"state", store.StateName(job.GetState()), "exit_code", job.GetResult().GetExitCode())
	s.metrics.jobFinished(ctx, job)
	return connect.NewResponse(&spoolv1.CompleteJobResponse{Job: job}), nil
}

// PublishEvents implements the API.
func (s *Service) PublishEvents(ctx context.Context, req *connect.Request[spoolv1.PublishEventsRequest]) (*connect.Response[spoolv1.PublishEventsResponse], error) {
	ref, err := s.lease(req.Msg.GetTaskToken())
	if err != nil {
		return nil, s.fail(ctx, "PublishEvents", err)
	}
	evs := req.Msg.GetEvents()
	if len(evs) > maxEventsPerPublish {
		return nil, invalid("events: %d in one call; send at most %d", len(evs), maxEventsPerPublish)
	}
	head, err := s.store.Append(ctx, ref, evs)
	if err != nil {
		return nil, s.fail(ctx, "PublishEvents", err)
	}
	s.metrics.eventsPublished(ctx, evs)
	return connect.NewResponse(&spoolv1.PublishEventsResponse{LastSequence: head.NextSequence - 1, LineCount: head.NextLine - 1,
		Watched: s.watchers.watched(ref.JobID)}), nil
}

// StreamEvents implements the API: a store.Feed sent as it is read. The
// stream's flow control is the backpressure: a slow client slows its own
// feed, which reads the store at its own pace and drops nothing.
func (s *Service) StreamEvents(ctx context.Context, req *connect.Request[spoolv1.StreamEventsRequest], stream *connect.ServerStream[spoolv1.StreamEventsResponse]) error {
	m := req.Msg
	if err := checkJobID(m.GetJobId()); err != nil {
		return err
	}
	if m.GetFromSequence() < 0 || m.GetFromLine() < 0 {
		return invalid("from_sequence and from_line must not be negative")
	}
	if err := checkEventTypes(m.GetEventTypes()); err != nil {
		return err
	}
	fr := store.FeedRequest{
		JobID:        m.GetJobId(),
		FromSequence: m.GetFromSequence(),
		FromLine:     m.GetFromLine(),
		Types:        m.GetEventTypes(),
		Follow:       m.GetFollow(),
	}
	if m.GetFromTimestamp() != nil {
		fr.FromTime = m.GetFromTimestamp().AsTime()
	}
	// Check the job exists while a plain error response is still possible,
	// then send the headers: clients wait for them before reading, and a
	// follower of a quiet job may wait long for its first event.
	if _, err := s.store.Get(ctx, m.GetJobId()); err != nil {
		return s.fail(ctx, "StreamEvents", err)
	}
	if err := stream.Send(nil); err != nil {
		return err
	}
	if m.GetFollow() {
		defer s.watchers.add(m.GetJobId())()
	}
	feedCtx, stop := s.untilDrain(ctx)
	defer stop()
	feed := store.NewFeed(s.store, fr)
	for ev, err := range feed.Events(feedCtx) {
		if err != nil && s.draining() && ctx.Err() == nil {
			return connect.NewError(connect.CodeUnavailable, errors.New("server is shutting down; reconnect and resume from the last sequence received"))
		}
		if err != nil {
			return s.fail(ctx, "StreamEvents", err)
		}
		out := []*spoolv1.JobEvent{ev}
		if m.GetUnpack() {
			out = events.Unpack(ev)
		}
		for _, e := range out {
			if err := stream.Send(&spoolv1.StreamEventsResponse{Event: e}); err != nil {
				return err
			}
		}
	}
	if job := feed.Finished(); job != nil {
		return stream.Send(&spoolv1.StreamEventsResponse{FinishedJob: job})
	}
	return nil
}
