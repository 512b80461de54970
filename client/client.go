// Package client is the Go SDK for spool: submit jobs, look them up, list
// and cancel them, and replay and follow their output from any line (see
// Events and EventStream).
//
//	c, err := client.New(client.URLFromEnv())
//	job, _, err := c.Submit(ctx, client.Submission{Argv: []string{"make", "test"}})
//
// Every error a Client returns wraps one of package spool's error kinds, so
// callers branch with errors.Is(err, spool.ErrNotFound) and friends.
//
// The client speaks only the calls a user of spool makes. Leasing and
// running jobs is the worker's part: see package worker.
package client

import (
	"context"
	"errors"
	"iter"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/wire"
)

// DefaultURL is where a client looks for the server when not told.
const DefaultURL = "http://127.0.0.1:7070"

// URLFromEnv returns $SPOOL_SERVER, or DefaultURL when it is unset.
func URLFromEnv() string {
	if u := strings.TrimSpace(os.Getenv("SPOOL_SERVER")); u != "" {
		return u
	}
	return DefaultURL
}

// Client talks to one spool server. It is safe for concurrent use.
type Client struct {
	rpc spoolv1connect.JobServiceClient
	// streams is rpc asking for responses as they are, for event streams.
	streams spoolv1connect.JobServiceClient
	keys    spoolv1connect.KeyServiceClient
	sc      spoolv1connect.ScatterServiceClient
	ing     spoolv1connect.IngestServiceClient
	qs      spoolv1connect.QueueServiceClient
	url     string
}

// Option configures New.
type Option interface{ apply(*wire.Options) }

type optionFunc func(*wire.Options)

func (f optionFunc) apply(o *wire.Options) { f(o) }

// WithHTTPClient uses h for requests.
func WithHTTPClient(h *http.Client) Option {
	return optionFunc(func(o *wire.Options) { o.HTTPClient = h })
}

// WithGRPC speaks gRPC (over HTTP/2 without TLS for http:// URLs) instead of
// the Connect protocol.
func WithGRPC() Option { return optionFunc(func(o *wire.Options) { o.GRPC = true }) }

// WithAPIKey sends key with every call. Every spool server needs one (unless
// its auth is disabled); APIKeyFromEnv finds the usual one.
func WithAPIKey(key string) Option {
	return optionFunc(func(o *wire.Options) { o.APIKey = strings.TrimSpace(key) })
}

// WithCA trusts only the CA whose certificate (PEM) is in file, for a
// server on https:// with a certificate of a private CA.
func WithCA(file string) Option { return optionFunc(func(o *wire.Options) { o.CAFile = file }) }

// Retry says how calls ride out a server, or its store, that is away: a
// refused or cut connection, an Unavailable answer (a server or database
// restarting). Only what cannot happen twice is tried again: reads, calls
// that never reached the server, and calls with a request id
// (Submission.RequestID, Rerun's requestID), which the server answers
// with what the first call did. Streams of events resume on their own
// (Reconnect) and are not affected.
type Retry struct {
	// For is how long a call keeps trying, in all, with backoff.
	For time.Duration
	// OnRetry, if set, is told before each pause why the call failed and
	// how long it waits.
	OnRetry func(err error, wait time.Duration)
}

// WithRetry makes calls try again as r says (by default, they do not).
func WithRetry(r Retry) Option {
	return optionFunc(func(o *wire.Options) { o.Retry, o.OnRetry = r.For, r.OnRetry })
}

// APIKeyFromEnv returns $SPOOL_API_KEY ("" when it is unset).
func APIKeyFromEnv() string { return strings.TrimSpace(os.Getenv("SPOOL_API_KEY")) }

