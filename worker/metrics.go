package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/outbox"
	"github.com/spool-run/spool/internal/telemetry"
)

// workerMetrics are the figures that show how batching behaves (lines per
// batch, why each batch was flushed, how long a line waits to be stored)
// and the worker's jobs.
type workerMetrics struct {
	jobs         metric.Int64Counter
	running      metric.Int64UpDownCounter
	lines        metric.Int64Counter
	flushes      metric.Int64Counter
	batchLines   metric.Int64Histogram
	flushLatency metric.Float64Histogram
}

// flushLatencyBuckets are in seconds: from a followed job's prompt flushes
// (20 ms) past the longest flush interval to a server that was away.
var flushLatencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// newWorkerMetrics makes the worker's instruments of mp (nil: none).
// waiting says, when the metrics are read, how many output lines wait in
// memory for their batch and how many bytes of outboxes wait on disk for
// the server.
func newWorkerMetrics(mp metric.MeterProvider, waiting func() (lines, bytes int64)) *workerMetrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter("spool/worker")
	telemetry.Must(m.Int64ObservableGauge("spool.worker.lines.waiting", metric.WithUnit("{line}"),
		metric.WithDescription("Output lines read from commands that wait in memory for their batch."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			lines, _ := waiting()
			o.Observe(lines)
			return nil
		})))
	telemetry.Must(m.Int64ObservableGauge("spool.worker.outbox.waiting", metric.WithUnit("By"),
		metric.WithDescription("Bytes of the outboxes on disk that the server has not acknowledged yet."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			_, bytes := waiting()
			o.Observe(bytes)
			return nil
		})))
	return &workerMetrics{
		flushLatency: telemetry.Must(m.Float64Histogram("spool.worker.flush.latency", metric.WithUnit("s"),
			metric.WithDescription("From the first line of a batch read to the batch acknowledged by the server."),
			metric.WithExplicitBucketBoundaries(flushLatencyBuckets...))),
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

// delivered records the flush latency of the batches among evs, which the
// server has just acknowledged.
func (m *workerMetrics) delivered(ctx context.Context, evs []outbox.Event) {
	now := time.Now()
	for _, ev := range evs {
		if t := ev.FirstLineTime(); !t.IsZero() {
			m.flushLatency.Record(ctx, now.Sub(t).Seconds())
		}
	}
}
