package service

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
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
	s.audit(ctx, caller, "job deleted", "job_id", job.GetJobId(), "queue", job.GetQueue(), "state", spool.StateName(job.GetState()))
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

// Retention sweeping: how often, and how many jobs one store call returns.
// Each job is deleted in its own short write, so a sweep never holds the
// store long enough to keep workers from taking jobs.
const (
	retentionInterval = time.Minute
	retentionBatch    = 100
	// retentionRound caps one round, so a store far behind (a retention
	// just shortened) catches up over several minutes, not in one burst.
	retentionRound = 50 * retentionBatch
)

// RunRetention deletes the jobs that ended more than jobs.retention_days
// ago, until ctx ends; with retention 0 it returns at once. Every server
// may run it: deleting a job twice finds it gone.
func (s *Service) RunRetention(ctx context.Context) {
	if s.retention <= 0 {
		return
	}
	s.sweep(ctx, retentionInterval, "deleted jobs past retention", s.SweepRetention)
}

// SweepRetention runs one round of the retention sweeper now and returns
// how many jobs it deleted.
func (s *Service) SweepRetention(ctx context.Context) (int, error) {
	if s.retention <= 0 {
		return 0, nil
	}
	cut := s.clock().Add(-s.retention)
	deleted := 0
	for deleted < retentionRound {
		ids, err := s.store.EndedBefore(ctx, cut, retentionBatch)
		if err != nil {
			return deleted, err
		}
		gone := 0
		for _, id := range ids {
			job, err := s.store.Get(ctx, id)
			if err == nil {
				err = s.remove(ctx, job, "retention")
			}
			switch {
			case err == nil:
				gone++
			case errors.Is(err, spool.ErrNotFound), errors.Is(err, spool.ErrConflict):
				// Deleted by another server, or kept for its scatter.
			default:
				return deleted + gone, err
			}
		}
		deleted += gone
		if gone == 0 || len(ids) < retentionBatch {
			break
		}
	}
	if r := s.store.Capabilities().SpaceReclaimer; r != nil && deleted > 0 {
		if err := r.ReclaimSpace(ctx); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
