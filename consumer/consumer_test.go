package consumer_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-run/spool/consumer"
)

func TestBatchesBySize(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.BatchTimeout = time.Minute // only size can cut a batch here
	batches := make(chan batch, 10)
	firstMsgs := make(chan []consumer.Message, 1)
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		if msgs[0].Offset == 0 {
			firstMsgs <- msgs
		}
		batches <- describe(msgs)
		return true, nil
	})
	before := time.Now().Add(-time.Second)
	produce(t, c, 10, 0)
	m := receive(t, firstMsgs, "the first batch")[1]
	if m.Topic != topic || m.Partition != 0 || m.Offset != 1 || string(m.Key) != "1" || string(m.Value) != "p0-1" ||
		len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != "1" || m.Timestamp.Before(before) {
		t.Fatalf("message %+v", m)
	}
	first := receive(t, batches, "the first batch")
	second := receive(t, batches, "the second batch")
	if !slices.Equal(first.offsets, seq(0, 5)) || !slices.Equal(second.offsets, seq(5, 10)) {
		t.Fatalf("batches %v %v, want offsets 0-4 and 5-9", first, second)
	}
	if first.values[0] != "p0-0" || second.values[4] != "p0-9" {
		t.Fatalf("values %v %v", first.values, second.values)
	}
}

func TestPartialBatchAfterTimeout(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.BatchSize = 100
	cfg.BatchTimeout = 300 * time.Millisecond
	batches := make(chan batch, 10)
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		return true, nil
	})
	produced := time.Now()
	produce(t, c, 3, 0)
	b := receive(t, batches, "the partial batch")
	if !slices.Equal(b.offsets, seq(0, 3)) {
		t.Fatalf("batch %v, want offsets 0-2", b)
	}
	// The timeout counts from the first message's arrival, which is
	// after it was produced.
	if waited := b.at.Sub(produced); waited < cfg.BatchTimeout {
		t.Fatalf("the partial batch came after %v, before the %v timeout", waited, cfg.BatchTimeout)
	}
}

// Each partition's batches come in offset order, one at a time, never
// mixed with another partition's, while partitions run side by side.
func TestPartitionsInOrderAndConcurrent(t *testing.T) {
	c := cluster(t, 2)
	cfg := config(c, "g")
	var seen journal
	var inflight [2]atomic.Int32
	bothIn := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	var firstOnce [2]sync.Once
	go func() {
		arrived.Wait()
		close(bothIn)
	}()
	start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		b := describe(msgs)
		if b.partition < 0 {
			t.Errorf("a batch mixes partitions: %v", msgs)
			return true, nil
		}
		if n := inflight[b.partition].Add(1); n > 1 {
			t.Errorf("%d batches of partition %d in the handler at once", n, b.partition)
		}
		defer inflight[b.partition].Add(-1)
		seen.add(b)
		// The first batch of each partition waits until the other
		// partition's first batch is in the handler too: they can
		// only both get there if partitions run concurrently.
		firstOnce[b.partition].Do(func() {
			arrived.Done()
			select {
			case <-bothIn:
			case <-time.After(10 * time.Second):
				t.Errorf("partition %d's handler never overlapped the other's", b.partition)
			}
		})
		return true, nil
	})
	produce(t, c, 23, 0, 1)
	eventually(t, 10*time.Second, "all 46 messages", func() bool {
		return len(seen.offsets(0)) == 23 && len(seen.offsets(1)) == 23
	})
	for p := range int32(2) {
		if got := seen.offsets(p); !slices.Equal(got, seq(0, 23)) {
			t.Errorf("partition %d: offsets %v, want 0-22 in order", p, got)
		}
	}
	for _, b := range seen.all() {
		if len(b.offsets) > cfg.BatchSize {
			t.Errorf("batch %v is larger than %d", b, cfg.BatchSize)
		}
	}
}

// commit=true commits exactly the batch: the offset after its last
// message, with the record's leader epoch, before the next batch starts.
func TestCommitsExactlyTheBatch(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.BatchTimeout = time.Minute
	batches := make(chan batch, 10)
	release := make(chan bool)
	start(t, cfg, func(ctx context.Context, msgs []consumer.Message) (bool, error) {
		batches <- describe(msgs)
		select {
		case ok := <-release:
			return ok, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	})
	produce(t, c, 12, 0)
	if b := receive(t, batches, "batch 0-4"); b.offsets[0] != 0 {
		t.Fatalf("first batch %v", b)
	}
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("committed %d while the first batch is in the handler", got)
	}
	release <- true
	if b := receive(t, batches, "batch 5-9"); b.offsets[0] != 5 {
		t.Fatalf("second batch %v", b)
	}
	// The next batch starts only after the commit returned.
	o := committed(t, c, "g")[0]
	if o.At != 5 {
		t.Fatalf("committed %d after the first batch, want 5", o.At)
	}
	if o.LeaderEpoch < 0 {
		t.Fatalf("the commit lost the leader epoch: %d", o.LeaderEpoch)
	}
	release <- true
	eventually(t, 5*time.Second, "offset 10 committed", func() bool { return committedAt(t, c, "g", 0) == 10 })
}

