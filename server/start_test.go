package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/server"
)

const adminKey = "spool_server-package-tests-0123456789abcdef"

// testConfig is a server on a free loopback port, in its own directory.
func testConfig(t *testing.T) *server.Config { return local(t, server.DefaultConfig()) }

// local puts cfg's server on a free loopback port, in its own directory.
func local(t *testing.T, cfg *server.Config) *server.Config {
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = t.TempDir()
	cfg.Server.ShutdownGrace = time.Second
	cfg.Auth.AdminKey = adminKey
	return cfg
}

func start(t *testing.T, cfg *server.Config) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return srv
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spool.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOldLeaseKeyWarnsAtStart: a file that gives the lease under its old
// key still sets it, and the server says at start what to call it.
func TestOldLeaseKeyWarnsAtStart(t *testing.T) {
	cfg, err := server.LoadConfig(writeFile(t, "jobs:\n  visibility_timeout_seconds: 90\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Jobs.Lease != 90*time.Second {
		t.Fatalf("Jobs.Lease %v, want 1m30s", cfg.Jobs.Lease)
	}
	var logs safebuf.Buffer
	local(t, cfg).Logger = slog.New(slog.NewTextHandler(&logs, nil))
	start(t, cfg)
	want := `level=WARN msg="jobs.visibility_timeout_seconds is deprecated: call it jobs.lease_seconds"`
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Fatalf("the warning is logged %d times, want once:\n%s", n, logs.String())
	}

	// The new key says nothing of the kind.
	cfg, err = server.LoadConfig(writeFile(t, "jobs:\n  lease_seconds: 90\n"))
	if err != nil {
		t.Fatal(err)
	}
	var quiet safebuf.Buffer
	local(t, cfg).Logger = slog.New(slog.NewTextHandler(&quiet, nil))
	start(t, cfg)
	if cfg.Jobs.Lease != 90*time.Second || strings.Contains(quiet.String(), "deprecated") {
		t.Fatalf("Jobs.Lease %v; logs:\n%s", cfg.Jobs.Lease, quiet.String())
	}
}

// TestBothLeaseKeysRefused: the old and the new key together is an error
// that names both.
func TestBothLeaseKeysRefused(t *testing.T) {
	_, err := server.LoadConfig(writeFile(t, "jobs:\n  lease_seconds: 90\n  visibility_timeout_seconds: 60\n"))
	if err == nil || !strings.Contains(err.Error(), "jobs.visibility_timeout_seconds and jobs.lease_seconds are both set") {
		t.Fatalf("LoadConfig: %v", err)
	}
}

// TestDurationsInTheFilesUnits: a duration the file could not say (a part
// of its setting's unit) is refused, naming the setting; so is a value
// the file's validation refuses.
func TestDurationsInTheFilesUnits(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*server.Config)
		want string
	}{
		{"lease", func(c *server.Config) { c.Jobs.Lease = 1500 * time.Millisecond }, "jobs.lease_seconds: 1.5s is not a whole number of seconds"},
		{"retention", func(c *server.Config) { c.Jobs.Retention = 36 * time.Hour }, "jobs.retention_days: 36h0m0s is not a whole number of days"},
		{"session", func(c *server.Config) { c.Auth.SessionLength = 90 * time.Minute }, "auth.session_hours: 1h30m0s is not a whole number of hours"},
		{"playback", func(c *server.Config) { c.Execution.Batching.PlaybackInterval = 1500 * time.Microsecond }, "execution.batching.playback_interval_millis: 1.5ms is not a whole number of milliseconds"},
		{"lease too short", func(c *server.Config) { c.Jobs.Lease = time.Second }, "jobs.lease_seconds: must be between 2 and 43200, got 1"},
		{"lease under two heartbeats", func(c *server.Config) { c.Jobs.Lease = 50 * time.Second }, "jobs.lease_seconds: must be at least twice execution.heartbeat_interval_seconds (30)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t)
			c.set(cfg)
			srv, err := server.Start(context.Background(), cfg)
			if err == nil {
				srv.Stop(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start: %v, want %q", err, c.want)
			}
		})
	}
}

// TestMetersGoToTheProgram: with Meters, the server's instruments are the
// program's, and /metrics says they are not there.
func TestMetersGoToTheProgram(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	cfg := testConfig(t)
	cfg.Meters = mp
	srv := start(t, cfg)

	// One Connect call, over plain HTTP.
	req, _ := http.NewRequest("POST", srv.URL()+"/spool.v1.JobService/ListJobs", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if status, body := do(t, req); status != http.StatusOK {
		t.Fatalf("ListJobs: %d %s", status, body)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, sm.Scope.Name+" "+m.Name)
		}
	}
	for _, want := range []string{"spool/server spool.followers", "connectrpc.com/otelconnect rpc.server.duration"} {
		if !slices.Contains(names, want) {
			t.Errorf("the program's provider has no %q; it has %q", want, names)
		}
	}

	req, _ = http.NewRequest("GET", srv.URL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if status, body := do(t, req); status != http.StatusNotFound || !strings.Contains(body, "Meters") {
		t.Fatalf("/metrics: %d %q, want 404 saying where the metrics went", status, body)
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
