// Package config is the server's configuration: defaults, a YAML file,
// SPOOL_* environment overrides, and validation that names the bad field.
//
// Precedence, lowest first: defaults, the file, the environment, then the
// command line flags the caller applies.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"

	"go.yaml.in/yaml/v3"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store/awsstore"
)

// Config is everything `spool server` can be told.
type Config struct {
	Server    Server    `yaml:"server"`
	Store     Store     `yaml:"store"`
	Jobs      Jobs      `yaml:"jobs"`
	Execution Execution `yaml:"execution"`
	Log       Log       `yaml:"log"`
}

// Server is how the server listens and where it keeps its files.
type Server struct {
	// Addr is host:port to listen on; loopback unless you mean otherwise.
	Addr string `yaml:"addr"`
	// DataDir holds the SQLite database and the generated token key.
	DataDir string `yaml:"data_dir"`
	// TokenKey signs task tokens: base64 of at least 32 bytes. Empty: a key
	// is generated into the data directory. Replicas sharing a store must
	// share the key.
	TokenKey string `yaml:"token_key"`
	// ShutdownGraceSeconds is how long SIGTERM waits for requests (streams
	// included) to finish before closing them.
	ShutdownGraceSeconds int `yaml:"shutdown_grace_seconds"`
}

// Store selects and configures the backend.
type Store struct {
	// Type is sqlite (the default), memory (nothing survives a restart), or
	// aws (SQS carries jobs, DynamoDB holds the truth; see docs/aws.md).
	Type   string          `yaml:"type"`
	SQLite SQLite          `yaml:"sqlite"`
	AWS    awsstore.Config `yaml:"aws"`
}

// SQLite configures the embedded store.
type SQLite struct {
	// Path of the database file; empty means DataDir/spool.db.
	Path string `yaml:"path"`
	// Synchronous is full (the default: acknowledged writes are on disk)
	// or normal (faster; the last writes may be lost on power failure).
	Synchronous string `yaml:"synchronous"`
}

// Jobs holds the defaults applied to jobs.
type Jobs struct {
	// MaxAttempts is how many leases a job may be given before it is failed.
	MaxAttempts int `yaml:"max_attempts"`
	// VisibilityTimeoutSeconds is the default lease length; workers extend
	// it with heartbeats.
	VisibilityTimeoutSeconds int `yaml:"visibility_timeout_seconds"`
}

// Execution is sent to workers with each job and stored with it.
type Execution struct {
	Batching                 Batching `yaml:"batching"`
	HeartbeatIntervalSeconds int      `yaml:"heartbeat_interval_seconds"`
}

// Batching is how workers batch output (seed 000's BatchingConfig).
type Batching struct {
	FlushIntervalSeconds   int   `yaml:"flush_interval_seconds"`
	MaxBatchSize           int   `yaml:"max_batch_size"`
	MaxBatchBytes          int64 `yaml:"max_batch_bytes"`
	PlaybackIntervalMillis int   `yaml:"playback_interval_millis"`
}

// Log configures the server's structured logs.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json.
	Format string `yaml:"format"`
}

// Default returns the configuration used when nothing is set.
func Default() *Config {
	return &Config{
		Server: Server{Addr: "127.0.0.1:7070", DataDir: "./spool-data", ShutdownGraceSeconds: 30},
		Store:  Store{Type: "sqlite", SQLite: SQLite{Synchronous: "full"}},
		Jobs:   Jobs{MaxAttempts: 3, VisibilityTimeoutSeconds: 120},
		Execution: Execution{
			Batching: Batching{
				FlushIntervalSeconds:   2,
				MaxBatchSize:           50,
				MaxBatchBytes:          256 << 10,
				PlaybackIntervalMillis: 50,
			},
			HeartbeatIntervalSeconds: 30,
		},
		Log: Log{Level: "info", Format: "text"},
	}
}

// Load reads the file at path (none when empty) over the defaults, applies
// the environment (lookup is os.LookupEnv in production) and validates.
func Load(path string, lookup func(string) (string, bool)) (*Config, error) {
	cfg, err := Read(path, lookup)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil && path != "" {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, err
}

// Read is Load without the final validation, for commands that use one
// section of the server's configuration (spool aws init) and check it
// themselves.
func Read(path string, lookup func(string) (string, bool)) (*Config, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
	}
	cfg, err := parse(data, lookup)
	if err != nil && path != "" {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, err
}

// Parse is Load for a file's contents.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	cfg, err := parse(data, lookup)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parse applies the file and the environment over the defaults.
func parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	cfg := Default()
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil {
			return nil, yamlError(err)
		}
	}
	if lookup != nil {
		if err := applyEnv(cfg, lookup); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

var (
	unknownField = regexp.MustCompile(`field (\S+) not found in type config\.(\w+)`)
	goType       = regexp.MustCompile(` into (\[\]|map\[\w+\])?\w+`)
)

// yamlError rewords the YAML decoder's errors, which name Go types, in the
// file's terms.
func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			m = unknownField.ReplaceAllString(m, "unknown setting $1 (check its spelling and where it is nested)")
			msgs[i] = goType.ReplaceAllString(m, "")
		}
		return fmt.Errorf("%s", joinLines(msgs))
	}
	return fmt.Errorf("not valid YAML: %w", err)
}

func joinLines(msgs []string) string {
	var b bytes.Buffer
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m)
	}
	return b.String()
}

// ExecutionConfig is the ExecutionConfig stored with new jobs.
func (c *Config) ExecutionConfig() *spoolv1.ExecutionConfig {
	b := c.Execution.Batching
	return &spoolv1.ExecutionConfig{
		Batching: &spoolv1.BatchingConfig{
			FlushIntervalSeconds:   int32(b.FlushIntervalSeconds),
			MaxBatchSize:           int32(b.MaxBatchSize),
			MaxBatchBytes:          b.MaxBatchBytes,
			PlaybackIntervalMillis: int32(b.PlaybackIntervalMillis),
		},
		HeartbeatIntervalSeconds: int32(c.Execution.HeartbeatIntervalSeconds),
	}
}
