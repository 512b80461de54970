// Package assembly assembles a spool server: it opens the configured store,
// builds the service core over it, and serves every entrance on one port
// (the Connect API, the REST API and its WebSocket, the web UI, /metrics
// and /healthz), with the background chores beside them (package
// maintenance: the lease reaper, retention, the idle sweep of external
// jobs, the scatter driver) and a graceful shutdown.
// It holds no rules of its own: those are the core's (package service).
package assembly

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/connectapi"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/maintenance"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/internal/setting"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/store/storemetrics"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/internal/token"
	"github.com/spool-run/spool/internal/webui"
)

// Server is a running spool server.
type Server struct {
	cfg    *config.Config
	log    *slog.Logger
	meters metric.MeterProvider // the program's own; nil: the server's registry, on /metrics
	store  store.JobStore
	blobs  blob.Store // files kept beside jobs (nil: none configured)
	// scatterS3 reads scatters' items from users' buckets.
	scatterS3 *s3items.Client
	svc       *service.Service
	doors     *doors
	hs        *http.Server
	url       string
	// waitStreams waits for the WebSocket log streams, which Shutdown does
	// not track (their connections are hijacked).
	waitStreams func()

	// meter makes the instruments of the core and the chores.
	meter metric.Meter
	// outage is what the core saw of the store being away, for the
	// reaper.
	outage *maintenance.Outage
	// chores are the background services, started once the core is and
	// stopped before the store closes.
	chores []maintenance.Service
	served chan error // hs.Serve's result

	stopOnce sync.Once
	stopped  chan struct{} // closed when Stop has finished
	stopErr  error
}

// Options are what a server is given beside its configuration.
type Options struct {
	// Log receives the server's structured logs (nil: discarded).
	Log *slog.Logger
	// Meters makes the server's metrics. nil: the server keeps its own,
	// with the Go runtime's and the process's, and serves them on
	// /metrics; otherwise /metrics answers 404, since the program that
	// runs the server exports its metrics its own way.
	Meters metric.MeterProvider
}

