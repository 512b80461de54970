package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-run/spool/consumer"
)

// Two consumers share a group while messages flow: the second joins while
// the first works, then the first stops. Every message is handled and
// committed; a partition's batches never overlap, even across consumers;
// and since a revoked partition commits its last batch before it moves,
// the new owner starts right after it: no message is handled twice.
func TestRebalanceBetweenTwoConsumers(t *testing.T) {
	const partitions = 4
	c := cluster(t, partitions)
	var seen journal
	var inflight [partitions]atomic.Int32
	var handled [2]atomic.Int32
	handler := func(who int) consumer.Handler {
		return func(ctx context.Context, msgs []consumer.Message) (bool, error) {
			b := describe(msgs)
			if b.partition < 0 {
				t.Errorf("a batch mixes partitions: %v", msgs)
				return true, nil
			}
			if n := inflight[b.partition].Add(1); n > 1 {
				t.Errorf("%d batches of partition %d in handlers at once", n, b.partition)
			}
			defer inflight[b.partition].Add(-1)
			// A little work, so that batches are in the handler
			// when the rebalances come.
			select {
			case <-time.After(2 * time.Millisecond):
			case <-ctx.Done():
				return false, ctx.Err()
			}
			seen.add(b)
			handled[who].Add(int32(len(msgs)))
			return true, nil
		}
	}
	all := []int32{0, 1, 2, 3}
	owns := func(r *running) (n int) {
		for _, p := range all {
			if r.Buffered(p) >= 0 {
				n++
			}
		}
		return n
	}

	// Members leave by saying so here, so no rebalance waits for a
	// session to run out; a long session keeps a busy machine's late
	// heartbeats from losing one (a lost partition is handled again from
	// its last commit, as it must be, which is not what this test is of).
	long := kgo.SessionTimeout(30 * time.Second)
	first := startWith(t, config(c, "g"), handler(0), long)
	stream := startStream(t, c, all)
	eventually(t, 10*time.Second, "the first consumer at work", func() bool { return handled[0].Load() >= 20 })

	second := startWith(t, config(c, "g"), handler(1), long)
	eventually(t, 10*time.Second, "the second consumer at work", func() bool { return handled[1].Load() > 0 })
	if owns(first) == 0 || owns(first)+owns(second) != partitions {
		t.Fatalf("after the join, the consumers own %d and %d partitions", owns(first), owns(second))
	}

	first.shutdown(t)
	eventually(t, 10*time.Second, "the second consumer owning every partition", func() bool { return owns(second) == partitions })
	before := handled[1].Load()
	eventually(t, 10*time.Second, "the second consumer at work on them", func() bool { return handled[1].Load() > before+20 })
	produced := stream.stop()

	eventually(t, 15*time.Second, "every message committed", func() bool {
		offs := committed(t, c, "g")
		for _, p := range all {
			if offs[p].At != produced {
				return false
			}
		}
		return true
	})
	for _, p := range all {
		if got := seen.offsets(p); !slices.Equal(got, seq(0, produced)) {
			t.Errorf("partition %d: handled %v, want each of 0-%d once, in order", p, got, produced-1)
		}
	}
	second.shutdown(t)
}

// stream produces one message to each partition every few milliseconds
// until stopped.
type stream struct {
	quit chan struct{}
	done chan int64 // messages produced to each partition
}

func startStream(t *testing.T, c *kfake.Cluster, partitions []int32) *stream {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{quit: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		defer cl.Close()
		var n int64
		defer func() { s.done <- n }()
		for {
			select {
			case <-s.quit:
				return
			case <-time.After(3 * time.Millisecond):
			}
			var recs []*kgo.Record
			for _, p := range partitions {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, n)})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			n++
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop ends the stream and returns how many messages each partition got.
func (s *stream) stop() int64 {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	n, ok := <-s.done
	if ok {
		close(s.done)
	}
	return n
}

// A partition lost to the group (our session is declared over) cancels
// the handler's context and commits nothing, even if the handler then says
// commit: the batch comes again once the consumer has rejoined.
//
// kfake forces the loss: it answers a heartbeat with ILLEGAL_GENERATION,
// which kgo treats as a lost session (OnPartitionsLost), as when a real
// broker expired the member.
func TestLostPartitionCancelsTheHandler(t *testing.T) {
	c := cluster(t, 1)
	entered := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	var seen journal
	var calls atomic.Int32
	start(t, config(c, "g"), func(ctx context.Context, msgs []consumer.Message) (bool, error) {
		seen.add(describe(msgs))
		if calls.Add(1) == 1 {
			entered <- struct{}{}
			<-ctx.Done()
			cancelled <- ctx.Err()
			return true, nil // too late: must not be committed
		}
		return true, nil
	})
	produce(t, c, 3, 0)
	receive(t, entered, "the first batch in the handler")
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Err: kerr.IllegalGeneration})
	if err := receive(t, cancelled, "the handler's context cancelled"); err == nil {
		t.Fatal("no context error")
	}
	if fault.Hits() != 1 {
		t.Fatalf("the fault answered %d heartbeats", fault.Hits())
	}
	eventually(t, 10*time.Second, "offset 3 committed after the rejoin", func() bool { return committedAt(t, c, "g", 0) == 3 })
	got := seen.all()
	if len(got) != 2 || got[0].String() != "p0[0 1 2]" || got[1].String() != "p0[0 1 2]" {
		t.Fatalf("deliveries %v, want the lost batch then the same batch again", got)
	}
}

// A batch waiting out its backoff when its partition is revoked is not
// retried here: the partition goes at once, uncommitted, and its next
// owner gets the batch.
func TestRevokeDropsARefusedBatch(t *testing.T) {
	c := cluster(t, 2)
	cfg := config(c, "g")
	cfg.RetryBackoff, cfg.MaxRetryBackoff = time.Minute, time.Minute
	var firstCalls [2]atomic.Int32
	refused := make(chan struct{}, 2)
	first := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		firstCalls[msgs[0].Partition].Add(1)
		refused <- struct{}{}
		return false, nil
	})
	produce(t, c, 3, 0, 1)
	receive(t, refused, "a refusal")
	receive(t, refused, "the other refusal")

	batches := make(chan batch, 10)
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		return true, nil
	})
	b := receive(t, batches, "the moved partition's batch")
	if b.offsets[0] != 0 {
		t.Fatalf("the new owner started at %v", b)
	}
	if n := firstCalls[b.partition].Load(); n != 1 {
		t.Fatalf("the first consumer handled the revoked batch %d times, want once", n)
	}
	if first.Buffered(b.partition) != -1 {
		t.Fatal("the first consumer still owns the moved partition")
	}
}

// A group with no committed offset and StartAtLatest starts at the
// messages produced after it joined: the old ones never come.
func TestStartAtLatest(t *testing.T) {
	c := cluster(t, 1)
	produce(t, c, 3, 0)
	cfg := config(c, "g")
	cfg.StartAtLatest = true
	batches := make(chan batch, 100)
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		return true, nil
	})
	// When the consumer's start offset is settled cannot be seen from
	// here: produce until something arrives.
	deadline := time.After(10 * time.Second)
	for {
		produce(t, c, 1, 0)
		select {
		case b := <-batches:
			if b.offsets[0] < 3 {
				t.Fatalf("got %v, produced before the consumer started", b)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("nothing consumed")
		}
	}
}