// A batch the handler does not commit, for each way of not committing, is
// delivered again in the same process until it is; later messages wait.
func TestRedeliversTheSameBatch(t *testing.T) {
	for _, how := range []string{"refuse", "error", "panic"} {
		t.Run(how, func(t *testing.T) {
			c := cluster(t, 1)
			cfg := config(c, "g")
			cfg.BatchSize = 3
			cfg.BatchTimeout = time.Minute
			var seen journal
			calls := make(chan int, 10)
			var n atomic.Int32
			proceed := make(chan struct{})
			start(t, cfg, func(ctx context.Context, msgs []consumer.Message) (bool, error) {
				seen.add(describe(msgs))
				call := int(n.Add(1))
				calls <- call
				if call == 4 {
					select { // hold the success until the test has looked
					case <-proceed:
					case <-ctx.Done():
					}
				}
				if call <= 3 {
					switch how {
					case "refuse":
						return false, nil
					case "error":
						return true, errRefused // an error wins over commit=true
					default:
						panic("handler bug")
					}
				}
				return true, nil
			})
			produce(t, c, 6, 0)
			for want := 1; want <= 3; want++ {
				receive(t, calls, "a failed delivery")
			}
			receive(t, calls, "the fourth delivery")
			if got := committedAt(t, c, "g", 0); got != -1 {
				t.Fatalf("committed %d after failed deliveries", got)
			}
			close(proceed)
			receive(t, calls, "the next batch")
			want := []string{"p0[0 1 2]", "p0[0 1 2]", "p0[0 1 2]", "p0[0 1 2]", "p0[3 4 5]"}
			var got []string
			for _, b := range seen.all() {
				got = append(got, b.String())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("deliveries %v, want %v", got, want)
			}
			eventually(t, 5*time.Second, "offset 6 committed", func() bool { return committedAt(t, c, "g", 0) == 6 })
		})
	}
}

// A partition stuck on a refused batch stops being fetched once a few
// batches wait behind it, while the other partitions carry on; once the
// batch passes, the partition resumes and catches up.
func TestStuckPartitionPausesFetching(t *testing.T) {
	c := cluster(t, 2)
	var fetches atomic.Int64
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fetches.Add(1)
		return nil, nil, false // the broker answers as usual
	})
	cfg := config(c, "g")
	cfg.BatchSize = 2
	var stuck atomic.Bool
	stuck.Store(true)
	var seen journal
	r := start(t, cfg, func(_ context.Context, msgs []consumer.Message) (bool, error) {
		b := describe(msgs)
		if b.partition == 0 && stuck.Load() {
			return false, nil
		}
		seen.add(b)
		return true, nil
	})
	produce(t, c, 20, 0, 1)
	paused := func() bool { return slices.Contains(r.Client().PauseFetchPartitions(nil)[topic], 0) }
	eventually(t, 10*time.Second, "partition 0 paused", paused)
	eventually(t, 10*time.Second, "partition 1 done", func() bool { return committedAt(t, c, "g", 1) == 20 })
	if slices.Contains(r.Client().PauseFetchPartitions(nil)[topic], 1) {
		t.Fatal("partition 1 is paused though it keeps up")
	}
	buffered := r.Buffered(0)
	produce(t, c, 200, 0)
	// Fetches go on for partition 1: three more reach the broker, so at
	// least two whole rounds could have wrongly brought partition 0's new
	// messages.
	fetched := fetches.Load()
	produce(t, c, 1, 1)
	eventually(t, 10*time.Second, "partition 1's new message", func() bool { return committedAt(t, c, "g", 1) == 21 })
	eventually(t, 10*time.Second, "three more fetches", func() bool { return fetches.Load() >= fetched+3 })
	if got := r.Buffered(0); got != buffered {
		t.Fatalf("partition 0 buffered %d messages while paused, had %d", got, buffered)
	}
	if got := committedAt(t, c, "g", 0); got != -1 {
		t.Fatalf("partition 0 committed %d while stuck", got)
	}
	stuck.Store(false)
	eventually(t, 10*time.Second, "partition 0 caught up", func() bool { return committedAt(t, c, "g", 0) == 220 })
	if got := seen.offsets(0); !slices.Equal(got, seq(0, 220)) {
		t.Fatalf("partition 0 handled %d offsets, not 0-219 in order", len(got))
	}
	eventually(t, 5*time.Second, "partition 0 resumed", func() bool { return !paused() })
}

// A handler that runs past the threshold (a minute; shortened here) is
// logged while it runs.
func TestSlowHandlerIsLogged(t *testing.T) {
	c := cluster(t, 1)
	warned := make(chan string, 10)
	cfg := config(c, "g")
	cfg.BatchSize = 1
	cfg.Logger = slog.New(handlerFunc(func(r slog.Record) {
		if r.Level == slog.LevelWarn {
			select {
			case warned <- r.Message:
			default: // never block the consumer's logging
			}
		}
	}))
	done := make(chan struct{})
	cons, err := consumer.NewWithHooks(cfg, func(ctx context.Context, _ []consumer.Message) (bool, error) {
		select {
		case <-done:
		case <-ctx.Done():
		}
		return true, nil
	}, consumer.TestHooks{Kgo: fastGroup, SlowHandler: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cons.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = cons.Shutdown(ctx)
	})
	produce(t, c, 1, 0)
	for msg := receive(t, warned, "a warning"); msg != "consumer: handler is slow"; msg = receive(t, warned, "a warning") {
	}
	close(done)
}

// handlerFunc is a slog handler that passes every record to a function.
type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }
