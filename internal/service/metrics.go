package service

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/scatter"
	"github.com/spool-run/spool/internal/telemetry"
)

// metrics are the job-level figures; the Connect adapter adds the RPC ones
// (rpc.server.duration and friends, by procedure and code).
type metrics struct {
	enqueued  metric.Int64Counter
	rejected  metric.Int64Counter
	leased    metric.Int64Counter
	finished  metric.Int64Counter
	published metric.Int64Counter
	lines     metric.Int64Counter
	released  metric.Int64Counter
	deleted   metric.Int64Counter

	// scatter are the counters the scatter driver adds to; the core counts
	// batches started.
	scatter        scatter.Metrics
	batchesStarted metric.Int64Counter

	ingestRequests metric.Int64Counter
	ingestEvents   metric.Int64Counter
	ingestSources  metric.Int64Counter

	byQueue attrSets
}

// attrSets keeps the attributes of the counters by queue (and a job's
// final state) made once: a set is sorted and copied as it is made, which
// for every job finished was a tenth of what finishing it cost the server.
// There is one for each series the counters have anyway.
type attrSets struct {
	mu   sync.RWMutex
	sets map[attrKey]metric.MeasurementOption
}

type attrKey struct{ queue, state string }

// maxAttrSets bounds what attrSets keeps; past it, sets are made each time.
const maxAttrSets = 10_000

// of is the attribute option for queue and, unless "", state.
func (a *attrSets) of(queue, state string) metric.MeasurementOption {
	k := attrKey{queue, state}
	a.mu.RLock()
	o, ok := a.sets[k]
	a.mu.RUnlock()
	if ok {
		return o
	}
	kvs := []attribute.KeyValue{attribute.String("queue", queue)}
	if state != "" {
		kvs = append(kvs, attribute.String("state", state))
	}
	o = metric.WithAttributeSet(attribute.NewSet(kvs...))
	a.mu.Lock()
	if a.sets == nil {
		a.sets = map[attrKey]metric.MeasurementOption{}
	}
	if len(a.sets) < maxAttrSets {
		a.sets[k] = o
	}
	a.mu.Unlock()
	return o
}

func newMetrics(m metric.Meter, w *watchers) *metrics {
	sm := &metrics{
		enqueued:  telemetry.Must(m.Int64Counter("spool.jobs.enqueued", metric.WithDescription("Jobs created (repeats of a request id excluded)."))),
		rejected:  telemetry.Must(m.Int64Counter("spool.jobs.rejected", metric.WithDescription("Jobs recorded as failed from the start: work that arrived but cannot run, such as a consumed message that is not a job spec."))),
		leased:    telemetry.Must(m.Int64Counter("spool.jobs.leased", metric.WithDescription("Leases handed to workers (one per attempt)."))),
		finished:  telemetry.Must(m.Int64Counter("spool.jobs.finished", metric.WithDescription("Jobs completed by their workers, by final state."))),
		published: telemetry.Must(m.Int64Counter("spool.events.published", metric.WithDescription("Events received from workers (a batch counts once), retries included."))),
		lines:     telemetry.Must(m.Int64Counter("spool.events.published.lines", metric.WithDescription("Output lines received from workers, retries included."))),
		released:  telemetry.Must(m.Int64Counter("spool.leases.released", metric.WithDescription("Leases handed back by stopping workers."))),
		deleted:   telemetry.Must(m.Int64Counter("spool.jobs.deleted", metric.WithDescription("Finished jobs deleted with their logs, by reason (operator, retention)."))),

		batchesStarted: telemetry.Must(m.Int64Counter("spool.scatter.batches.started", metric.WithDescription("Scatter batch jobs leased for their first attempt."))),

		ingestRequests: telemetry.Must(m.Int64Counter("spool.ingest.requests", metric.WithDescription("Deliveries of logs from elsewhere, by format and outcome (stored, refused, failed)."))),
		ingestEvents:   telemetry.Must(m.Int64Counter("spool.ingest.events", metric.WithDescription("Log events received from elsewhere, by format and outcome (accepted, duplicate)."))),
		ingestSources:  telemetry.Must(m.Int64Counter("spool.ingest.jobs.opened", metric.WithDescription("External jobs opened: a source's first events, or its first after its last job ended."))),
	}
	sm.scatter = scatter.Metrics{
		Enqueued:         sm.enqueued,
		BatchesCreated:   telemetry.Must(m.Int64Counter("spool.scatter.batches.created", metric.WithDescription("Scatter batches handed to their queue as jobs."))),
		BatchesCompleted: telemetry.Must(m.Int64Counter("spool.scatter.batches.completed", metric.WithDescription("Scatter batches whose job succeeded."))),
		BatchesFailed:    telemetry.Must(m.Int64Counter("spool.scatter.batches.failed", metric.WithDescription("Scatter batches whose job failed or was cancelled."))),
	}
	telemetry.Must(m.Int64ObservableGauge("spool.followers", metric.WithDescription("Clients following a job's output live on this server."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(w.total()))
			return nil
		})))
	return sm
}

// enqueueTally counts the jobs of a queue an enqueue created.
type enqueueTally struct{ enqueued, rejected int64 }

// jobsEnqueued adds what enqueues created in queue to the counters.
func (sm *metrics) jobsEnqueued(ctx context.Context, queue string, t enqueueTally) {
	if t.enqueued > 0 {
		sm.enqueued.Add(ctx, t.enqueued, sm.byQueue.of(queue, ""))
	}
	if t.rejected > 0 {
		sm.rejected.Add(ctx, t.rejected, sm.byQueue.of(queue, ""))
	}
}

func (sm *metrics) jobFinished(ctx context.Context, j *spoolv1.Job) {
	sm.finished.Add(ctx, 1, sm.byQueue.of(j.GetQueue(), convert.State(j.GetState()).String()))
}

func (sm *metrics) eventsPublished(ctx context.Context, evs []events.Published) {
	var lines int64
	for _, ev := range evs {
		lines += ev.LineCount
	}
	sm.published.Add(ctx, int64(len(evs)))
	sm.lines.Add(ctx, lines)
}
