// Package client is the Go SDK for spool: submit jobs, look them up, list
// and cancel them, and replay and follow their output from any line (see
// Lines, Events and EventStream).
//
//	c, err := client.New(client.Config{URL: client.URLFromEnv(), APIKey: client.APIKeyFromEnv()})
//	job, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "test"}})
//	for line, err := range c.Lines(ctx, job.ID, client.StreamOptions{Follow: true}) { ... }
//
// Calls take parameters as structs (SubmitParams, ListParams,
// ScatterParams, KeyParams, QueueConfig) and return package spool's types:
// spool.Job, spool.Event and spool.Line, spool.Queue, spool.Key,
// spool.Scatter, spool.Schedule.
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
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/artifact"
	"github.com/spool-run/spool/internal/convert"
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
	sched   spoolv1connect.ScheduleServiceClient
	// rest streams what a Connect message would hold whole (a large
	// stdin).
	rest *wire.REST
	url  string
	log  *slog.Logger
	// files speaks the REST routes of artifacts.
	files *artifact.Remote
}

// Config says which server a Client talks to and how.
type Config struct {
	// URL is the server's address, http://host:port or https://host:port
	// ("": DefaultURL; URLFromEnv reads $SPOOL_SERVER).
	URL string
	// APIKey is sent with every call. Every spool server needs one (unless
	// its auth is disabled); APIKeyFromEnv finds the usual one. Inside a
	// job, the job token (JobTokenFromEnv) takes its place for the job's
	// artifacts, the only calls it is good for.
	APIKey string
	// CAFile trusts only the CA whose certificate (PEM) is in this file,
	// for a server on https:// with a certificate of a private CA.
	CAFile string
	// HTTPClient makes the requests (nil: a pooled client without an
	// overall timeout, since streams last as long as jobs).
	HTTPClient *http.Client
	// GRPC speaks gRPC (over HTTP/2 without TLS for http:// URLs) instead
	// of the Connect protocol.
	GRPC bool
	// Retry says how calls ride out a server that is away (by default
	// they do not).
	Retry Retry

	// Logger receives the client's structured logs (nil: discarded): each
	// call tried again and each stream reconnecting, at level info.
	Logger *slog.Logger
	// Meters makes the client's metrics (nil: none): the meter
	// "connectrpc.com/otelconnect" records each call's duration, request
	// and response sizes (rpc.client.duration and friends).
	Meters metric.MeterProvider
}

// Retry says how calls ride out a server, or its store, that is away: a
// refused or cut connection, an Unavailable answer (a server or database
// restarting). Only what cannot happen twice is tried again: reads, calls
// that never reached the server, and calls with a request id
// (SubmitParams.RequestID, Rerun's requestID; a SubmitBatch call when
// each of its jobs has one), which the server answers with what the
// first call did. Streams of events resume on their own
// (Reconnect) and are not affected.
type Retry struct {
	// For is how long a call keeps trying, in all, with backoff.
	For time.Duration
	// OnRetry, if set, is told before each pause why the call failed and
	// how long it waits.
	OnRetry func(err error, wait time.Duration)
}

// APIKeyFromEnv returns $SPOOL_API_KEY ("" when it is unset).
func APIKeyFromEnv() string { return strings.TrimSpace(os.Getenv("SPOOL_API_KEY")) }

// New returns a client for the server cfg names. It makes no call: a
// server that is away is noticed by the first one.
func New(cfg Config) (*Client, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := wire.Options{HTTPClient: cfg.HTTPClient, GRPC: cfg.GRPC, APIKey: strings.TrimSpace(cfg.APIKey), CAFile: cfg.CAFile, Retry: cfg.Retry.For}
	if o.Retry > 0 {
		onRetry := cfg.Retry.OnRetry
		o.OnRetry = func(err error, wait time.Duration) {
			log.Info("spool: call failed; trying again", "error", err, "wait", wait)
			if onRetry != nil {
				onRetry(err, wait)
			}
		}
	}
	if cfg.Meters != nil {
		rpcMetrics, err := otelconnect.NewInterceptor(otelconnect.WithMeterProvider(cfg.Meters), otelconnect.WithoutTracing())
		if err != nil {
			return nil, fmt.Errorf("client metrics: %w", err)
		}
		o.Interceptors = append(o.Interceptors, rpcMetrics)
	}
	hc, err := wire.HTTPClient(o)
	if err != nil {
		return nil, err
	}
	o.HTTPClient = hc
	rpc, err := wire.Dial(cfg.URL, o)
	if err != nil {
		return nil, err
	}
	// Event streams carry events as they are stored, compressed already.
	plain := o
	plain.PlainResponses = true
	streams, _ := wire.Dial(cfg.URL, plain)
	keys, _ := wire.DialKeys(cfg.URL, o)
	sc, _ := wire.DialScatters(cfg.URL, o)
	ing, _ := wire.DialIngest(cfg.URL, o)
	qs, _ := wire.DialQueues(cfg.URL, o)
	sched, _ := wire.DialSchedules(cfg.URL, o)
	base, _ := wire.BaseURL(cfg.URL)
	rest, err := wire.NewREST(cfg.URL, o)
	if err != nil {
		return nil, err
	}
	return &Client{rpc: rpc, streams: streams, keys: keys, sc: sc, ing: ing, qs: qs, sched: sched, rest: rest, url: base, log: log, files: &artifact.Remote{REST: rest}}, nil
}

