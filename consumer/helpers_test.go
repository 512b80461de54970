package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/consumer"
)

const topic = "events"

// cluster starts a kfake cluster with topic in the given number of
// partitions. Groups may use short sessions, which keeps rebalances quick.
func cluster(t *testing.T, partitions int32, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, topic),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fastGroup shortens kgo's group and fetch timings so that joins,
// rebalances and the detection of a lost session take a fraction of a
// second instead of several.
var fastGroup = []kgo.Opt{
	kgo.HeartbeatInterval(100 * time.Millisecond),
	kgo.SessionTimeout(2 * time.Second),
	kgo.RebalanceTimeout(5 * time.Second),
	kgo.FetchMaxWait(100 * time.Millisecond),
	kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
}

// testLogger logs to stderr when CONSUMER_TEST_LOG is set (debugging),
// and nowhere otherwise.
func testLogger() *slog.Logger {
	if os.Getenv("CONSUMER_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// config is a consumer config for the cluster c.
func config(c *kfake.Cluster, group string) consumer.Config {
	return consumer.Config{
		Brokers:         c.ListenAddrs(),
		Topic:           topic,
		Group:           group,
		BatchSize:       5,
		BatchTimeout:    100 * time.Millisecond,
		RetryBackoff:    10 * time.Millisecond,
		MaxRetryBackoff: 50 * time.Millisecond,
		Logger:          testLogger(),
	}
}

// running is a consumer whose Run goes on in the background.
type running struct {
	*consumer.Consumer
	done chan error // Run's result
}

// start makes and runs a consumer; the test's end stops it at once if it
// still runs.
func start(t *testing.T, cfg consumer.Config, h consumer.Handler) *running {
	t.Helper()
	return startWith(t, cfg, h)
}

// startWith is start with kgo options of the test's own after fastGroup.
func startWith(t *testing.T, cfg consumer.Config, h consumer.Handler, extra ...kgo.Opt) *running {
	t.Helper()
	c, err := consumer.NewWithHooks(cfg, h, consumer.TestHooks{Kgo: append(slices.Clone(fastGroup), extra...)})
	if err != nil {
		t.Fatal(err)
	}
	r := &running{Consumer: c, done: make(chan error, 1)}
	go func() { r.done <- c.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = c.Shutdown(ctx)
	})
	return r
}

// shutdown stops r gracefully and checks that Run returned nil.
func (r *running) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// produce writes n messages to each given partition: key "<i>", value
// "p<partition>-<i>" and a header n=<i>.
func produce(t *testing.T, c *kfake.Cluster, n int, partitions ...int32) {
	t.Helper()
	var recs []*kgo.Record
	for _, p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprint(i)), Value: fmt.Appendf(nil, "p%d-%d", p, i),
				Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(i))}}})
		}
	}
	produceRecords(t, c, recs)
}

// produceRecords writes recs, each to the partition it names, and waits
// until the cluster has them.
func produceRecords(t *testing.T, c *kfake.Cluster, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committed returns the group's committed offsets of topic, by partition.
func committed(t *testing.T, c *kfake.Cluster, group string) map[int32]kadm.Offset {
	t.Helper()
	return committedIn(t, c, group, topic)
}

// committedIn returns the group's committed offsets of one topic, by
// partition.
func committedIn(t *testing.T, c *kfake.Cluster, group, topic string) map[int32]kadm.Offset {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32]kadm.Offset)
	for p, o := range resp[topic] {
		if o.Err != nil {
			t.Fatalf("offset of partition %d: %v", p, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}

// produceTo writes one message a value to partition 0 of topic.
func produceTo(t *testing.T, c *kfake.Cluster, topic string, values ...string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	produceRecords(t, c, recs)
}

// committedAt returns the committed offset of one partition, -1 if none.
func committedAt(t *testing.T, c *kfake.Cluster, group string, p int32) int64 {
	t.Helper()
	if o, ok := committed(t, c, group)[p]; ok {
		return o.At
	}
	return -1
}

// eventually polls cond until it holds or d passes. It is for states that
// have no signal of their own (a broker's committed offsets).
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// receive waits for a value from ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// batch is what a handler saw of one delivery.
type batch struct {
	partition int32
	offsets   []int64
	values    []string
	at        time.Time
}

func (b batch) String() string { return fmt.Sprintf("p%d%v", b.partition, b.offsets) }

func describe(msgs []consumer.Message) batch {
	b := batch{partition: -1, at: time.Now()}
	for i, m := range msgs {
		if i == 0 {
			b.partition = m.Partition
		} else if m.Partition != b.partition {
			b.partition = -2 // mixed: tests fail on it
		}
		b.offsets = append(b.offsets, m.Offset)
		b.values = append(b.values, string(m.Value))
	}
	return b
}

// journal is a concurrency-safe list of batches.
type journal struct {
	mu      sync.Mutex
	batches []batch
}

func (l *journal) add(b batch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches = append(l.batches, b)
}

func (l *journal) all() []batch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.batches)
}

// offsets returns the offsets handed over for partition p, in order.
func (l *journal) offsets(p int32) []int64 {
	var out []int64
	for _, b := range l.all() {
		if b.partition == p {
			out = append(out, b.offsets...)
		}
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

var errRefused = errors.New("not now")