// New returns a client for the server at baseURL (http://host:port).
func New(baseURL string, opts ...Option) (*Client, error) {
	var o wire.Options
	for _, opt := range opts {
		opt.apply(&o)
	}
	hc, err := wire.HTTPClient(o)
	if err != nil {
		return nil, err
	}
	o.HTTPClient = hc
	rpc, err := wire.Dial(baseURL, o)
	if err != nil {
		return nil, err
	}
	// Event streams carry events as they are stored, compressed already.
	plain := o
	plain.PlainResponses = true
	streams, _ := wire.Dial(baseURL, plain)
	keys, _ := wire.DialKeys(baseURL, o)
	sc, _ := wire.DialScatters(baseURL, o)
	ing, _ := wire.DialIngest(baseURL, o)
	qs, _ := wire.DialQueues(baseURL, o)
	base, _ := wire.BaseURL(baseURL)
	return &Client{rpc: rpc, streams: streams, keys: keys, sc: sc, ing: ing, qs: qs, url: base}, nil
}

// URL is the server's address.
func (c *Client) URL() string { return c.url }

// Submission describes a job to submit. Set Argv or Script.
type Submission struct {
	Queue      string
	Argv       []string
	Script     string
	Env        map[string]string
	WorkingDir string
	Timeout    time.Duration
	Repository string
	Ref        string
	RequestID  string
	// MaxAttempts bounds how often the job may lose its worker (a worker
	// that died or vanished) before it fails (0: the server's default).
	MaxAttempts int32
	// Retries is how often a failing command (non-zero exit, timeout, could
	// not start) is run again, with exponential backoff (0: never).
	Retries int32
	// Stdin is given to the command on its standard input. Argv, Script,
	// Env and Stdin together hold at most 256 KiB.
	Stdin []byte
	// PTY runs the command on a pseudo-terminal, so tools that colour
	// their output only on a terminal keep their colours. Its stdout and
	// stderr are then one stream, recorded as stdout. Stdin, if given, is
	// still read as a file (as `cmd < file` at a terminal); without it
	// the command's input is the terminal, where it finds end of input.
	PTY bool
	// RejectReason, when set, records the job as failed at once, with this
	// as its error, and never runs it: for work that arrived but cannot
	// run, so it is kept and seen instead of dropped. Argv and Script may
	// then be empty.
	RejectReason string
	// Secrets are environment variables of the command (name to value)
	// that spool never shows: stored encrypted, given only to the worker
	// that runs the job, and masked ("***") in its output. The job shows
	// only their names. Values are UTF-8 text of 4 bytes to 32 KiB; at
	// most 100 secrets, 64 KiB in all. A job of a scatter has none.
	Secrets map[string]string
}

// Params is the submission's JobParams, with the names of its secrets
// (their values go beside the params, in EnqueueJobRequest.secrets).
func (s Submission) Params() *spoolv1.JobParams {
	p := &spoolv1.JobParams{Argv: s.Argv, Script: s.Script, Env: s.Env, WorkingDir: s.WorkingDir, RepositoryUrl: s.Repository, Ref: s.Ref, Stdin: s.Stdin, Pty: s.PTY,
		SecretNames: slices.Sorted(maps.Keys(s.Secrets))}
	// A negative timeout is sent as it is, for the server to refuse: it
	// must not quietly mean "none".
	if s.Timeout != 0 {
		p.Timeout = durationpb.New(s.Timeout)
	}
	return p
}

// Submit enqueues a job. deduplicated is true when s.RequestID was used
// before and job is the one created then.
func (c *Client) Submit(ctx context.Context, s Submission) (job *spoolv1.Job, deduplicated bool, err error) {
	for name, v := range s.Secrets {
		if !utf8.ValidString(v) {
			// The wire carries text; say which secret is not, not what it is.
			return nil, false, apierr.Invalid("secret %s is not UTF-8 text: give it encoded (base64, say) and decode it in the job", name)
		}
	}
	resp, err := c.rpc.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{
		Queue: s.Queue, Params: s.Params(), RequestId: s.RequestID, MaxAttempts: s.MaxAttempts, Retries: s.Retries,
		RejectReason: s.RejectReason, Secrets: s.Secrets,
	}))
	if err != nil {
		return nil, false, wrap(err)
	}
	return resp.Msg.GetJob(), resp.Msg.GetDeduplicated(), nil
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (*spoolv1.Job, error) {
	resp, err := c.rpc.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: id}))
	if err != nil {
		return nil, wrap(err)
	}
	return resp.Msg.GetJob(), nil
}

