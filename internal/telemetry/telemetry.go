// Package telemetry is spool's metrics: OpenTelemetry instruments, exported
// in the Prometheus text format on /metrics (scrape it, or point an
// OpenTelemetry collector's Prometheus receiver at it). Each server or
// worker has its own registry, so several in one process (tests, the demo)
// do not mix their figures.
package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Metrics is one component's meter provider and its /metrics handler.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// New returns metrics whose handler also reports the Go runtime's and the
// process's own figures.
func New() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Metrics{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// Provider is what instruments are made from.
func (m *Metrics) Provider() metric.MeterProvider { return m.provider }

// Meter returns the meter of one part of spool.
func (m *Metrics) Meter(name string) metric.Meter { return m.provider.Meter("spool/" + name) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Shutdown stops the provider.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }

// Must panics on an instrument that could not be made: only a programming
// error (a bad name) makes one fail.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("metrics: %v", err))
	}
	return v
}
