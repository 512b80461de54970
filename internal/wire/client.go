// Package wire is how spool's programs reach a server: the Connect client
// with the transport, protocol and compression every caller wants, and the
// zstd compression both ends register. The public client, the worker and
// the test harness all dial through it, so they speak to a server the same
// way.
package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// Options say how to talk to a server.
type Options struct {
	// HTTPClient makes the requests (nil: a pooled client without an
	// overall timeout, since streams last as long as jobs).
	HTTPClient *http.Client
	// GRPC speaks gRPC (over HTTP/2 without TLS for http:// URLs) instead
	// of the Connect protocol.
	GRPC bool
	// Compress sends requests of 1 KiB or more compressed with zstd: what a
	// worker publishing batches of output wants.
	Compress bool
	// PlainResponses asks for responses as they are, not compressed: for
	// calls whose messages are compressed already (stored events), where
	// compressing them again costs both ends and saves nothing.
	PlainResponses bool
	// APIKey is sent with every call (Authorization: Bearer KEY).
	APIKey string
	// CAFile, for https:// servers with a certificate of a private CA, is
	// that CA's certificate (PEM). Empty: the system's roots.
	CAFile string
	// Retry, when set, makes a unary call that finds the server or its
	// store away try again, with backoff, for up to this long, where that
	// cannot do anything twice (see retrying).
	Retry time.Duration
	// OnRetry, if set, hears why a call failed and how long it waits
	// before each of those tries.
	OnRetry func(err error, wait time.Duration)
	// Interceptors see every call, each try of a retried one included
	// (metrics, say).
	Interceptors []connect.Interceptor
}

// BaseURL checks a server address and returns it without a trailing slash.
// spool serves its API at the root of its address, so an address with a
// path (or a query) is refused: requests under it would reach no API.
func BaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server address %q must look like http://host:port", raw)
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("server address %q has more than a host and port: spool's API is at the root of the server; use %s://%s", raw, u.Scheme, u.Host)
	}
	return strings.TrimRight(raw, "/"), nil
}

// Dial returns a JobService client for the server at baseURL.
func Dial(baseURL string, o Options) (spoolv1connect.JobServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewJobServiceClient)
}

// DialKeys returns a KeyService client for the server at baseURL.
func DialKeys(baseURL string, o Options) (spoolv1connect.KeyServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewKeyServiceClient)
}

// DialScatters returns a ScatterService client for the server at baseURL.
func DialScatters(baseURL string, o Options) (spoolv1connect.ScatterServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewScatterServiceClient)
}

// DialIngest returns an IngestService client for the server at baseURL.
func DialIngest(baseURL string, o Options) (spoolv1connect.IngestServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewIngestServiceClient)
}

// DialQueues returns a QueueService client for baseURL.
func DialQueues(baseURL string, o Options) (spoolv1connect.QueueServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewQueueServiceClient)
}

// DialSchedules returns a ScheduleService client for baseURL.
func DialSchedules(baseURL string, o Options) (spoolv1connect.ScheduleServiceClient, error) {
	return dial(baseURL, o, spoolv1connect.NewScheduleServiceClient)
}

// dial makes a client of one of spool's services with newClient.
func dial[T any](baseURL string, o Options, newClient func(connect.HTTPClient, string, ...connect.ClientOption) T) (T, error) {
	hc, base, opts, err := connection(baseURL, o)
	if err != nil {
		var zero T
		return zero, err
	}
	return newClient(hc, base, opts...), nil
}

// connection is what every client of a server needs: the HTTP client, the
// base URL and the Connect options.
func connection(baseURL string, o Options) (*http.Client, string, []connect.ClientOption, error) {
	base, err := BaseURL(baseURL)
	if err != nil {
		return nil, "", nil, err
	}
	hc, err := HTTPClient(o)
	if err != nil {
		return nil, "", nil, err
	}
	opts := []connect.ClientOption{ZstdClient()}
	if o.PlainResponses {
		opts = []connect.ClientOption{connect.WithAcceptCompression("gzip", nil, nil)}
	}
	if o.GRPC {
		opts = append(opts, connect.WithGRPC())
	}
	if o.Compress {
		opts = append(opts, connect.WithSendCompression(Name), connect.WithCompressMinBytes(1024))
	}
	if len(o.Interceptors) > 0 {
		opts = append(opts, connect.WithInterceptors(o.Interceptors...))
	}
	if o.Retry > 0 {
		// Before the key, so every try carries it.
		opts = append(opts, connect.WithInterceptors(retrying{budget: o.Retry, onRetry: o.OnRetry}))
	}
	if o.APIKey != "" {
		opts = append(opts, connect.WithInterceptors(bearer(o.APIKey)))
	}
	return hc, base, opts, nil
}

// HTTPClient is o.HTTPClient, or a new one as Options describe: dialing
// several services with it shares its connections.
func HTTPClient(o Options) (*http.Client, error) {
	if o.HTTPClient != nil {
		return o.HTTPClient, nil
	}
	t, err := newTransport(o.GRPC, o.CAFile)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}

// newTransport is a pooled transport without an overall timeout; gRPC
// needs HTTP/2, which over plain http is h2c. caFile, when set, is the only
// CA trusted for https.
func newTransport(h2c bool, caFile string) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA certificate %s holds no PEM certificate", caFile)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if h2c {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		p.SetHTTP2(true)
		t.Protocols = p
	}
	return t, nil
}

// bearer sends key with every call.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
