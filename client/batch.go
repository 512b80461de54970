package client

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
)

// What one EnqueueJobs call carries: the server takes at most 1,000 jobs
// and 16 MiB a call; half the bytes leaves room for the encoding's own.
const (
	maxBatchJobs  = 1000
	maxBatchBytes = 8 << 20
)

// BatchResult is how one job of a SubmitBatch went: Job is set, or Err.
type BatchResult struct {
	// Job is the job enqueued, or the one an earlier submission with the
	// same RequestID made (Deduplicated).
	Job          *spool.Job
	Deduplicated bool
	// Err is why the job was not enqueued. It wraps one of package
	// spool's error kinds, as Submit's errors do: errors.Is(r.Err,
	// spool.ErrInvalidArgument) for a job the server refused as it is.
	Err error
}

// SubmitBatch enqueues many jobs, each as Submit would (the same checks,
// defaults and rights, each deduplicated by its own RequestID), in calls
// of up to 1,000 jobs that the server enqueues together: many times
// Submit's rate. A job that is refused fails only itself.
//
// results[i] is jobs[i]'s. err is set when a whole call failed (the key
// was refused, the server could not be reached): its jobs and those of
// the calls not made after it then have err as their Err, while those of
// the calls before it were enqueued as their results say. The server may
// have enqueued the jobs of a call whose answer was lost: with a RequestID
// on every job, the client tries such a call again (Config.Retry), and
// submitting again finds those jobs instead of enqueueing them twice.
func (c *Client) SubmitBatch(ctx context.Context, jobs []SubmitParams) (results []BatchResult, err error) {
	results = make([]BatchResult, len(jobs))
	var (
		call  []*spoolv1.EnqueueJobRequest
		index []int // jobs' positions of call's requests
		size  int
	)
	send := func() {
		if len(call) == 0 {
			return
		}
		if err == nil {
			err = c.enqueueJobs(ctx, call, index, results)
		}
		if err != nil {
			for _, i := range index {
				results[i] = BatchResult{Err: err}
			}
		}
		call, index, size = call[:0], index[:0], 0
	}
	for i, s := range jobs {
		req, rerr := s.request()
		if rerr != nil {
			results[i].Err = rerr
			continue
		}
		n := proto.Size(req)
		if len(call) == maxBatchJobs || (len(call) > 0 && size+n > maxBatchBytes) {
			send()
		}
		call, index, size = append(call, req), append(index, i), size+n
	}
	send()
	return results, err
}

// enqueueJobs makes one EnqueueJobs call and puts its results at index.
func (c *Client) enqueueJobs(ctx context.Context, call []*spoolv1.EnqueueJobRequest, index []int, results []BatchResult) error {
	resp, err := c.rpc.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: call}))
	if err != nil {
		return wrap(err)
	}
	rs := resp.Msg.GetResults()
	if len(rs) != len(call) {
		return wrap(connect.NewError(connect.CodeInternal, fmt.Errorf("the server answered %d jobs with %d results: which it enqueued is not known", len(call), len(rs))))
	}
	for k, r := range rs {
		results[index[k]] = batchResult(r)
	}
	return nil
}

// batchResult is a job's result as the server sent it.
func batchResult(r *spoolv1.EnqueueResult) BatchResult {
	if r.GetErrorCode() == "" && r.GetJob() != nil {
		return BatchResult{Job: convert.Job(r.GetJob()), Deduplicated: r.GetDeduplicated()}
	}
	var code connect.Code
	if err := code.UnmarshalText([]byte(r.GetErrorCode())); err != nil {
		code = connect.CodeUnknown
	}
	return BatchResult{Err: wrap(connect.NewError(code, errors.New(r.GetErrorMessage())))}
}
