package client

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/scatterjob"
)

// ScatterParams describes a scatter: one command run over batches of
// items, each batch a job, then an optional gather.
type ScatterParams struct {
	// Job is what every batch runs and where (Queue, Argv or Script, Env,
	// WorkingDir, Timeout, Repository, Ref, MaxAttempts, Retries; its
	// RequestID is not used). Each batch's job reads its input document on
	// stdin and in $SPOOL_BATCH_FILE, and may leave a JSON result in
	// $SPOOL_RESULT.
	Job SubmitParams
	// Batches are the batches in order, each a JSON array of at least one
	// item (package itembatch makes them). None when Source is set.
	Batches []json.RawMessage
	// Source is where the server reads the items itself (S3), cutting
	// them into batches as it reads, instead of Batches.
	Source *spool.ScatterSource
	// Results is "s3://bucket/prefix/": every batch's result, and a
	// manifest of them, are written there ("": none).
	Results string
	// BatchInput is given to every batch and the gather (nil: {}).
	BatchInput json.RawMessage
	// MaxConcurrency bounds the batches queued or running at once (0: no
	// limit).
	MaxConcurrency int
	// ToleratedFailureCount and ToleratedFailurePercentage (0 to 100) are
	// the failed batches the scatter tolerates; with neither set, none.
	ToleratedFailureCount      *int
	ToleratedFailurePercentage *float32
	// Gather is a shell command run once every batch has ended within
	// tolerance, with every batch's result on stdin ("": none).
	Gather string
}

// StartScatter stores a scatter and starts it.
func (c *Client) StartScatter(ctx context.Context, s ScatterParams) (*spool.Scatter, error) {
	checks := []error{fits("MaxConcurrency", s.MaxConcurrency), fits("Job.MaxAttempts", s.Job.MaxAttempts), fits("Job.Retries", s.Job.Retries)}
	if src := s.Source; src != nil {
		checks = append(checks, fits("Source.MaxItemsPerBatch", src.MaxItemsPerBatch), fits("Source.MaxBytesPerBatch", src.MaxBytesPerBatch), fits("Source.MaxItemsPerGroup", src.MaxItemsPerGroup))
	}
	if s.ToleratedFailureCount != nil {
		checks = append(checks, fits("ToleratedFailureCount", *s.ToleratedFailureCount))
	}
	if err := errors.Join(checks...); err != nil {
		return nil, err
	}
	spec := convert.SpecProto(spool.ScatterSpec{
		Queue: s.Job.Queue, Params: s.Job.params(), MaxAttempts: s.Job.MaxAttempts, Retries: s.Job.Retries,
		BatchInput: s.BatchInput, MaxConcurrency: s.MaxConcurrency,
		ToleratedFailureCount: s.ToleratedFailureCount, ToleratedFailurePercentage: s.ToleratedFailurePercentage,
		Source: s.Source, Results: s.Results,
	})
	if s.Gather != "" {
		spec.Gather = scatterjob.GatherParams(spec.GetParams(), s.Gather)
	}
	batches := make([]string, len(s.Batches))
	for i, b := range s.Batches {
		batches[i] = string(b)
	}
	resp, err := c.sc.CreateScatter(ctx, connect.NewRequest(&spoolv1.CreateScatterRequest{Spec: spec, Batches: batches}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Scatter(resp.Msg.GetScatter()), nil
}

// Scatter returns a scatter with its progress.
func (c *Client) Scatter(ctx context.Context, id string) (*spool.Scatter, error) {
	resp, err := c.sc.GetScatter(ctx, connect.NewRequest(&spoolv1.GetScatterRequest{ScatterId: id}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Scatter(resp.Msg.GetScatter()), nil
}

// ScattersPage returns a page of at most pageSize scatters (0: 50), newest
// first, from cursor ("": the newest), and the cursor of the next page
// ("" on the last).
func (c *Client) ScattersPage(ctx context.Context, pageSize int, cursor string) ([]*spool.Scatter, string, error) {
	if err := fits("pageSize", pageSize); err != nil {
		return nil, "", err
	}
	resp, err := c.sc.ListScatters(ctx, connect.NewRequest(&spoolv1.ListScattersRequest{PageSize: int32(pageSize), Cursor: cursor}))
	if err != nil {
		return nil, "", wrap(err)
	}
	return convert.Scatters(resp.Msg.GetScatters()), resp.Msg.GetNextCursor(), nil
}

// ScatterBatches returns the batches of a scatter from index from, at most
// pageSize of them (0: 100), and the index of the next page (0 on the last).
func (c *Client) ScatterBatches(ctx context.Context, id string, from, pageSize int) ([]*spool.ScatterBatch, int, error) {
	if err := errors.Join(fits("from", from), fits("pageSize", pageSize)); err != nil {
		return nil, 0, err
	}
	resp, err := c.sc.ListScatterBatches(ctx, connect.NewRequest(&spoolv1.ListScatterBatchesRequest{ScatterId: id, FromIndex: int32(from), PageSize: int32(pageSize)}))
	if err != nil {
		return nil, 0, wrap(err)
	}
	return convert.ScatterBatches(resp.Msg.GetBatches()), int(resp.Msg.GetNextIndex()), nil
}

// CancelScatter stops a scatter: batches not started never run, the others
// are cancelled, and no gather runs.
func (c *Client) CancelScatter(ctx context.Context, id, reason string) (*spool.Scatter, error) {
	resp, err := c.sc.CancelScatter(ctx, connect.NewRequest(&spoolv1.CancelScatterRequest{ScatterId: id, Reason: reason}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Scatter(resp.Msg.GetScatter()), nil
}

// RedriveScatter runs an ended scatter again from where it stopped: only
// its batches that failed or were cancelled (or never ran) run again, as
// new jobs, then its gather with every batch's result. A scatter that is
// running, still winding down, or succeeded is refused with an error
// matching spool.ErrConflict.
func (c *Client) RedriveScatter(ctx context.Context, id string) (*spool.Scatter, error) {
	resp, err := c.sc.RedriveScatter(ctx, connect.NewRequest(&spoolv1.RedriveScatterRequest{ScatterId: id}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Scatter(resp.Msg.GetScatter()), nil
}

// FollowScatter reads a scatter every interval (0: half a second), calls
// progress (when not nil) each time it changed, and returns it once it is
// final. A server that is away for a while is waited for.
func (c *Client) FollowScatter(ctx context.Context, id string, interval time.Duration, progress func(*spool.Scatter)) (*spool.Scatter, error) {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	var last *spool.Scatter
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sc, err := c.Scatter(ctx, id)
		switch {
		case err == nil:
			changed := last == nil || sc.State != last.State || sc.Progress != last.Progress
			if progress != nil && changed {
				progress(sc)
			}
			last = sc
			if sc.State.IsFinal() {
				return sc, nil
			}
		case !errors.Is(err, spool.ErrUnavailable):
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-t.C:
		}
	}
}
