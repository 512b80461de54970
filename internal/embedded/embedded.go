// Package embedded runs a spool server and a worker in one process, on a
// temporary directory: what `spool demo` and the bench harness stand on.
package embedded

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/server"
	"github.com/spool-run/spool/internal/worker"
)

// Options tune the pair.
type Options struct {
	// Configure, when set, adjusts the server's configuration (defaults:
	// config.Default on a free loopback port and the temporary directory).
	Configure func(*config.Config)
	// Concurrency of the worker (default 1).
	Concurrency int
	// Log receives both logs (nil: discarded).
	Log *slog.Logger
}

// Cluster is a running server and worker.
type Cluster struct {
	Dir    string
	Config *config.Config
	Server *server.Running
	Client *client.Client

	stopWorker context.CancelFunc
	workerDone chan error
}

// Start starts a server and a worker in a new temporary directory.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp("", "spool-*")
	if err != nil {
		return nil, err
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = filepath.Join(dir, "server")
	cfg.Server.ShutdownGraceSeconds = 2
	if o.Configure != nil {
		o.Configure(cfg)
	}
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	srv, err := server.Start(ctx, cfg, o.Log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{Dir: dir, Config: cfg, Server: srv, workerDone: make(chan error, 1)}
	var wc *client.Client
	if c.Client, err = client.New(srv.URL); err == nil {
		wc, err = client.New(srv.URL, client.WithCompressedRequests())
	}
	if err == nil {
		var w *worker.Worker
		w, err = worker.New(wc, worker.Config{SpoolDir: filepath.Join(dir, "worker"), Concurrency: o.Concurrency, Logger: o.Log})
		if err == nil {
			var wctx context.Context
			wctx, c.stopWorker = context.WithCancel(context.WithoutCancel(ctx))
			go func() { c.workerDone <- w.Run(wctx) }()
			return c, nil
		}
	}
	_ = srv.Stop()
	os.RemoveAll(dir)
	return nil, err
}

// Stop stops the worker and the server and removes the directory.
func (c *Cluster) Stop() error {
	c.stopWorker()
	err := <-c.workerDone
	return errors.Join(err, c.Server.Stop(), os.RemoveAll(c.Dir))
}