// URL is the server's address.
func (c *Client) URL() string { return c.url }

// SubmitParams describes a job to submit. Set Argv or Script.
type SubmitParams struct {
	// Queue is the job's queue ("": "default").
	Queue string
	// Argv is the program and its arguments, run directly (no shell).
	Argv []string
	// Script is run with /bin/sh -c.
	Script string
	// Env is added to the environment the worker gives jobs.
	Env map[string]string
	// WorkingDir is where the command runs: inside the checkout when
	// Repository is set, else inside the job's own directory.
	WorkingDir string
	// Timeout stops the command after this long (0: no limit).
	Timeout time.Duration
	// Repository is a git repository cloned before the command runs, at
	// Ref (its HEAD when empty).
	Repository string
	Ref        string
	// RequestID makes the submission idempotent: a second Submit with the
	// same id returns the job the first one made.
	RequestID string
	// MaxAttempts bounds how often the job may lose its worker (a worker
	// that died or vanished) before it fails (0: the server's default).
	MaxAttempts int
	// Retries is how often a failing command (non-zero exit, timeout, could
	// not start) is run again, with exponential backoff (0: never).
	Retries int
	// Stdin is given to the command on its standard input. When Argv,
	// Script, Env and Stdin together hold more than 256 KiB, the job
	// record's limit, Submit uploads Stdin first (the server needs a blob
	// store: a server on AWS needs blobs.s3.bucket).
	Stdin []byte
	// StdinFrom, instead of Stdin, is read to its end for the command's
	// standard input: what fits in the job record goes inline, anything
	// larger is streamed to the server (up to its jobs.max_stdin_bytes,
	// 1 GiB unless set) without being held in memory.
	StdinFrom io.Reader
	// PTY runs the command on a pseudo-terminal, so tools that colour
	// their output only on a terminal keep their colours. Its stdout and
	// stderr are then one stream, recorded as stdout. Stdin, if given, is
	// still read as a file (as `cmd < file` at a terminal); without it
	// the command's input is the terminal, where it finds end of input.
	PTY bool
	// Batching is how the job's output is to be batched, instead of the
	// server's way: a short FlushInterval (it may be under a second) for
	// output someone wants to see at once, a small MaxBatchSize for finer
	// seeks. Zero fields take the server's. The server refuses, with
	// spool.ErrInvalidArgument naming the bound, what is beyond the bounds
	// it sets for jobs.
	Batching spool.Batching
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

	// RunAt queues the job at this time, not before: until then it is
	// spool.Scheduled. A time past is now; at most a year ahead.
	RunAt time.Time
	// RunIn queues the job this long after the server receives it (the
	// server's clock decides, not the caller's). Not with RunAt.
	RunIn time.Duration
	// Priority is 1 (first) to 4 (0: 2): of a queue's queued jobs,
	// workers are handed the highest priority first.
	Priority int
	// After are jobs that must succeed before this one is queued (at
	// most 100, each existing): until then it is spool.Scheduled, and when
	// one of them fails or is cancelled, so is this one.
	After []string
	// Notify are URLs (http or https, at most 5) POSTed a signed JSON
	// document when the job ends, besides its queue's own.
	Notify []string
	// Artifacts are globs (** for any depth) of files, relative to the
	// directory the command runs in, that the worker keeps as the job's
	// artifacts once the command ends, whatever its exit code (at most
	// 100; see ListArtifacts). The job's output ends with what was kept.
	Artifacts []string
}

// params is what the job runs, with the names of its secrets (their
// values travel beside the params).
func (s SubmitParams) params() spool.JobParams {
	return spool.JobParams{Argv: s.Argv, Script: s.Script, Env: s.Env, WorkingDir: s.WorkingDir, Timeout: s.Timeout,
		Repository: s.Repository, Ref: s.Ref, Stdin: s.Stdin, PTY: s.PTY, Batching: s.Batching, SecretNames: slices.Sorted(maps.Keys(s.Secrets)),
		Artifacts: s.Artifacts}
}

// Submit enqueues a job. deduplicated is true when s.RequestID was used
// before and job is the one created then.
func (c *Client) Submit(ctx context.Context, s SubmitParams) (job *spool.Job, deduplicated bool, err error) {
	req, err := s.request()
	if err != nil {
		return nil, false, err
	}
	if err := c.placeStdin(ctx, s.StdinFrom, req.GetParams()); err != nil {
		return nil, false, err
	}
	resp, err := c.rpc.EnqueueJob(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, false, wrap(err)
	}
	return convert.Job(resp.Msg.GetJob()), resp.Msg.GetDeduplicated(), nil
}

