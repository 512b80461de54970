package spooltest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/worker"
)

// Worker is a spool worker owned by a test, running real commands. It is
// stopped gracefully when the test ends.
type Worker struct {
	*worker.Worker
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// NewWorker starts a worker for srv. Fields of cfg left empty get test
// defaults: the server's URL and admin key, a spool directory under t.TempDir(), a one
// second kill grace, a five second shutdown grace, and warnings logged to
// the test's log.
func NewWorker(t testing.TB, srv *Server, cfg worker.Config) *Worker {
	t.Helper()
	if cfg.Server == "" {
		cfg.Server = srv.URL
	}
	if cfg.APIKey == "" {
		cfg.APIKey = srv.AdminKey
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = t.TempDir()
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = time.Second
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatalf("spooltest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &Worker{Worker: w, t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { tw.done <- w.Run(ctx) }()
	t.Cleanup(tw.Stop)
	return tw
}

// Stop stops the worker gracefully (running jobs get the shutdown grace)
// and waits for it, failing the test if it does not stop within 30 seconds.
// Calling it again does nothing.
func (w *Worker) Stop() {
	w.t.Helper()
	w.cancel()
	select {
	case err, ok := <-w.done:
		if ok && err != nil {
			w.t.Errorf("spooltest: worker: %v", err)
		}
		if ok {
			close(w.done)
		}
	case <-time.After(30 * time.Second):
		w.t.Error("spooltest: the worker did not stop within 30s")
	}
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
