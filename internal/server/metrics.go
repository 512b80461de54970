package server

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/telemetry"
)

// serverMetrics are the job-level figures; otelconnect adds the RPC ones
// (rpc.server.duration and friends, by procedure and code).
type serverMetrics struct {
	enqueued  metric.Int64Counter
	leased    metric.Int64Counter
	finished  metric.Int64Counter
	published metric.Int64Counter
	lines     metric.Int64Counter
	settled   metric.Int64Counter
}

func newServerMetrics(m metric.Meter, w *watchers) *serverMetrics {
	sm := &serverMetrics{
		enqueued:  telemetry.Must(m.Int64Counter("spool.jobs.enqueued", metric.WithDescription("Jobs created (repeats of a request id excluded)."))),
		leased:    telemetry.Must(m.Int64Counter("spool.jobs.leased", metric.WithDescription("Leases handed to workers (one per attempt)."))),
		finished:  telemetry.Must(m.Int64Counter("spool.jobs.finished", metric.WithDescription("Jobs completed by their workers, by final state."))),
		published: telemetry.Must(m.Int64Counter("spool.events.published", metric.WithDescription("Events received from workers (a batch counts once), retries included."))),
		lines:     telemetry.Must(m.Int64Counter("spool.events.published.lines", metric.WithDescription("Output lines received from workers, retries included."))),
		settled:   telemetry.Must(m.Int64Counter("spool.leases.settled", metric.WithDescription("Expired leases settled by the reaper (re-queued, failed or cancelled)."))),
	}
	telemetry.Must(m.Int64ObservableGauge("spool.followers", metric.WithDescription("Clients following a job's output live on this server."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(w.total()))
			return nil
		})))
	return sm
}

func (sm *serverMetrics) jobFinished(ctx context.Context, j *spoolv1.Job) {
	sm.finished.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", j.GetQueue()), attribute.String("state", store.StateName(j.GetState()))))
}

func (sm *serverMetrics) eventsPublished(ctx context.Context, evs []*spoolv1.JobEvent) {
	var lines int64
	for _, ev := range evs {
		lines += events.LineCount(ev)
	}
	sm.published.Add(ctx, int64(len(evs)))
	sm.lines.Add(ctx, lines)
}
