package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/spool-run/spool/internal/backend"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/token"
)

// Running is a started server.
type Running struct {
	// URL is where clients reach it (http://host:port).
	URL   string
	Store store.JobStore
	srv   *Server
	stop  context.CancelFunc
	done  chan error
}

// Start opens the configured store and token key, listens on
// cfg.Server.Addr ("127.0.0.1:0" picks a free port) and serves until ctx
// ends or Stop is called.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Running, error) {
	signer, err := Signer(cfg)
	if err != nil {
		return nil, err
	}
	st, err := backend.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if g, ok := st.(store.LeaseGracer); ok {
		// Leases did not run while no server did: give running jobs one
		// lease length to reconnect before the reaper may expire them.
		until := time.Now().Add(time.Duration(cfg.Jobs.VisibilityTimeoutSeconds) * time.Second)
		if n, err := g.GraceLeases(ctx, until); err != nil {
			st.Close()
			return nil, err
		} else if n > 0 {
			log.Info("running jobs' leases extended while their workers reconnect", "jobs", n, "until", until.Format(time.TimeOnly))
		}
	}
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("listen on %s: %w (is another server running there? use --addr)", cfg.Server.Addr, err)
	}
	ctx, stop := context.WithCancel(ctx)
	r := &Running{URL: "http://" + ln.Addr().String(), Store: st, srv: New(cfg, st, signer, log), stop: stop, done: make(chan error, 1)}
	go func() {
		err := r.srv.Serve(ctx, ln)
		r.done <- errors.Join(err, st.Close())
	}()
	return r, nil
}

// Wait blocks until the server has stopped and its store is closed.
func (r *Running) Wait() error {
	err := <-r.done
	r.done <- err // later Waits see the same result
	return err
}

// Stop shuts the server down gracefully and waits for it.
func (r *Running) Stop() error {
	r.stop()
	return r.Wait()
}

// Signer returns the task token signer: the configured key, or the one
// generated into the data directory.
func Signer(cfg *config.Config) (*token.Signer, error) {
	var (
		key []byte
		err error
	)
	if cfg.Server.TokenKey != "" {
		key, err = cfg.TokenKey()
	} else {
		key, err = token.LoadOrCreateKey(filepath.Join(cfg.Server.DataDir, "token.key"))
	}
	if err != nil {
		return nil, err
	}
	return token.NewSigner(key)
}
