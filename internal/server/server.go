// Package server is spool's server: the JobService API (Connect, so gRPC,
// gRPC-Web and JSON on one port) over a JobStore, with the background work
// the store needs (settling expired leases) and a graceful shutdown.
package server

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"

	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/internal/token"
	"github.com/spool-run/spool/internal/webui"
	"github.com/spool-run/spool/internal/wirezstd"
)

// maxRequestBytes bounds a request body: a PublishEvents call carries at
// most a few batches, each at most max_batch_bytes (≤ 64 MiB by config).
const maxRequestBytes = 128 << 20

// reapInterval is how often expired leases are settled.
const reapInterval = time.Second

// Server serves the API.
type Server struct {
	cfg     *config.Config
	store   store.JobStore
	log     *slog.Logger
	svc     *Service
	handler http.Handler
	metrics *telemetry.Metrics
	// waitStreams waits for the WebSocket log streams, which Shutdown does
	// not track (their connections are hijacked).
	waitStreams func()

	drainOnce sync.Once
	drain     chan struct{} // closed when shutdown starts
}

// New returns a server for st. It does not take ownership of st.
func New(cfg *config.Config, st store.JobStore, signer *token.Signer, log *slog.Logger) *Server {
	s := &Server{cfg: cfg, store: st, log: log, drain: make(chan struct{})}
	s.svc = NewService(st, signer, cfg, log)
	s.svc.drain = s.drain
	// Only an invalid option makes these fail: a programming error.
	s.metrics = telemetry.Must(telemetry.New())
	s.svc.metrics = newServerMetrics(s.metrics.Meter("server"), &s.svc.watchers)
	rpcMetrics := telemetry.Must(otelconnect.NewInterceptor(otelconnect.WithMeterProvider(s.metrics.Provider()),
		otelconnect.WithoutTracing(), otelconnect.WithoutServerPeerAttributes()))

	mux := http.NewServeMux()
	opts := []connect.HandlerOption{
		connect.WithReadMaxBytes(maxRequestBytes),
		connect.WithCompressMinBytes(1024),
		wirezstd.Handler(),
		connect.WithInterceptors(rpcMetrics, logCalls(log)),
	}
	mux.Handle(spoolv1connect.NewJobServiceHandler(s.svc, opts...))
	reflector := grpcreflect.NewStaticReflector(spoolv1connect.JobServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	s.waitStreams = httpapi.Register(mux, httpapi.Options{Store: st, Log: log, Drain: s.drain, Watch: s.svc.watchers.add})
	mux.Handle("/", webui.Handler())
	mux.Handle("GET /metrics", s.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	s.handler = mux
	return s
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx is done, then shuts down: long polls and
// streams are told to end at once (clients reconnect and resume where they
// were), other requests get up to the configured grace period to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // gRPC without TLS (h2c)
	hs := &http.Server{
		Handler:           s.handler,
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	reapCtx, stopReaper := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.reap(reapCtx) })
	defer func() {
		stopReaper()
		wg.Wait()
	}()

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "grace", time.Duration(s.cfg.Server.ShutdownGraceSeconds)*time.Second)
	s.Drain()
	grace, cancel := context.WithTimeout(context.Background(), time.Duration(s.cfg.Server.ShutdownGraceSeconds)*time.Second)
	defer cancel()
	err := hs.Shutdown(grace)
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("requests still running after the grace period; closing them")
		err = hs.Close()
	}
	// The streams were told to end by Drain; wait for them (within the
	// grace) so none is reading the store when the caller closes it.
	streamsDone := make(chan struct{})
	go func() { s.waitStreams(); close(streamsDone) }()
	select {
	case <-streamsDone:
	case <-grace.Done():
		s.log.Warn("WebSocket streams still running after the grace period")
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// Drain tells long polls and streams to end now.
func (s *Server) Drain() {
	s.drainOnce.Do(func() { close(s.drain) })
}

// reap settles expired leases until ctx ends, so a job whose worker died
// shows as queued again (or failed) without waiting for a worker to poll.
func (s *Server) reap(ctx context.Context) {
	for {
		// Jitter keeps replicas from sweeping in lockstep.
		t := time.NewTimer(reapInterval + rand.N(reapInterval/4))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n, err := s.store.ExpireLeases(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("settling expired leases failed", "error", err)
		case n > 0:
			s.log.Info("settled expired leases", "jobs", n)
			s.svc.metrics.settled.Add(ctx, int64(n))
		}
	}
}

// logCalls logs every unary call at debug level, and failures that are the
// server's fault at warn.
func logCalls(log *slog.Logger) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			start := time.Now()
			resp, err := next(ctx, req)
			code := "ok"
			if err != nil {
				code = connect.CodeOf(err).String()
			}
			log.DebugContext(ctx, "call", "procedure", req.Spec().Procedure, "code", code, "duration", time.Since(start), "peer", req.Peer().Addr)
			return resp, err
		}
	}
}
