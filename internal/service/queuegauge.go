package service

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
	"github.com/spool-run/spool/internal/telemetry"
)

// How often the queue gauge asks the store: counting may read every queued
// and running job (store.QueueStats), so scrapes that come more often
// (several Prometheus replicas, a person refreshing /metrics) share one
// count, and a store that does not answer holds a scrape up at most
// queueCountTimeout.
const (
	queueCountEvery   = 15 * time.Second
	queueCountTimeout = 5 * time.Second
)

// queueGauge reports the jobs queued and running in each queue, as the
// store counts them: the depth no counter can give (counters start again
// with each server, and each server counts only what it handled).
type queueGauge struct {
	st store.JobStore

	mu     sync.Mutex
	at     time.Time
	counts []store.QueueStats
}

func observeQueues(m metric.Meter, st store.JobStore) {
	g := &queueGauge{st: st}
	telemetry.Must(m.Int64ObservableGauge("spool.queue.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs queued and running in each queue now, as the store counts them (every server sharing the store reports the same)."),
		metric.WithInt64Callback(g.observe)))
}

func (g *queueGauge) observe(ctx context.Context, o metric.Int64Observer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); now.Sub(g.at) >= queueCountEvery {
		cctx, cancel := context.WithTimeout(ctx, queueCountTimeout)
		// Nothing that ended is wanted: since now, the store counts none.
		counts, err := g.st.QueueStats(cctx, storekit.Now())
		cancel()
		if err != nil {
			// Nothing is reported rather than old counts: a gap in the
			// graph says the store did not answer (its errors are counted).
			g.at, g.counts = time.Time{}, nil
			return nil
		}
		g.at, g.counts = now, counts
	}
	for _, q := range g.counts {
		o.Observe(q.Queued, metric.WithAttributes(attribute.String("queue", q.Name), attribute.String("state", "queued")))
		o.Observe(q.Running, metric.WithAttributes(attribute.String("queue", q.Name), attribute.String("state", "running")))
	}
	return nil
}