// Cancel cancels a job (see CancelJob).
func (c *Client) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	resp, err := c.rpc.CancelJob(ctx, connect.NewRequest(&spoolv1.CancelJobRequest{JobId: id, Reason: reason}))
	if err != nil {
		return nil, wrap(err)
	}
	return resp.Msg.GetJob(), nil
}

// Rerun enqueues a finished job again as a new job with the same queue,
// command and budgets, and returns the new job; its RerunOf names the old
// one. A job that has not finished is spool.ErrConflict. requestID, when
// set, makes a repeat return the job the first call made.
func (c *Client) Rerun(ctx context.Context, id, requestID string) (*spoolv1.Job, error) {
	resp, err := c.rpc.RerunJob(ctx, connect.NewRequest(&spoolv1.RerunJobRequest{JobId: id, RequestId: requestID}))
	if err != nil {
		return nil, wrap(err)
	}
	return resp.Msg.GetJob(), nil
}

// Delete removes a finished job and its whole log from the server. A job
// still queued or running is spool.ErrConflict: cancel it first. Needs an
// admin key.
func (c *Client) Delete(ctx context.Context, id string) error {
	_, err := c.rpc.DeleteJob(ctx, connect.NewRequest(&spoolv1.DeleteJobRequest{JobId: id}))
	return wrap(err)
}

// JobsPage returns one page of jobs matching req, newest first, and the
// cursor of the next page ("" after the last).
func (c *Client) JobsPage(ctx context.Context, req *spoolv1.ListJobsRequest) (jobs []*spoolv1.Job, nextCursor string, err error) {
	resp, err := c.rpc.ListJobs(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, "", wrap(err)
	}
	return resp.Msg.GetJobs(), resp.Msg.GetNextCursor(), nil
}

// Jobs yields every job matching req, newest first, fetching pages of
// req.PageSize as it goes (req.Cursor, if set, is where it starts).
func (c *Client) Jobs(ctx context.Context, req *spoolv1.ListJobsRequest) iter.Seq2[*spoolv1.Job, error] {
	return func(yield func(*spoolv1.Job, error) bool) {
		cursor := req.GetCursor()
		for {
			r := &spoolv1.ListJobsRequest{Queue: req.GetQueue(), States: req.GetStates(), PageSize: req.GetPageSize(), Cursor: cursor}
			jobs, next, err := c.JobsPage(ctx, r)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, j := range jobs {
				if !yield(j, nil) {
					return
				}
			}
			if cursor = next; cursor == "" {
				return
			}
		}
	}
}

// IsUnavailable reports whether err, from a call to the server, means the
// server could not be reached (or is restarting), as opposed to refusing
// the request: the same call may succeed later. Errors that did not come
// from a call (a file, a local port) are not, even when the system's error
// underneath looks like a network one.
func IsUnavailable(err error) bool {
	return errors.Is(err, spool.ErrUnavailable) || connect.CodeOf(err) == connect.CodeUnavailable
}

// kindError is an error from the server with the kind its code stands for,
// so errors.Is(err, spool.ErrNotFound) holds for a NotFound answer. The
// *connect.Error stays reachable with errors.As.
type kindError struct {
	err  error
	kind error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// wrap gives an error from a call its kind. A failure to reach the server
// at all (a refused connection, a DNS failure) is spool.ErrUnavailable.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	kind := apierr.Kind(connect.CodeOf(err))
	var ne net.Error
	if kind == nil && errors.As(err, &ne) {
		kind = spool.ErrUnavailable
	}
	if kind == nil {
		return err
	}
	return &kindError{err: err, kind: kind}
}
