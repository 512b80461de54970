package client_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/spooltest"
)

// TestUnavailable: a call that could not reach the server is
// spool.ErrUnavailable; one the server refused is not.
func TestUnavailable(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	_, err := c.Job(context.Background(), "any")
	if !errors.Is(err, spool.ErrNotFound) || errors.Is(err, spool.ErrUnavailable) {
		t.Errorf("a job the server does not have: %v", err)
	}
	srv.Stop()
	_, err = c.Job(context.Background(), "any")
	if !errors.Is(err, spool.ErrUnavailable) {
		t.Errorf("a call to a stopped server: %v is not unavailable", err)
	}
}

// TestLoggerAndMeters: the client logs each call it tries again, and
// measures its calls with the program's meters.
func TestLoggerAndMeters(t *testing.T) {
	srv := spooltest.NewServer(t)
	var logs safebuf.Buffer
	reader := sdkmetric.NewManualReader()
	c := srv.Client(client.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Retry: client.Retry{For: 300 * time.Millisecond}})
	if _, err := c.Job(context.Background(), "any"); !errors.Is(err, spool.ErrNotFound) {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	measured := slices.ContainsFunc(rm.ScopeMetrics, func(sm metricdata.ScopeMetrics) bool {
		return slices.ContainsFunc(sm.Metrics, func(m metricdata.Metrics) bool { return m.Name == "rpc.client.duration" })
	})
	if !measured {
		t.Errorf("the client's calls were not measured: %+v", rm.ScopeMetrics)
	}
	if logs.String() != "" {
		t.Errorf("a call that worked was logged: %s", logs.String())
	}

	srv.Stop()
	if _, err := c.Job(context.Background(), "any"); !errors.Is(err, spool.ErrUnavailable) {
		t.Fatalf("a call to a stopped server: %v", err)
	}
	if got := logs.String(); !strings.Contains(got, "level=INFO") || !strings.Contains(got, "trying again") {
		t.Errorf("the retries were not logged: %q", got)
	}
}

// TestNegativeTimeoutRefused: a negative timeout reaches the server, which
// refuses it, instead of quietly meaning "no timeout".
func TestNegativeTimeoutRefused(t *testing.T) {
	srv := spooltest.NewServer(t)
	_, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Argv: []string{"true"}, Timeout: -5 * time.Second})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "params.timeout") {
		t.Fatalf("got %v, want the server to refuse params.timeout", err)
	}
}

// TestNumbersOutOfRange: a number the wire cannot carry is refused before
// anything is sent, instead of wrapping around to another number.
func TestNumbersOutOfRange(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	_, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"true"}, MaxAttempts: 1<<32 + 1})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxAttempts") {
		t.Errorf("MaxAttempts 2^32+1: %v", err)
	}
	_, _, err = c.JobsPage(ctx, client.ListParams{PageSize: 1 << 40})
	if !errors.Is(err, spool.ErrInvalidArgument) {
		t.Errorf("PageSize 2^40: %v", err)
	}
	_, err = c.StartScatter(ctx, client.ScatterParams{Job: client.SubmitParams{Script: "true"}, MaxConcurrency: -1 << 40})
	if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxConcurrency") {
		t.Errorf("MaxConcurrency -2^40: %v", err)
	}
	if jobs, _, err := c.JobsPage(ctx, client.ListParams{}); err != nil || len(jobs) != 0 {
		t.Errorf("something was submitted: %d jobs, %v", len(jobs), err)
	}
}
