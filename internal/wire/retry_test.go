package wire

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
)

// awayServer answers each call Unavailable until it has been called away
// times, then answers it; it counts the calls it got.
type awayServer struct {
	spoolv1connect.UnimplementedJobServiceHandler
	away  int32
	calls atomic.Int32
}

func (s *awayServer) answer() error {
	if s.calls.Add(1) <= s.away {
		return connect.NewError(connect.CodeUnavailable, errors.New("postgres: the database cannot be reached now; retry"))
	}
	return nil
}

func (s *awayServer) GetJob(context.Context, *connect.Request[spoolv1.GetJobRequest]) (*connect.Response[spoolv1.GetJobResponse], error) {
	return connect.NewResponse(&spoolv1.GetJobResponse{Job: &spoolv1.Job{JobId: "j"}}), s.answer()
}

func (s *awayServer) EnqueueJob(context.Context, *connect.Request[spoolv1.EnqueueJobRequest]) (*connect.Response[spoolv1.EnqueueJobResponse], error) {
	return connect.NewResponse(&spoolv1.EnqueueJobResponse{Job: &spoolv1.Job{JobId: "j"}}), s.answer()
}

func (s *awayServer) EnqueueJobs(context.Context, *connect.Request[spoolv1.EnqueueJobsRequest]) (*connect.Response[spoolv1.EnqueueJobsResponse], error) {
	return connect.NewResponse(&spoolv1.EnqueueJobsResponse{}), s.answer()
}

func (s *awayServer) CancelJob(context.Context, *connect.Request[spoolv1.CancelJobRequest]) (*connect.Response[spoolv1.CancelJobResponse], error) {
	return connect.NewResponse(&spoolv1.CancelJobResponse{Job: &spoolv1.Job{JobId: "j"}}), s.answer()
}

// serve serves h on a new port of 127.0.0.1 until the test ends, and
// returns its URL.
func serve(t *testing.T, h *awayServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, h)
}

func serveOn(t *testing.T, ln net.Listener, h *awayServer) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(spoolv1connect.NewJobServiceHandler(h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// Calls that cannot do anything twice are tried again while the server
// answers Unavailable; the others are not.
func TestRetryOnlyWhatCannotHappenTwice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		call      func(context.Context, spoolv1connect.JobServiceClient) error
		wantCalls int32
	}{
		{"a read", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.GetJob(ctx, connect.NewRequest(&spoolv1.GetJobRequest{JobId: "j"}))
			return err
		}, 3},
		{"a submit with a request id", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{RequestId: "r1"}))
			return err
		}, 3},
		{"a submit without one", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.EnqueueJob(ctx, connect.NewRequest(&spoolv1.EnqueueJobRequest{}))
			return err
		}, 1},
		{"a batch whose jobs all have request ids", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: []*spoolv1.EnqueueJobRequest{{RequestId: "r1"}, {RequestId: "r2"}}}))
			return err
		}, 3},
		{"a batch with a job without one", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.EnqueueJobs(ctx, connect.NewRequest(&spoolv1.EnqueueJobsRequest{Jobs: []*spoolv1.EnqueueJobRequest{{RequestId: "r1"}, {}}}))
			return err
		}, 1},
		{"a cancel", func(ctx context.Context, c spoolv1connect.JobServiceClient) error {
			_, err := c.CancelJob(ctx, connect.NewRequest(&spoolv1.CancelJobRequest{JobId: "j"}))
			return err
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &awayServer{away: 2}
			c, err := Dial(serve(t, h), Options{Retry: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(context.Background(), c)
			if got := h.calls.Load(); got != tc.wantCalls {
				t.Fatalf("the server got %d calls (the call returned %v), want %d", got, err, tc.wantCalls)
			}
			if tc.wantCalls > h.away && err != nil {
				t.Fatalf("retried call failed: %v", err)
			}
			if tc.wantCalls <= h.away && connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("call not retried returned %v, want the Unavailable answer", err)
			}
		})
	}
}

// A call that could not connect at all reached nobody: it is tried again,
// whatever it is, until the server is there.
func TestRetryUntilTheServerListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused until the server listens again
	refused := make(chan struct{}, 100)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			refused <- struct{}{}
		}
		return conn, err
	}
	c, err := Dial("http://"+addr, Options{Retry: 20 * time.Second, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	h := &awayServer{}
	done := make(chan error, 1)
	go func() {
		_, err := c.CancelJob(context.Background(), connect.NewRequest(&spoolv1.CancelJobRequest{JobId: "j"}))
		done <- err
	}()
	<-refused
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	serveOn(t, ln, h)
	if err := <-done; err != nil || h.calls.Load() != 1 {
		t.Fatalf("cancel after the server came: %v, %d calls; want success in 1", err, h.calls.Load())
	}
}

// Without Retry, a call fails at the first Unavailable.
func TestNoRetryByDefault(t *testing.T) {
	h := &awayServer{away: 1}
	c, err := Dial(serve(t, h), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetJob(context.Background(), connect.NewRequest(&spoolv1.GetJobRequest{JobId: "j"}))
	if connect.CodeOf(err) != connect.CodeUnavailable || h.calls.Load() != 1 {
		t.Fatalf("GetJob: %v after %d calls, want Unavailable after 1", err, h.calls.Load())
	}
}
