package consumer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-run/spool/consumer"
)

// figures reads the consumer's metrics from a manual reader.
type figures struct {
	t      *testing.T
	reader *sdkmetric.ManualReader
}

func (f figures) collect() map[string]metricdata.Aggregation {
	f.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		f.t.Fatal(err)
	}
	out := make(map[string]metricdata.Aggregation)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "spool/consumer" {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// lag returns the lag gauge of partition 0 and whether it was observed.
func (f figures) lag() (int64, bool) {
	g, ok := f.collect()["spool.consumer.lag"].(metricdata.Gauge[int64])
	if !ok {
		return 0, false
	}
	want := attribute.NewSet(attribute.String("topic", topic), attribute.Int("partition", 0))
	for _, dp := range g.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value, true
		}
	}
	return 0, false
}

func sum(f map[string]metricdata.Aggregation, name string, attr ...attribute.KeyValue) int64 {
	s, _ := f[name].(metricdata.Sum[int64])
	set := attribute.NewSet(attr...)
	var n int64
	for _, dp := range s.DataPoints {
		if dp.Attributes.Equals(&set) {
			n += dp.Value
		}
	}
	return n
}

func TestMetrics(t *testing.T) {
	c := cluster(t, 1)
	reader := sdkmetric.NewManualReader()
	f := figures{t, reader}
	cfg := config(c, "g")
	cfg.BatchSize = 3
	cfg.BatchTimeout = time.Minute
	cfg.Meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var calls atomic.Int32
	inSecond := make(chan struct{})
	release := make(chan struct{})
	start(t, cfg, func(ctx context.Context, _ []consumer.Message) (bool, error) {
		switch calls.Add(1) {
		case 1:
			return false, nil // refused, then delivered again
		case 2:
			return true, nil
		case 3:
			return true, errRefused
		case 4:
			close(inSecond)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return true, nil
		}
		return true, nil
	})
	produce(t, c, 6, 0)
	<-inSecond
	// The second batch (offsets 3-5) is in the handler: none of it is
	// handled yet, and the fetch saw the high watermark 6.
	if lag, ok := f.lag(); !ok || lag != 3 {
		t.Fatalf("lag %d (observed: %v) with the second batch in the handler, want 3", lag, ok)
	}
	close(release)
	eventually(t, 10*time.Second, "offset 6 committed", func() bool { return committedAt(t, c, "g", 0) == 6 })
	eventually(t, 10*time.Second, "both commits counted", func() bool {
		return sum(f.collect(), "spool.consumer.commits", attribute.String("result", "ok")) == 2
	})

	got := f.collect()
	if lag, ok := f.lag(); !ok || lag != 0 {
		t.Errorf("lag %d (observed: %v) once all is handled, want 0", lag, ok)
	}
	if n := sum(got, "spool.consumer.redeliveries"); n != 2 {
		t.Errorf("redeliveries %d, want 2", n)
	}
	if n := sum(got, "spool.consumer.commits", attribute.String("result", "error")); n != 0 {
		t.Errorf("%d failed commits", n)
	}
	sizes, _ := got["spool.consumer.batch.size"].(metricdata.Histogram[int64])
	if len(sizes.DataPoints) != 1 || sizes.DataPoints[0].Count != 4 || sizes.DataPoints[0].Sum != 12 {
		t.Errorf("batch sizes %+v, want 4 batches of 3", sizes.DataPoints)
	}
	durations, _ := got["spool.consumer.handler.duration"].(metricdata.Histogram[float64])
	outcomes := make(map[string]uint64)
	for _, dp := range durations.DataPoints {
		o, _ := dp.Attributes.Value("outcome")
		outcomes[o.AsString()] += dp.Count
	}
	if outcomes["refused"] != 1 || outcomes["error"] != 1 || outcomes["commit"] != 2 || outcomes["panic"] != 0 {
		t.Errorf("handler outcomes %v", outcomes)
	}
}
