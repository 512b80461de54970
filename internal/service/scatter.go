package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/scatterjob"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Bounds of the requests that carry scatters and results.
const (
	// MaxScatterRequestBytes: CreateScatter carries every batch.
	MaxScatterRequestBytes = scatter.MaxRequestBytes
	// MaxCompleteRequestBytes: CompleteJob carries the job's result
	// document (at most scatterjob.MaxResultBytes) and the attempt's last
	// events, as many as a publish may carry. CompleteJobs carries several
	// completions within the same bound.
	MaxCompleteRequestBytes = scatterjob.MaxResultBytes + MaxPublishRequestBytes
)

// CreateScatter checks a scatter, stores it with its batches and wakes this
// server's driver to hand the first batches to the queue.
func (s *Service) CreateScatter(ctx context.Context, m *spoolv1.CreateScatterRequest) (*spoolv1.CreateScatterResponse, error) {
	spec := proto.Clone(m.GetSpec()).(*spoolv1.ScatterSpec)
	if spec == nil {
		return nil, invalid("spec: say what every batch runs")
	}
	caller, err := s.authorize(ctx, PermSubmit, spec.GetQueue())
	if err != nil {
		return nil, err
	}
	if err := s.checkScatterSpec(spec); err != nil {
		return nil, err
	}
	if src := spec.GetSource(); src != nil {
		if err := scatter.CheckSource(src); err != nil {
			return nil, err
		}
	}
	if r := spec.GetResults(); r != "" {
		if err := s.scatters.CheckResults(ctx, r); err != nil {
			return nil, err
		}
	}
	var (
		rec     *store.ScatterRecord
		batches [][]byte
	)
	if spec.GetSource() != nil {
		if len(m.GetBatches()) > 0 {
			return nil, invalid("batches: a scatter whose items the server reads (spec.source) is sent without batches")
		}
		if err := s.scatters.CanRead(); err != nil {
			return nil, invalid("spec.source: %v", err)
		}
		rec = scatter.NewFromSource(spec, storekit.Now())
	} else if rec, batches, err = scatter.New(spec, m.GetBatches(), storekit.Now()); err != nil {
		return nil, err
	}
	sc := rec.Scatter
	if err := s.store.CreateScatter(ctx, rec, batches); err != nil {
		return nil, s.fail(ctx, "CreateScatter", err)
	}
	s.audit(ctx, caller, "scatter created", "scatter_id", sc.GetScatterId(), "queue", spec.GetQueue(), "batches", len(batches), "items", sc.GetProgress().GetItemCount())
	s.scatters.Kick(sc.GetScatterId())
	return &spoolv1.CreateScatterResponse{Scatter: sc}, nil
}

// checkScatterSpec validates a scatter's spec and fills in its defaults:
// its jobs as any job, then what is a scatter's own.
func (s *Service) checkScatterSpec(spec *spoolv1.ScatterSpec) error {
	queue, err := checkQueue(spec.GetQueue())
	if err != nil {
		return err
	}
	spec.Queue = queue
	if err := s.checkParams(spec.GetParams(), false); err != nil {
		return err
	}
	if err := errors.Join(noUpload(spec.GetParams(), "a scatter's jobs read their input document on stdin, so they"), noUpload(spec.GetGather(), "a scatter's gather")); err != nil {
		return err
	}
	if spec.GetGather() != nil {
		if err := s.checkParams(spec.GetGather(), false); err != nil {
			return fmt.Errorf("gather: %w", err)
		}
	}
	if spec.MaxAttempts, err = s.checkBudget(spec.GetMaxAttempts(), spec.GetRetries()); err != nil {
		return err
	}
	return scatter.CheckSpec(spec)
}

// GetScatter returns a scatter and its progress as its driver last
// recorded it.
func (s *Service) GetScatter(ctx context.Context, m *spoolv1.GetScatterRequest) (*spoolv1.GetScatterResponse, error) {
	rec, err := s.scatter(ctx, "GetScatter", m.GetScatterId())
	if err != nil {
		return nil, err
	}
	return &spoolv1.GetScatterResponse{Scatter: rec.Scatter}, nil
}

// scatter checks the caller may read it, validates the id and reads the
// record. A worker key limited to some queues sees only their scatters.
func (s *Service) scatter(ctx context.Context, op, id string) (*store.ScatterRecord, error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, invalid("scatter_id is required")
	}
	if _, err := uuid.Parse(id); err != nil {
		return nil, store.ScatterNotFound(truncate(id, maxJobID))
	}
	rec, err := s.store.GetScatter(ctx, id)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	if !caller.mayUse(rec.Scatter.GetSpec().GetQueue()) {
		return nil, store.ScatterNotFound(id)
	}
	return rec, nil
}

// ListScatters returns a page of scatters, newest first.
func (s *Service) ListScatters(ctx context.Context, m *spoolv1.ListScattersRequest) (*spoolv1.ListScattersResponse, error) {
	caller, err := s.authorize(ctx, PermRead, "")
	if err != nil {
		return nil, err
	}
	if m.GetPageSize() < 0 || m.GetPageSize() > 500 {
		return nil, invalid("page_size must be between 0 and 500")
	}
	if c := m.GetCursor(); c != "" {
		if _, err := uuid.Parse(c); err != nil {
			return nil, invalid("malformed cursor: pass next_cursor from the previous page as it was")
		}
	}
	recs, next, err := s.store.ListScatters(ctx, store.ScatterFilter{Limit: int(m.GetPageSize()), Cursor: m.GetCursor()})
	if err != nil {
		return nil, s.fail(ctx, "ListScatters", err)
	}
	resp := &spoolv1.ListScattersResponse{NextCursor: next}
	for _, r := range recs {
		if caller.mayUse(r.Scatter.GetSpec().GetQueue()) {
			resp.Scatters = append(resp.Scatters, r.Scatter)
		}
	}
	return resp, nil
}

