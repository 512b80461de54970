package consumer

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/spool-run/spool/internal/telemetry"
)

// meterName is the instrumentation scope of the consumer's metrics.
const meterName = "spool/consumer"

// Outcomes of a handler call, the values of the outcome attribute.
const (
	outcomeCommit  = "commit"
	outcomeRefused = "refused"
	outcomeError   = "error"
	outcomePanic   = "panic"
)

// metrics are the consumer's instruments. They always exist (no-ops without
// a meter provider) so that the code that records needs no checks.
type metrics struct {
	meter        metric.Meter
	batchSize    metric.Int64Histogram
	duration     metric.Float64Histogram
	commits      metric.Int64Counter
	redeliveries metric.Int64Counter
	lag          metric.Int64ObservableGauge

	commitOK, commitFailed metric.MeasurementOption
	outcomes               map[string]metric.MeasurementOption
}

func newMetrics(mp metric.MeterProvider) *metrics {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &metrics{meter: mp.Meter(meterName)}
	m.batchSize = telemetry.Must(m.meter.Int64Histogram("spool.consumer.batch.size",
		metric.WithDescription("Messages per batch handed to the handler, redeliveries included."),
		metric.WithUnit("{message}"),
		metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)))
	m.duration = telemetry.Must(m.meter.Float64Histogram("spool.consumer.handler.duration",
		metric.WithDescription("How long the handler took with one batch, by outcome (commit, refused, error, panic)."),
		metric.WithUnit("s")))
	m.commits = telemetry.Must(m.meter.Int64Counter("spool.consumer.commits",
		metric.WithDescription("Offset commits, by result (ok, error)."),
		metric.WithUnit("{commit}")))
	m.redeliveries = telemetry.Must(m.meter.Int64Counter("spool.consumer.redeliveries",
		metric.WithDescription("Batches delivered again after the handler did not commit them."),
		metric.WithUnit("{batch}")))
	m.lag = telemetry.Must(m.meter.Int64ObservableGauge("spool.consumer.lag",
		metric.WithDescription("Messages of the partition not yet handed to the handler successfully: the high watermark of the latest fetch minus the next offset to handle."),
		metric.WithUnit("{message}")))
	m.commitOK = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "ok")))
	m.commitFailed = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "error")))
	m.outcomes = make(map[string]metric.MeasurementOption)
	for _, o := range []string{outcomeCommit, outcomeRefused, outcomeError, outcomePanic} {
		m.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o)))
	}
	return m
}

func (m *metrics) handled(outcome string, size int, took time.Duration) {
	ctx := context.Background()
	m.batchSize.Record(ctx, int64(size))
	m.duration.Record(ctx, took.Seconds(), m.outcomes[outcome])
}

func (m *metrics) committed(ok bool) {
	if ok {
		m.commits.Add(context.Background(), 1, m.commitOK)
	} else {
		m.commits.Add(context.Background(), 1, m.commitFailed)
	}
}

func (m *metrics) redelivered() { m.redeliveries.Add(context.Background(), 1) }

// observeLag registers the lag gauge's callback, which asks lags for the
// current figures; the returned registration ends it.
func (m *metrics) observeLag(lags func(yield func(topic string, partition int32, lag int64))) (metric.Registration, error) {
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		lags(func(topic string, partition int32, lag int64) {
			o.ObserveInt64(m.lag, lag, metric.WithAttributes(
				attribute.String("topic", topic), attribute.Int("partition", int(partition))))
		})
		return nil
	}, m.lag)
}
