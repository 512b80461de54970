package demo

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/worker"
)

// LocalOptions tune a Local pair.
type LocalOptions struct {
	// Configure, when set, adjusts the server's configuration (defaults:
	// config.Default on a free loopback port and the temporary directory).
	Configure func(*config.Config)
	// Concurrency of the worker (default 1).
	Concurrency int
	// Log receives both logs (nil: discarded).
	Log *slog.Logger
}

// Local is a spool server and a worker in this process, in a temporary
// directory of their own: what the demo runs, and what the bench harness
// measures. Unlike a test's (package spooltest), its server's store is at
// hand, to count what a job stored.
type Local struct {
	Dir    string
	Server *assembly.Server
	Client *client.Client
	// Config is the server's configuration, to start more servers on the
	// same store.
	Config *config.Config

	stopWorker context.CancelFunc
	workerDone chan error
}

// StartLocal starts a server and a worker in a new temporary directory.
func StartLocal(ctx context.Context, o LocalOptions) (*Local, error) {
	dir, err := os.MkdirTemp("", "spool-*")
	if err != nil {
		return nil, err
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = filepath.Join(dir, "server")
	cfg.Server.ShutdownGraceSeconds = 2
	// The pair's own admin key: nothing else on the machine can reach
	// what it runs, and nothing is written for anyone to find.
	cfg.Auth.AdminKey = service.NewSecret()
	if o.Configure != nil {
		o.Configure(cfg)
	}
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv, err := assembly.Start(ctx, cfg, assembly.Options{Log: o.Log})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	l := &Local{Dir: dir, Server: srv, Config: cfg, workerDone: make(chan error, 1)}
	var w *worker.Worker
	if l.Client, err = client.New(client.Config{URL: srv.URL(), APIKey: cfg.Auth.AdminKey}); err == nil {
		w, err = worker.New(worker.Config{Server: srv.URL(), APIKey: cfg.Auth.AdminKey, SpoolDir: filepath.Join(dir, "worker"), Concurrency: o.Concurrency, Logger: o.Log})
	}
	if err != nil {
		_ = srv.Stop(context.Background())
		os.RemoveAll(dir)
		return nil, err
	}
	var wctx context.Context
	wctx, l.stopWorker = context.WithCancel(context.WithoutCancel(ctx))
	go func() { l.workerDone <- w.Run(wctx) }()
	return l, nil
}

// Stop stops the worker and the server and removes the directory.
func (l *Local) Stop() error {
	l.stopWorker()
	err := <-l.workerDone
	return errors.Join(err, l.Server.Stop(context.Background()), os.RemoveAll(l.Dir))
}
