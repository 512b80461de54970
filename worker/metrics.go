package worker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/telemetry"
)

// workerMetrics are the figures that show how batching behaves (lines per
// batch, why each batch was flushed) and the worker's jobs.
type workerMetrics struct {
	jobs       metric.Int64Counter
	running    metric.Int64UpDownCounter
	lines      metric.Int64Counter
	flushes    metric.Int64Counter
	batchLines metric.Int64Histogram
}

func newWorkerMetrics(mp metric.MeterProvider) *workerMetrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("spool/worker")
	return &workerMetrics{
		jobs:    telemetry.Must(m.Int64Counter("spool.worker.jobs", metric.WithDescription("Attempts run, by outcome (completed, lease_lost, handed_back)."))),
		running: telemetry.Must(m.Int64UpDownCounter("spool.worker.jobs.running", metric.WithDescription("Commands running now."))),
		lines:   telemetry.Must(m.Int64Counter("spool.worker.lines", metric.WithDescription("Output lines captured."))),
		flushes: telemetry.Must(m.Int64Counter("spool.worker.batches", metric.WithDescription("Batches flushed, by reason (size, bytes, interval, quick, critical, close)."))),
		batchLines: telemetry.Must(m.Int64Histogram("spool.worker.batch.lines", metric.WithDescription("Lines per flushed batch."),
			metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 20, 30, 40, 50, 100, 500, 1000))),
	}
}

// attemptDone records an attempt's batching once it has ended.
func (m *workerMetrics) attemptDone(ctx context.Context, outcome string, st batcher.OutputStats) {
	m.jobs.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	m.lines.Add(ctx, st.Lines)
	for r, n := range st.Flushes {
		m.flushes.Add(ctx, n, metric.WithAttributes(attribute.String("reason", r.String())))
	}
}
