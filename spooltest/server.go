package spooltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
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

// Option adjusts the server's configuration before it starts.
type Option func(*server.Config)

// WithConfig lets a test change any setting, for example short leases:
//
//	spooltest.NewServer(t, spooltest.WithConfig(func(c *server.Config) {
//		c.Execution.HeartbeatInterval = time.Second
//		c.Jobs.Lease = 2 * time.Second
//	}))
func WithConfig(f func(*server.Config)) Option { return Option(f) }

// NewServer starts a server on a free loopback port, with its own data
// directory (embedded SQLite) under t.TempDir(). Its shutdown grace is one
// second: tests stop servers with streams open.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = t.TempDir()
	cfg.Server.ShutdownGrace = time.Second
	cfg.Auth.AdminKey = newSecret()
	for _, o := range opts {
		o(cfg)
	}
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

// Client returns a client for the server, with its admin key unless opts
// give another.
func (s *Server) Client(opts ...client.Option) *client.Client {
	s.t.Helper()
	c, err := client.New(s.URL, append([]client.Option{client.WithAPIKey(s.AdminKey)}, opts...)...)
	if err != nil {
		s.t.Fatalf("spooltest: %v", err)
	}
	return c
}

// WaitJob follows a job until it is final and returns it as it ended. It
// fails the test if that takes longer than two minutes.
func (s *Server) WaitJob(t testing.TB, jobID string) *spoolv1.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := s.Client().Events(ctx, jobID, client.StreamOptions{Follow: true, Types: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_PROCESS_END}})
	for _, err := range st.Batches() {
		if err != nil {
			t.Fatalf("spooltest: waiting for job %s: %v", jobID, err)
		}
	}
	job := st.Finished()
	if job == nil || !spool.IsFinal(job.GetState()) {
		t.Fatalf("spooltest: job %s did not finish", jobID)
	}
	return job
}

// Key creates an API key with role ("admin", "submit", "read", "worker" or "ingest"),
// limited to queues when given, and returns its secret.
func (s *Server) Key(t testing.TB, role string, queues ...string) string {
	t.Helper()
	_, secret, err := s.Client().CreateKey(context.Background(), client.NewKey{
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
