// Package server runs a spool server inside a program: the same server as
// `spool server`, with its store, API, web UI and lease reaper, on one port.
//
//	cfg := server.DefaultConfig()
//	cfg.Server.Addr = "127.0.0.1:0" // any free port
//	cfg.Server.DataDir = dir
//	srv, err := server.Start(ctx, cfg)
//	if err != nil {
//		return err
//	}
//	defer srv.Stop(context.Background())
//	fmt.Println("spool is at", srv.URL())
//
// Config is the server's whole configuration, field for field the YAML file
// `spool server --config` reads (the README lists every setting).
package server

import (
	"context"
	"log/slog"
	"os"

	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
)

// Config is the server's configuration: the YAML file's settings as Go
// fields (server.addr is Config.Server.Addr). Start it from DefaultConfig
// or LoadConfig rather than from zero.
type Config = config.Config

// DefaultConfig is the configuration used when nothing is set: SQLite in
// ./spool-data, listening on 127.0.0.1:7070.
func DefaultConfig() *Config { return config.Default() }

// LoadConfig reads a YAML configuration file ("" for none) over the
// defaults, applies the SPOOL_* environment variables, and validates the
// result; an error names the setting that is wrong.
func LoadConfig(path string) (*Config, error) { return config.Load(path, os.LookupEnv) }

// Server is a running spool server.
type Server struct{ s *assembly.Server }

// Option tunes Start.
type Option func(*options)

type options struct{ log *slog.Logger }

// WithLogger sends the server's structured logs to log (default: nowhere).
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// Start validates cfg, opens its store, listens on cfg.Server.Addr and
// serves until Stop is called or ctx ends (then it shuts down gracefully
// within cfg.Server.ShutdownGraceSeconds).
func Start(ctx context.Context, cfg *Config, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := assembly.Start(ctx, cfg, o.log)
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