// Start opens the configured store and token key, listens on
// cfg.Server.Addr ("127.0.0.1:0" picks a free port) and serves until Stop is
// called or ctx ends (then it stops within the configured grace period).
func Start(ctx context.Context, cfg *config.Config, o Options) (*Server, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := makeDirs(cfg, log); err != nil {
		return nil, err
	}
	signer, sealer, err := tokenKeys(cfg)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := loadTLS(cfg.Server.TLS)
	if err != nil {
		return nil, err
	}
	st, err := backends.Open(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	blobs, err := openBlobs(ctx, cfg, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	scatterS3, err := openScatterS3(ctx, cfg)
	if err != nil {
		st.Close()
		if blobs != nil {
			blobs.Close()
		}
		return nil, err
	}
	closeStores := func() {
		st.Close()
		if blobs != nil {
			blobs.Close()
		}
	}
	dropStartupGarbage()
	if err := graceLeases(ctx, cfg, st, log); err != nil {
		closeStores()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		closeStores()
		return nil, setting.Listen("server.addr", cfg.Server.Addr, err)
	}
	scheme := "http"
	if cfg.Server.TLS.Enabled() {
		scheme = "https"
	}
	s := &Server{cfg: cfg, log: log, meters: o.Meters, store: st, blobs: blobs, scatterS3: scatterS3, url: scheme + "://" + ln.Addr().String(), served: make(chan error, 1), stopped: make(chan struct{}),
		outage: maintenance.NewOutage(storekit.Now())}
	s.hs = &http.Server{
		Handler:           s.routes(signer, sealer),
		Protocols:         protocols(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         tlsConfig,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if err := s.admit(ctx); err != nil {
		ln.Close()
		closeStores()
		return nil, err
	}
	s.chores = s.newChores()
	for _, c := range s.chores {
		// A chore lives as long as the server, not as ctx: Stop ends it.
		if err := c.Start(context.Background()); err != nil {
			s.stopChores()
			ln.Close()
			closeStores()
			return nil, err
		}
	}
	go func() {
		if tlsConfig != nil {
			s.served <- s.hs.ServeTLS(ln, "", "")
			return
		}
		s.served <- s.hs.Serve(ln)
	}()
	context.AfterFunc(ctx, func() { _ = s.Stop(context.Background()) })
	return s, nil
}

// routes builds the core and mounts every entrance on one mux.
func (s *Server) routes(signer *token.Signer, sealer *seal.Sealer) http.Handler {
	meters, scrape := s.metrics()
	s.meter = meters.Meter("spool/server")
	// Everything after this (the core, the chores) calls the store
	// through its measurements.
	s.store = storemetrics.Wrap(s.store, s.cfg.Store.Type, s.meter)
	s.svc = service.New(service.Options{Store: s.store, Signer: signer, Sealer: sealer, Config: s.cfg, Log: s.log, Meter: s.meter, Outages: s.outage, Blobs: s.blobs, ScatterS3: s.scatterS3})
	// Only an invalid option makes this fail: a programming error.
	rpcMetrics := telemetry.Must(otelconnect.NewInterceptor(otelconnect.WithMeterProvider(meters),
		otelconnect.WithoutTracing(), otelconnect.WithoutServerPeerAttributes()))

	mux := http.NewServeMux()
	s.doors = newDoors(mux)
	s.doors.refuseWith(connectapi.Refuse,
		connectapi.Register(mux, s.svc, connectapi.Options{Log: s.log, Interceptors: []connect.Interceptor{rpcMetrics}})...)
	s.waitStreams = httpapi.Register(mux, httpapi.Options{Service: s.svc, Log: s.log, CORSOrigins: s.cfg.Server.CORSOrigins})
	for _, p := range httpapi.Routes() {
		if fn := httpapi.Refusal(p); fn != nil {
			s.doors.refuseWith(fn, p)
		}
	}
	s.doors.open(httpapi.OpenRoutes()...)
	// The web UI is static pages and their assets, for any method: it
	// reads no body and shows nothing of jobs until its scripts call the
	// API with the session cookie.
	mux.Handle("/", webui.Handler())
	s.doors.open("/")
	mux.Handle("GET /metrics", s.metricsFor(scrape))
	// /healthz says the process serves (a liveness probe: restart it if
	// not); /readyz says it can do its work (a readiness probe: send it no
	// calls while its store does not answer). docs/scaling.md shows both
	// as Kubernetes probes.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	s.doors.open("GET /healthz", "GET /readyz")
	return s.guard(mux)
}

// metrics is where the server's instruments are made and what /metrics
// serves: the program's provider and a 404 saying where the metrics went,
// or the server's own registry (one per server, so that servers in one
// process do not mix their figures) in the Prometheus text format.
func (s *Server) metrics() (metric.MeterProvider, http.Handler) {
	if s.meters != nil {
		return s.meters, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "this server's metrics go to the program that runs it (its Meters), not to /metrics", http.StatusNotFound)
		})
	}
	// Only an invalid option makes this fail: a programming error.
	m := telemetry.Must(telemetry.New())
	return m.Provider(), m.Handler()
}

// loadTLS reads the server's certificate (nil when TLS is off), at start:
// a missing or mismatched file is an error then, not a server that never
// answers.
func loadTLS(t config.TLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	for name, path := range map[string]string{"server.tls.cert_file": t.CertFile, "server.tls.key_file": t.KeyFile} {
		if _, err := os.ReadFile(path); err != nil {
			return nil, setting.File(name, path, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %s and %s are not a certificate and its key (PEM): %w", t.CertFile, t.KeyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// protocols are HTTP/1.1 and HTTP/2, over TLS or without (h2c): gRPC needs
// HTTP/2.
func protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// admit makes sure someone can get in and says how: the first admin key is
// written to the data directory on a first start, and a server open to
// anyone, or to the network without TLS, says so at every start.
func (s *Server) admit(ctx context.Context) error {
	if s.cfg.Auth.Disabled {
		s.log.Warn("auth is disabled: anyone who can reach this server may run commands on its workers; set auth.disabled to false and use keys (spool keys create)")
	}
	if !s.cfg.ListensOnLoopback() && !s.cfg.Server.TLS.Enabled() {
		s.log.Warn("listening beyond this machine without TLS: API keys and logs cross the network in clear; set server.tls, or put a TLS proxy in front (docs/security.md)",
			"addr", s.cfg.Server.Addr)
	}
	path, err := s.svc.Bootstrap(ctx)
	if err != nil {
		return fmt.Errorf("create the first admin key: %w", err)
	}
	if path != "" {
		s.log.Info("first start: an admin key was written; log this machine's spool commands in with it, from any directory, with: "+loginCommand(s.url, path)+
			" (spool keys create makes keys for others)", "file", path)
	}
	return nil
}

// loginCommand is the command that stores the admin key in keyFile as the
// command line's key for the server at url: a server listening on every
// address is reached on this machine through loopback.
func loginCommand(url, keyFile string) string {
	if abs, err := filepath.Abs(keyFile); err == nil {
		keyFile = abs
	}
	url = strings.Replace(url, "://0.0.0.0:", "://127.0.0.1:", 1)
	url = strings.Replace(url, "://[::]:", "://[::1]:", 1)
	if strings.ContainsAny(keyFile, " \t'\"$`\\;&|()<>*?[]#~!{}") {
		keyFile = "'" + strings.ReplaceAll(keyFile, "'", `'\''`) + "'"
	}
	return "spool login --server " + url + " < " + keyFile
}

// URL is where clients reach the server (http://host:port).
func (s *Server) URL() string { return s.url }

// Store is the server's store, for spool's own measurements (the demo).
func (s *Server) Store() store.JobStore { return s.store }

// Blobs is the server's store of files kept beside jobs (nil: none is
// configured).
func (s *Server) Blobs() blob.Store { return s.blobs }

func (s *Server) grace() time.Duration {
	return s.cfg.Server.ShutdownGrace()
}

// Stop shuts the server down and closes its store. Long polls and log
// streams are told to end at once (clients reconnect and resume where they
// were); other requests may finish until ctx ends or the configured grace
// period passes, whichever is first, and are then closed. Calling Stop
// again waits for the first call and returns its result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		defer close(s.stopped)
		s.stopErr = s.shutdown(ctx)
	})
	<-s.stopped
	return s.stopErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.log.Info("shutting down", "grace", s.grace())
	s.svc.Drain()
	ctx, cancel := context.WithTimeout(ctx, s.grace())
	defer cancel()
	err := s.hs.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		s.log.Warn("requests still running after the grace period; closing them")
		err = s.hs.Close()
	}
	// The streams were told to end by Drain; wait for them (within the
	// grace) so none is reading the store when it closes.
	streamsDone := make(chan struct{})
	go func() { s.waitStreams(); close(streamsDone) }()
	select {
	case <-streamsDone:
	case <-ctx.Done():
		s.log.Warn("WebSocket streams still running after the grace period")
	}
	s.stopChores()
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if s.blobs != nil {
		err = errors.Join(err, s.blobs.Close())
	}
	return errors.Join(err, s.store.Close())
}

// Wait blocks until the server has stopped (Stop was called, or the context
// given to Start ended) and returns how the stop went.
func (s *Server) Wait() error {
	<-s.stopped
	return s.stopErr
}

// graceLeases gives running jobs one lease length to reconnect, on stores
// whose leases only run while a server does: leases did not run while no
// server did, and the workers kept the jobs running and their output on
// disk, so their work should not be redone.
func graceLeases(ctx context.Context, cfg *config.Config, st store.JobStore, log *slog.Logger) error {
	g := st.Capabilities().LeaseGracer
	if g == nil {
		return nil
	}
	until := time.Now().Add(cfg.Jobs.Lease())
	n, err := g.GraceLeases(ctx, until)
	if n > 0 {
		log.Info("running jobs' leases extended while their workers reconnect", "jobs", n, "until", until.Format(time.TimeOnly))
	}
	return err
}

// makeDirs creates the directories the configuration keeps files in, so
// that one which cannot be a directory is reported by its setting before
// the token key or the store trips over it. The data directory holds keys
// and every job's parameters: it and the keys in it are made their owner's
// only, also when they were made otherwise before, and the change is
// logged.
func makeDirs(cfg *config.Config, log *slog.Logger) error {
	sqlite := cfg.Store.Type == "sqlite"
	writesAdminKey := !cfg.Auth.Disabled && cfg.Auth.AdminKey == ""
	if cfg.Server.TokenKey == "" || (sqlite && cfg.Store.SQLite.Path == "") || writesAdminKey {
		dir := cfg.Server.DataDir
		was, err := setting.MakePrivateDir("server.data_dir", dir, datadir.DirMode)
		if err != nil {
			return err
		}
		if was != 0 {
			log.Info("the data directory was open to other users; it is now its owner's only", "dir", dir, "was", fmt.Sprintf("%#o", was), "now", fmt.Sprintf("%#o", datadir.DirMode))
		}
		narrowed, err := datadir.Restrict(filepath.Join(dir, datadir.AdminKey), filepath.Join(dir, datadir.TokenKey))
		for path, was := range narrowed {
			log.Info("a key file was readable by other users; it is now its owner's only", "file", path, "was", fmt.Sprintf("%#o", was), "now", fmt.Sprintf("%#o", datadir.FileMode))
		}
		if err != nil {
			return fmt.Errorf("server.data_dir %s: %w", dir, err)
		}
	}
	if sqlite && cfg.Store.SQLite.Path != "" {
		return setting.MakeDir("store.sqlite.path", filepath.Dir(cfg.Store.SQLite.Path))
	}
	return nil
}

// tokenKeys returns the task token signer and the sealer of jobs' secrets,
// both from the token key: the configured one, or the one generated into
// the data directory. Every server sharing a store shares server.token_key,
// so each opens the secrets another sealed.
func tokenKeys(cfg *config.Config) (*token.Signer, *seal.Sealer, error) {
	var (
		key []byte
		err error
	)
	if cfg.Server.TokenKey != "" {
		key, err = cfg.TokenKey()
	} else {
		key, err = token.LoadOrCreateKey(filepath.Join(cfg.Server.DataDir, datadir.TokenKey))
	}
	if err != nil {
		return nil, nil, err
	}
	signer, err := token.NewSigner(key)
	if err != nil {
		return nil, nil, err
	}
	sealer, err := seal.New(key)
	return signer, sealer, err
}

// dropStartupGarbage collects what opening the store left behind and gives
// it back to the system. Schema migrations take buffers of 4 MiB a file
// (16 MiB, a hundred times what the server holds when idle) and keep them
// pooled; left there, they count against the server's memory, and set the
// garbage collector's first targets by them, for as long as it runs.
func dropStartupGarbage() {
	runtime.GC() // the pooled buffers move to the pools' victim caches,
	debug.FreeOSMemory()
}
