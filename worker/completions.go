package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// Per CompleteJobs call: the server takes at most 100 completions, and
// a request no larger than one completion may be; a completion larger
// than the byte budget goes alone.
const (
	gatherMaxCompletions = 100
	gatherMaxBytes       = 4 << 20
)

// completions gathers the results of attempts that end at about the same
// time into one CompleteJobs call. A worker running short jobs ends many a
// second, and a call for each cost the server more than the jobs did.
//
// Nothing waits to be gathered: a completion goes at once when no call is
// under way, and those that end while one is go together in the next, so
// a lone job is not delayed (the store's group commit works the same way).
type completions struct {
	rpc spoolv1connect.JobServiceClient

	mu      sync.Mutex
	queued  []*completion
	sending bool
	// oneByOne: the server does not know CompleteJobs (it predates it):
	// every completion is its own CompleteJob.
	oneByOne atomic.Bool
}

// completion is one attempt's result waiting for its answer.
type completion struct {
	ctx  context.Context
	req  *spoolv1.CompleteJobRequest
	size int
	job  *spoolv1.Job
	err  error
	done chan struct{}
}

// complete records an attempt's result, in a call gathered with others
// when some are waiting, and returns what CompleteJob would: the job, or
// its error (a *connect.Error for the server's refusals).
func (c *completions) complete(ctx context.Context, req *spoolv1.CompleteJobRequest) (*spoolv1.Job, error) {
	if c.oneByOne.Load() {
		return c.alone(ctx, req)
	}
	p := &completion{ctx: ctx, req: req, size: proto.Size(req), done: make(chan struct{})}
	c.mu.Lock()
	c.queued = append(c.queued, p)
	start := !c.sending
	c.sending = true
	c.mu.Unlock()
	if start {
		go c.send()
	}
	select {
	case <-p.done:
		return p.job, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// alone is one CompleteJob call.
func (c *completions) alone(ctx context.Context, req *spoolv1.CompleteJobRequest) (*spoolv1.Job, error) {
	resp, err := c.rpc.CompleteJob(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetJob(), nil
}

// send makes calls until no completion is queued.
func (c *completions) send() {
	for {
		c.mu.Lock()
		batch := c.take()
		if len(batch) == 0 {
			c.sending = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.call(batch)
	}
}

// take removes the completions of the next call from the queue: the
// oldest, and as many after it as fit. c.mu is held.
func (c *completions) take() []*completion {
	n, bytes := 0, 0
	for n < len(c.queued) && n < gatherMaxCompletions && (n == 0 || bytes+c.queued[n].size <= gatherMaxBytes) {
		bytes += c.queued[n].size
		n++
	}
	batch := c.queued[:n:n]
	c.queued = c.queued[n:]
	return batch
}

// call sends batch and answers each of its completions.
func (c *completions) call(batch []*completion) {
	if len(batch) == 1 || c.oneByOne.Load() {
		c.eachAlone(batch)
		return
	}
	// The call lasts as long as one of its completions still waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waiting atomic.Int32
	waiting.Store(int32(len(batch)))
	for _, p := range batch {
		defer context.AfterFunc(p.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})()
	}
	// Brief: of a completed job the sender reads only its last sequence.
	req := &spoolv1.CompleteJobsRequest{Completions: make([]*spoolv1.CompleteJobRequest, len(batch)), Brief: true}
	for i, p := range batch {
		req.Completions[i] = p.req
	}
	resp, err := c.rpc.CompleteJobs(ctx, connect.NewRequest(req))
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		c.oneByOne.Store(true)
		c.eachAlone(batch)
		return
	}
	var results []*spoolv1.CompletionResult
	if err == nil {
		if results = resp.Msg.GetResults(); len(results) != len(batch) {
			err = connect.NewError(connect.CodeInternal, errors.New("the server answered a different number of completions than it was sent"))
		}
	}
	for i, p := range batch {
		switch {
		case err != nil:
			// The call failed as a whole (the server is away, say): each
			// completion's sender retries it as it would its own call.
			p.err = err
		case results[i].GetErrorCode() != "":
			p.err = completionError(results[i])
		default:
			p.job = results[i].GetJob()
		}
		close(p.done)
	}
}

// eachAlone answers each of batch with its own CompleteJob call.
func (c *completions) eachAlone(batch []*completion) {
	for _, p := range batch {
		p.job, p.err = c.alone(p.ctx, p.req)
		close(p.done)
	}
}

// completionError is the error CompleteJob would have returned for a
// completion the server refused.
func completionError(r *spoolv1.CompletionResult) error {
	var code connect.Code
	if err := code.UnmarshalText([]byte(r.GetErrorCode())); err != nil {
		code = connect.CodeUnknown
	}
	return connect.NewError(code, errors.New(r.GetErrorMessage()))
}
