package service

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/scatter"
)

// DeleteJob removes a finished job, its whole log and the files kept
// beside it. A job still queued or running must be cancelled first; a
// batch of a scatter still running stays until its scatter ends.
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
		case err == nil && why == reasonRetention && b.GetBatchIndex() == 0 && s.blobs != nil && rec.Scatter.GetSpec().GetSource() != nil:
			// The batches cut from a scatter's S3 items go when
			// retention takes its first batch's job: the scatter has
			// ended, and its jobs, which read them, are going.
			if _, err := s.blobs.DeletePrefix(ctx, scatter.BlobsPrefix(b.GetScatterId())); err != nil {
				return fmt.Errorf("deleting the batches of scatter %s: %w", b.GetScatterId(), err)
			}
		}
	}
	if err := s.removeBlobs(ctx, job); err != nil {
		return err
	}
	if err := s.store.DeleteJob(ctx, job.GetJobId()); err != nil {
		return err
	}
	s.metrics.deleted.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", job.GetQueue()), attribute.String("reason", why)))
	return nil
}

// reasonRetention is the reason the retention sweeper gives RemoveJob.
const reasonRetention = "retention"

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

// removeBlobs deletes the files kept beside a finished job, before its
// record goes. In that order, a failure midway leaves the job listed, with
// some of its files gone, and the next try (the operator's, or the next
// retention round) deletes the rest and then the job: nothing is left that
// no one knows of. The other order could leave files whose job is gone,
// which only a sweep of the whole blob store would find. A job not yet
// finished keeps its files: the store refuses to delete it.
func (s *Service) removeBlobs(ctx context.Context, job *spoolv1.Job) error {
	if s.blobs == nil || !convert.State(job.GetState()).IsFinal() {
		return nil
	}
	if _, err := s.blobs.DeletePrefix(ctx, jobBlobs(job.GetJobId())); err != nil {
		return fmt.Errorf("deleting the files of job %s: %w", job.GetJobId(), err)
	}
	return nil
}
