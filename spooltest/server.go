package spooltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
)

// Server is a running spool server owned by a test. It is stopped when the
// test ends.
type Server struct {
	// URL is where clients and workers reach it (http://127.0.0.1:port).
	URL string
	// AdminKey is the server's admin API key. Client, NewWorker and
	// LeaseJob use it; Key makes keys with less power.
	AdminKey string
	t        testing.TB
	cfg      *server.Config
	srv      *server.Server
}

// Config says how NewServer's server differs from the test default.
type Config struct {
	// Server, when set, changes the server's configuration before it
	// starts, with the test defaults in place (a free loopback port, a
	// data directory under t.TempDir(), a random admin key, a one second
	// shutdown grace), for example to shorten leases:
	//
	//	spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
	//		c.Execution.HeartbeatInterval = time.Second
	//		c.Jobs.Lease = 2 * time.Second
	//	}})
	Server func(*server.Config)

	// Logger receives the server's structured logs (nil: discarded).
	Logger *slog.Logger
	// Meters makes the server's metrics (nil: the server keeps its own).
	Meters metric.MeterProvider
}

// NewServer starts a server on a free loopback port, with its own data
// directory (embedded SQLite) under t.TempDir(). Its shutdown grace is one
// second: tests stop servers with streams open. cfg, when given (at most
// one), changes it.
func NewServer(t testing.TB, cfg ...Config) *Server {
	t.Helper()
	var c Config
	switch len(cfg) {
	case 0:
	case 1:
		c = cfg[0]
	default:
		t.Fatalf("spooltest: NewServer takes one Config, not %d", len(cfg))
	}
	sc := server.DefaultConfig()
	sc.Server.Addr = "127.0.0.1:0"
	sc.Server.DataDir = t.TempDir()
	sc.Server.ShutdownGrace = time.Second
	sc.Auth.AdminKey = newSecret()
	sc.Logger, sc.Meters = c.Logger, c.Meters
	if c.Server != nil {
		c.Server(sc)
	}
	return startServer(t, sc)
}

// startServer starts the server cfg describes for a test.
func startServer(t testing.TB, cfg *server.Config) *Server {
	t.Helper()
	s := &Server{t: t, cfg: cfg, AdminKey: cfg.Auth.AdminKey}
	s.start()
	t.Cleanup(func() {
		if s.srv != nil {
			_ = s.srv.Stop(context.Background())
		}
	})
	return s
}

func (s *Server) start() {
	s.t.Helper()
	srv, err := server.Start(context.Background(), s.cfg)
	if err != nil {
		s.t.Fatalf("spooltest: start server: %v", err)
	}
	s.srv, s.URL = srv, srv.URL()
	// Without a configured admin key, a first start writes one to the data
	// directory, as for anyone running spool.
	if s.cfg.Auth.AdminKey == "" && !s.cfg.Auth.Disabled {
		if b, err := os.ReadFile(filepath.Join(s.cfg.Server.DataDir, "admin.key")); err == nil {
			s.AdminKey = strings.TrimSpace(string(b))
		}
	}
	// A restart keeps the port, so clients and workers find it again.
	if u, err := url.Parse(s.URL); err == nil {
		s.cfg.Server.Addr = u.Host
	}
}

// Config is the server's configuration. Changes take effect at Restart.
func (s *Server) Config() *server.Config { return s.cfg }

// Stop stops the server gracefully, failing the test if it does not stop
// cleanly. Workers keep running and reconnect after Restart.
func (s *Server) Stop() {
	s.t.Helper()
	srv := s.srv
	s.srv = nil
	if srv == nil {
		return
	}
	if err := srv.Stop(context.Background()); err != nil {
		s.t.Fatalf("spooltest: stop server: %v", err)
	}
}

// Restart stops the server if it runs and starts it again on the same port
// and data directory, as an operator restarting it would.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Client returns a client for the server. cfg, when given (at most one),
// configures it; its URL and APIKey, left empty, are the server's and its
// admin key.
func (s *Server) Client(cfg ...client.Config) *client.Client {
	s.t.Helper()
	var c client.Config
	switch len(cfg) {
	case 0:
	case 1:
		c = cfg[0]
	default:
		s.t.Fatalf("spooltest: Client takes one Config, not %d", len(cfg))
	}
	if c.URL == "" {
		c.URL = s.URL
	}
	if c.APIKey == "" {
		c.APIKey = s.AdminKey
	}
	cl, err := client.New(c)
	if err != nil {
		s.t.Fatalf("spooltest: %v", err)
	}
	return cl
}

// WaitJob follows a job until it is final and returns it as it ended. It
// fails the test if that takes longer than two minutes.
func (s *Server) WaitJob(t testing.TB, jobID string) *spool.Job {
	t.Helper()
	job, err := waitFinal(s.Client(), jobID)
	if err != nil {
		t.Fatalf("spooltest: waiting for job %s: %v", jobID, err)
	}
	return job
}

// Key creates an API key with role, limited to queues when given, and
// returns its secret.
func (s *Server) Key(t testing.TB, role spool.Role, queues ...string) string {
	t.Helper()
	_, secret, err := s.Client().CreateKey(context.Background(), client.KeyParams{
		Name: fmt.Sprintf("%s-%d", role, keySeq.Add(1)), Role: role, Queues: queues})
	if err != nil {
		t.Fatalf("spooltest: create a %s key: %v", role, err)
	}
	return secret
}

var keySeq atomic.Int64

// newSecret is a random admin key for a test server.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "spool_" + hex.EncodeToString(b[:])
}
