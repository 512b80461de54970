package consumer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/spool-run/spool/consumer"
)

// A commit the broker fails is counted and consumption carries on: the
// partition's next commit covers it, and a graceful stop commits the newest
// handled offset when the last commit failed.
//
// kfake fails one OffsetCommit at a time on request, which stands in for
// a broker that is briefly away.
func TestFailedCommitsAreCoveredLater(t *testing.T) {
	c := cluster(t, 1)
	reader := sdkmetric.NewManualReader()
	f := figures{t, reader}
	cfg := config(c, "g")
	cfg.BatchSize = 2
	cfg.BatchTimeout = time.Minute
	cfg.Meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	handled := make(chan batch, 10)
	r := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		handled <- describe(msgs)
		return true, nil
	})
	failOne := func() *kfake.FaultHandle {
		return c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Topic: topic, Err: kerr.UnknownServerError})
	}
	waitFailed := func(h *kfake.FaultHandle) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Wait(ctx, 1); err != nil {
			t.Fatal("no commit reached the broker")
		}
	}
	failed := func() int64 {
		return sum(f.collect(), "spool.consumer.commits", attribute.String("result", "error"))
	}

	fault := failOne()
	produce(t, c, 2, 0)
	receive(t, handled, "batch 0-1")
	waitFailed(fault)
	eventually(t, 5*time.Second, "the failed commit counted", func() bool { return failed() == 1 })
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("committed %d though the broker failed the commit", got)
	}

	produce(t, c, 2, 0)
	receive(t, handled, "batch 2-3")
	eventually(t, 10*time.Second, "offset 4 committed", func() bool { return committedAt(t, c, "g", 0) == 4 })

	fault = failOne()
	produce(t, c, 2, 0)
	receive(t, handled, "batch 4-5")
	waitFailed(fault)
	eventually(t, 5*time.Second, "the second failed commit counted", func() bool { return failed() == 2 })
	if got := committedAt(t, c, "g", 0); got != 4 {
		t.Fatalf("committed %d after a failed commit, want 4 still", got)
	}
	r.shutdown(t)
	if got := committedAt(t, c, "g", 0); got != 6 {
		t.Fatalf("committed %d after the graceful stop, want 6", got)
	}
}

// NoCommit handles batches and commits nothing, not even on a graceful
// stop: the group's offsets stay where they were, and the next consumer of
// the group reads the same messages again.
func TestNoCommit(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.BatchSize = 2
	handled := make(chan batch, 20)
	handler := func(_ context.Context, msgs []consumer.Message) (bool, error) {
		handled <- describe(msgs)
		return true, nil
	}
	// A consumer that commits takes the group to offset 2.
	produce(t, c, 2, 0)
	r := start(t, cfg, handler)
	receive(t, handled, "batch 0-1")
	eventually(t, 10*time.Second, "offset 2 committed", func() bool { return committedAt(t, c, "g", 0) == 2 })
	r.shutdown(t)

	produce(t, c, 4, 0)
	dry := cfg
	dry.NoCommit = true
	for run := range 2 {
		r := start(t, dry, handler)
		var got []int64
		for len(got) < 4 {
			got = append(got, receive(t, handled, "a batch without commit").offsets...)
		}
		if !slices.Equal(got, seq(2, 6)) {
			t.Fatalf("run %d without commit: handled %v, want 2-5 (from the committed offset)", run, got)
		}
		r.shutdown(t)
		if at := committedAt(t, c, "g", 0); at != 2 {
			t.Fatalf("run %d without commit moved the committed offset to %d", run, at)
		}
	}

	// The group's next committing consumer reads them again.
	r = start(t, cfg, handler)
	if b := receive(t, handled, "the first batch after the runs without commit"); !slices.Equal(b.offsets, []int64{2, 3}) {
		t.Fatalf("after the runs without commit: batch %v, want offsets 2-3", b)
	}
	eventually(t, 10*time.Second, "offset 6 committed", func() bool { return committedAt(t, c, "g", 0) == 6 })
	r.shutdown(t)
}
