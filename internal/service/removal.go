package service

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
)

// DeleteJob removes a finished job and its whole log. A job still queued
// or running must be cancelled first; a batch of a scatter still running
// stays until its scatter ends.
func (s *Service) DeleteJob(ctx context.Context, m *spoolv1.DeleteJobRequest) (*spoolv1.DeleteJobResponse, error) {
	job, err := s.job(ctx, "DeleteJob", m.GetJobId())
	if err != nil {
		return nil, err
	}
	caller, err := s.authorize(ctx, PermOperate, job.GetQueue())
	if err != nil {
		return nil, err
	}
	if err := s.remove(ctx, job, "operator"); err != nil {
		return nil, s.fail(ctx, "DeleteJob", err)
	}
	s.audit(ctx, caller, "job deleted", "job_id", job.GetJobId(), "queue", job.GetQueue(), "state", convert.State(job.GetState()).String())
	return &spoolv1.DeleteJobResponse{}, nil
}

// remove deletes one job: the one rule that an operator's delete and the
// retention sweeper share.
func (s *Service) remove(ctx context.Context, job *spoolv1.Job, why string) error {
	if b := job.GetParams().GetScatter(); b != nil {
		rec, err := s.store.GetScatter(ctx, b.GetScatterId())
		switch {
		case err == nil && rec.Active:
			return apierr.Errorf(spool.ErrConflict, "job %s is part of scatter %s, which is still running: it can go once the scatter ends",
				job.GetJobId(), b.GetScatterId())
		case err != nil && !errors.Is(err, spool.ErrNotFound):
			return err
		}
	}
	if err := s.store.DeleteJob(ctx, job.GetJobId()); err != nil {
		return err
	}
	s.metrics.deleted.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", job.GetQueue()), attribute.String("reason", why)))
	return nil
}

// RemoveJob deletes a finished job as DeleteJob does, for the retention
// sweeper (reason: why, for the metrics): the rule every deletion shares,
// without a caller to check. A job that is gone already is
// spool.ErrNotFound; one kept for its scatter, still running, is
// spool.ErrConflict.
func (s *Service) RemoveJob(ctx context.Context, jobID, reason string) error {
	job, err := s.store.Get(ctx, jobID)
	if err != nil {
		return err
	}
	return s.remove(ctx, job, reason)
}