// ListScatterBatches returns a page of a scatter's batches with their jobs.
func (s *Service) ListScatterBatches(ctx context.Context, m *spoolv1.ListScatterBatchesRequest) (*spoolv1.ListScatterBatchesResponse, error) {
	rec, err := s.scatter(ctx, "ListScatterBatches", m.GetScatterId())
	if err != nil {
		return nil, err
	}
	size := m.GetPageSize()
	switch {
	case size < 0 || size > 1000:
		return nil, invalid("page_size must be between 0 and 1000")
	case size == 0:
		size = 100
	}
	n := rec.Scatter.GetProgress().GetBatchCount()
	from := m.GetFromIndex()
	if from < 0 || from > n {
		return nil, invalid("from_index must be between 0 and %d", n)
	}
	end := min(from+size, n)
	resp := &spoolv1.ListScatterBatchesResponse{}
	for i := from; i < end; i++ {
		b := &spoolv1.ScatterBatch{BatchIndex: i}
		// A batch a redrive holds has no job of this run yet.
		if i < rec.Released && !rec.Held.Has(i) {
			j, err := s.store.Get(ctx, scatter.JobOf(rec, i))
			switch {
			case err == nil:
				b.Job, b.ItemCount = j, j.GetParams().GetScatter().GetItemCount()
			case !errors.Is(err, spool.ErrNotFound):
				return nil, s.fail(ctx, "ListScatterBatches", err)
			}
		}
		resp.Batches = append(resp.Batches, b)
	}
	if end < n {
		resp.NextIndex = end
	}
	return resp, nil
}

// CancelScatter stops a scatter: no further batch is queued, the batch jobs
// not finished are cancelled, no gather runs.
func (s *Service) CancelScatter(ctx context.Context, m *spoolv1.CancelScatterRequest) (*spoolv1.CancelScatterResponse, error) {
	caller, err := s.authorize(ctx, PermSubmit, "")
	if err != nil {
		return nil, err
	}
	if err := checkText("reason", m.GetReason(), maxReason); err != nil {
		return nil, err
	}
	for {
		rec, err := s.scatter(ctx, "CancelScatter", m.GetScatterId())
		if err != nil {
			return nil, err
		}
		if convert.ScatterState(rec.Scatter.GetState()).IsFinal() {
			return &spoolv1.CancelScatterResponse{Scatter: rec.Scatter}, nil
		}
		reason := "cancelled"
		if m.GetReason() != "" {
			reason += ": " + m.GetReason()
		}
		scatter.Stop(rec, spoolv1.ScatterState_SCATTER_STATE_CANCELLED, reason)
		err = s.store.UpdateScatter(ctx, rec)
		if errors.Is(err, store.ErrScatterMoved) {
			continue
		}
		if err != nil {
			return nil, s.fail(ctx, "CancelScatter", err)
		}
		s.audit(ctx, caller, "scatter cancelled", "scatter_id", rec.Scatter.GetScatterId(), "reason", m.GetReason())
		// The round cancels the batch jobs now rather than at the next tick.
		if err := s.scatters.Drive(ctx, rec.Scatter.GetScatterId()); err != nil {
			s.log.WarnContext(ctx, "cancelling a scatter's jobs failed; its driver will go on", "scatter_id", rec.Scatter.GetScatterId(), "error", err)
		}
		if now, err := s.store.GetScatter(ctx, rec.Scatter.GetScatterId()); err == nil {
			rec = now
		}
		return &spoolv1.CancelScatterResponse{Scatter: rec.Scatter}, nil
	}
}

// RedriveScatter runs an ended scatter again from where it failed: its
// batches that failed or were cancelled run again as new jobs, then the
// gather (scatter.Redrive says what is kept). Who may cancel a scatter may
// redrive it.
func (s *Service) RedriveScatter(ctx context.Context, m *spoolv1.RedriveScatterRequest) (*spoolv1.RedriveScatterResponse, error) {
	for {
		rec, err := s.scatter(ctx, "RedriveScatter", m.GetScatterId())
		if err != nil {
			return nil, err
		}
		caller, err := s.authorize(ctx, PermSubmit, rec.Scatter.GetSpec().GetQueue())
		if err != nil {
			return nil, err
		}
		if err := scatter.Redrive(rec); err != nil {
			return nil, err
		}
		rec.Scatter.UpdatedAt = timestamppb.New(storekit.Now())
		err = s.store.UpdateScatter(ctx, rec)
		if errors.Is(err, store.ErrScatterMoved) {
			continue
		}
		if err != nil {
			return nil, s.fail(ctx, "RedriveScatter", err)
		}
		sc := rec.Scatter
		s.audit(ctx, caller, "scatter redriven", "scatter_id", sc.GetScatterId(), "redrive", sc.GetRedriveCount(), "batches", sc.GetProgress().GetWaiting())
		s.scatters.Kick(sc.GetScatterId())
		return &spoolv1.RedriveScatterResponse{Scatter: sc}, nil
	}
}

// Scatters is the driver of scatters' rounds: the core kicks it when a
// scatter is created or one of its batch jobs ends, and runs a round
// itself when a scatter is cancelled; the server's maintenance loop
// (maintenance.ScatterDriver) runs the rest.
func (s *Service) Scatters() *scatter.Driver { return s.scatters }

// kickScatterOf asks for a round of the scatter job belongs to, if any.
func (s *Service) kickScatterOf(job *spoolv1.Job) {
	if id := job.GetParams().GetScatter().GetScatterId(); id != "" {
		s.scatters.Kick(id)
	}
}