// request is the job's enqueue request, once what the wire cannot carry
// is refused.
func (s SubmitParams) request() (*spoolv1.EnqueueJobRequest, error) {
	if err := errors.Join(fits("MaxAttempts", s.MaxAttempts), fits("Retries", s.Retries), fits("Priority", s.Priority)); err != nil {
		return nil, err
	}
	if !s.RunAt.IsZero() && s.RunIn != 0 {
		return nil, apierr.Invalid("give RunAt or RunIn, not both: RunAt is a time, RunIn a delay from when the server receives the job")
	}
	for name, v := range s.Secrets {
		if !utf8.ValidString(v) {
			// The wire carries text; say which secret is not, not what it is.
			return nil, apierr.Invalid("secret %s is not UTF-8 text: give it encoded (base64, say) and decode it in the job", name)
		}
	}
	return &spoolv1.EnqueueJobRequest{
		Queue: s.Queue, Params: convert.ParamsProto(s.params()), RequestId: s.RequestID, MaxAttempts: int32(s.MaxAttempts), Retries: int32(s.Retries),
		RejectReason: s.RejectReason, Secrets: s.Secrets,
		RunAt: stamp(s.RunAt), RunIn: delay(s.RunIn), Priority: int32(s.Priority), After: s.After, Notify: s.Notify,
	}, nil
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (*spool.Job, error) {
	resp, err := c.rpc.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: id}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Job(resp.Msg.GetJob()), nil
}

// Cancel cancels a job: a queued job never runs, a running one is stopped
// by its worker at its next heartbeat. reason is recorded in its result.
func (c *Client) Cancel(ctx context.Context, id, reason string) (*spool.Job, error) {
	resp, err := c.rpc.CancelJob(ctx, connect.NewRequest(&spoolv1.CancelJobRequest{JobId: id, Reason: reason}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Job(resp.Msg.GetJob()), nil
}

// Rerun enqueues a finished job again as a new job with the same queue,
// command and budgets, and returns the new job; its RerunOf names the old
// one. A job that has not finished is spool.ErrConflict. requestID, when
// set, makes a repeat return the job the first call made.
func (c *Client) Rerun(ctx context.Context, id, requestID string) (*spool.Job, error) {
	resp, err := c.rpc.RerunJob(ctx, connect.NewRequest(&spoolv1.RerunJobRequest{JobId: id, RequestId: requestID}))
	if err != nil {
		return nil, wrap(err)
	}
	return convert.Job(resp.Msg.GetJob()), nil
}

// Delete removes a finished job and its whole log from the server. A job
// still queued or running is spool.ErrConflict: cancel it first. Needs an
// admin key.
func (c *Client) Delete(ctx context.Context, id string) error {
	_, err := c.rpc.DeleteJob(ctx, connect.NewRequest(&spoolv1.DeleteJobRequest{JobId: id}))
	return wrap(err)
}

// ListParams says which jobs Jobs and JobsPage list, and from where.
type ListParams struct {
	// Queue lists only the jobs of this queue ("": every queue).
	Queue string
	// States lists only the jobs in one of these states (none: every
	// state).
	States []spool.State
	// Source lists only the external jobs of this source.
	Source string
	// Cursor is where the listing starts: the next cursor of an earlier
	// page ("": the newest job).
	Cursor string
	// PageSize is the most jobs one call to the server returns (0: 50; at
	// most 1000).
	PageSize int
}

// JobsPage returns one page of jobs matching p, newest first, and the
// cursor of the next page ("" after the last). A page may hold fewer jobs
// than p.PageSize, even none, and still have a next one: the server
// bounds the work of one call.
func (c *Client) JobsPage(ctx context.Context, p ListParams) (jobs []*spool.Job, nextCursor string, err error) {
	if err := fits("PageSize", p.PageSize); err != nil {
		return nil, "", err
	}
	resp, err := c.rpc.ListJobs(ctx, connect.NewRequest(&spoolv1.ListJobsRequest{
		Queue: p.Queue, States: convert.StatesProto(p.States), Source: p.Source, PageSize: int32(p.PageSize), Cursor: p.Cursor}))
	if err != nil {
		return nil, "", wrap(err)
	}
	return convert.Jobs(resp.Msg.GetJobs()), resp.Msg.GetNextCursor(), nil
}

// Jobs yields every job matching p, newest first, fetching pages of
// p.PageSize as it goes (from p.Cursor, if set). An error ends the
// iteration.
func (c *Client) Jobs(ctx context.Context, p ListParams) iter.Seq2[*spool.Job, error] {
	return func(yield func(*spool.Job, error) bool) {
		for {
			jobs, next, err := c.JobsPage(ctx, p)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, j := range jobs {
				if !yield(j, nil) {
					return
				}
			}
			if p.Cursor = next; p.Cursor == "" {
				return
			}
		}
	}
}

// stamp is t on the wire, unset for the zero time.
func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// delay is d on the wire, unset for 0; a negative delay is sent for the
// server to refuse.
func delay(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// fits refuses a number the wire carries in 32 bits and v does not fit
// in: sent as it is, it would wrap around and mean another number.
func fits(name string, v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return apierr.Invalid("%s: %d does not fit in 32 bits", name, v)
	}
	return nil
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
