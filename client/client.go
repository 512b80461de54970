// Package client is the Go SDK for spool: submit jobs, look them up, cancel
// them, and (see Events and EventStream) replay and follow their output.
//
//	c, err := client.New(client.URLFromEnv())
//	job, _, err := c.Submit(ctx, client.Submission{Argv: []string{"make", "test"}})
//
// Client embeds the generated JobService client, so every RPC is available
// as is; the methods here add defaults, paging and streaming conveniences.
package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/wirezstd"
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

// Client talks to one spool server.
type Client struct {
	spoolv1connect.JobServiceClient
	url string
}

type options struct {
	httpClient *http.Client
	grpc       bool
	compress   bool
}

// Option configures New.
type Option func(*options)

// WithHTTPClient uses h for requests.
func WithHTTPClient(h *http.Client) Option { return func(o *options) { o.httpClient = h } }

// WithGRPC speaks gRPC (over HTTP/2 without TLS for http:// URLs) instead of
// the Connect protocol.
func WithGRPC() Option { return func(o *options) { o.grpc = true } }

// WithCompressedRequests sends requests of 1 KiB or more compressed with
// zstd: what a worker publishing batches of output wants. (Responses may be
// zstd or gzip either way.)
func WithCompressedRequests() Option { return func(o *options) { o.compress = true } }

// New returns a client for the server at baseURL (http://host:port).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server address %q must look like http://host:port", baseURL)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{Transport: newTransport(o.grpc)}
	}
	copts := []connect.ClientOption{wirezstd.Client()}
	if o.grpc {
		copts = append(copts, connect.WithGRPC())
	}
	if o.compress {
		copts = append(copts, connect.WithSendCompression(wirezstd.Name), connect.WithCompressMinBytes(1024))
	}
	base := strings.TrimRight(baseURL, "/")
	return &Client{JobServiceClient: spoolv1connect.NewJobServiceClient(o.httpClient, base, copts...), url: base}, nil
}

// newTransport is a pooled transport without an overall timeout (streams
// last as long as jobs); gRPC needs HTTP/2, which over plain http is h2c.
func newTransport(h2c bool) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if h2c {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		p.SetHTTP2(true)
		t.Protocols = p
	}
	return t
}

// URL is the server's address.
func (c *Client) URL() string { return c.url }

// Submission describes a job to submit. Set Argv or Script.
type Submission struct {
	Queue       string
	Argv        []string
	Script      string
	Env         map[string]string
	WorkingDir  string
	Timeout     time.Duration
	Repository  string
	Ref         string
	RequestID   string
	MaxAttempts int32
}

// Params is the submission's JobParams.
func (s Submission) Params() *spoolv1.JobParams {
	p := &spoolv1.JobParams{Argv: s.Argv, Script: s.Script, Env: s.Env, WorkingDir: s.WorkingDir, RepositoryUrl: s.Repository, Ref: s.Ref}
	if s.Timeout > 0 {
		p.Timeout = durationpb.New(s.Timeout)
	}
	return p
}

// Submit enqueues a job. deduplicated is true when s.RequestID was used
// before and job is the one created then.
func (c *Client) Submit(ctx context.Context, s Submission) (job *spoolv1.Job, deduplicated bool, err error) {
	resp, err := c.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{
		Queue: s.Queue, Params: s.Params(), RequestId: s.RequestID, MaxAttempts: s.MaxAttempts,
	}))
	if err != nil {
		return nil, false, err
	}
	return resp.Msg.GetJob(), resp.Msg.GetDeduplicated(), nil
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, id string) (*spoolv1.Job, error) {
	resp, err := c.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: id}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetJob(), nil
}

// Cancel cancels a job (see CancelJob).
func (c *Client) Cancel(ctx context.Context, id, reason string) (*spoolv1.Job, error) {
	resp, err := c.CancelJob(ctx, connect.NewRequest(&spoolv1.CancelJobRequest{JobId: id, Reason: reason}))
	if err != nil {
		return nil, err
	}
	return resp.Msg.GetJob(), nil
}

// Jobs yields every job matching req, newest first, fetching pages of
// req.PageSize as it goes (req.Cursor, if set, is where it starts).
func (c *Client) Jobs(ctx context.Context, req *spoolv1.ListJobsRequest) iter.Seq2[*spoolv1.Job, error] {
	return func(yield func(*spoolv1.Job, error) bool) {
		cursor := req.GetCursor()
		for {
			r := &spoolv1.ListJobsRequest{Queue: req.GetQueue(), States: req.GetStates(), PageSize: req.GetPageSize(), Cursor: cursor}
			resp, err := c.ListJobs(ctx, connect.NewRequest(r))
			if err != nil {
				yield(nil, err)
				return
			}
			for _, j := range resp.Msg.GetJobs() {
				if !yield(j, nil) {
					return
				}
			}
			if cursor = resp.Msg.GetNextCursor(); cursor == "" {
				return
			}
		}
	}
}

// IsUnavailable reports whether err means the server could not be reached
// (or is restarting), as opposed to refusing the request.
func IsUnavailable(err error) bool {
	var ne net.Error
	return connect.CodeOf(err) == connect.CodeUnavailable || errors.As(err, &ne)
}
