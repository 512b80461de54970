// Package server runs a spool server inside a program: the same server as
// `spool server`, with its store, API, web UI and lease reaper, on one port.
//
//	cfg := server.DefaultConfig()
//	cfg.Server.Addr = "127.0.0.1:0" // any free port
//	cfg.Server.DataDir = dir
//	cfg.Logger = slog.Default()
//	srv, err := server.Start(ctx, cfg)
//	if err != nil {
//		return err
//	}
//	defer srv.Stop(context.Background())
//	fmt.Println("spool is at", srv.URL())
//
// Config is the server's whole configuration, with a field for each
// setting of the YAML file `spool server --config` reads: each field's
// documentation names its setting. LoadConfig reads such a file, and the
// SPOOL_* environment variables, into a Config.
package server

import (
	"context"
	"log/slog"

	"github.com/spool-run/spool/internal/assembly"
)

// Server is a running spool server.
type Server struct{ s *assembly.Server }

// Start checks cfg, opens its store, listens on cfg.Server.Addr and serves
// until Stop is called or ctx ends (then it shuts down gracefully within
// cfg.Server.ShutdownGrace). An error about the configuration names the
// setting by its YAML path (jobs.lease_seconds for Jobs.Lease). Start
// logs, as a warning, any setting LoadConfig read under an old name.
func Start(ctx context.Context, cfg *Config) (*Server, error) {
	fc, err := cfg.file()
	if err != nil {
		return nil, err
	}
	if err := fc.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, w := range fc.Warnings {
		log.Warn(w)
	}
	s, err := assembly.Start(ctx, fc, assembly.Options{Log: log, Meters: cfg.Meters})
	if err != nil {
		return nil, err
	}
	return &Server{s: s}, nil
}

// URL is where clients and workers reach the server (http://host:port).
func (s *Server) URL() string { return s.s.URL() }

// Stop shuts the server down: long polls and log streams end at once (their
// clients resume where they were), other requests may finish until ctx ends
// or the configured grace period passes. It closes the store.
func (s *Server) Stop(ctx context.Context) error { return s.s.Stop(ctx) }

// Wait blocks until the server has stopped and returns how the stop went.
func (s *Server) Wait() error { return s.s.Wait() }
