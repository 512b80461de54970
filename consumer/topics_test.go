package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/consumer"
)

// byTopic records what a handler was given, by topic and partition, and
// fails the test on a batch that mixes them.
type byTopic struct {
	t  *testing.T
	mu sync.Mutex
	m  map[string][]string // "topic/partition" -> values, in order
}

func (b *byTopic) handler(_ context.Context, msgs []consumer.Message) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := fmt.Sprintf("%s/%d", msgs[0].Topic, msgs[0].Partition)
	for i, m := range msgs {
		if m.Topic != msgs[0].Topic || m.Partition != msgs[0].Partition {
			b.t.Errorf("a batch mixes %s and %s/%d", key, m.Topic, m.Partition)
		}
		if i > 0 && m.Offset != msgs[i-1].Offset+1 {
			b.t.Errorf("%s: offset %d after %d", key, m.Offset, msgs[i-1].Offset)
		}
		b.m[key] = append(b.m[key], string(m.Value))
	}
	return true, nil
}

func (b *byTopic) get(key string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.m[key])
}

func (b *byTopic) keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// One consumer, several topics: both topics' messages come to the one
// handler, each batch of one partition of one topic, and each topic's
// offsets are committed.
func TestSeveralTopics(t *testing.T) {
	c := cluster(t, 2, kfake.SeedTopics(1, "audit"), kfake.SeedTopics(1, "other"))
	seen := &byTopic{t: t, m: make(map[string][]string)}
	cfg := config(c, "g")
	cfg.Topic, cfg.Topics = "", []string{topic, "audit"}
	r := start(t, cfg, seen.handler)
	produce(t, c, 7, 0, 1)
	produceTo(t, c, "audit", "a0", "a1", "a2")
	produceTo(t, c, "other", "not for us")
	eventually(t, 10*time.Second, "every message of both topics", func() bool {
		return len(seen.get("events/0")) == 7 && len(seen.get("events/1")) == 7 && len(seen.get("audit/0")) == 3
	})
	if got := seen.get("audit/0"); !slices.Equal(got, []string{"a0", "a1", "a2"}) {
		t.Errorf("audit: %q", got)
	}
	if got := seen.get("events/1"); got[0] != "p1-0" || got[6] != "p1-6" {
		t.Errorf("events/1: %q", got)
	}
	eventually(t, 10*time.Second, "both topics committed", func() bool {
		ev, au := committed(t, c, "g"), committedIn(t, c, "g", "audit")
		return ev[0].At == 7 && ev[1].At == 7 && au[0].At == 3
	})
	r.shutdown(t)
	if got := seen.keys(); !slices.Equal(got, []string{"audit/0", "events/0", "events/1"}) {
		t.Errorf("partitions handled: %v", got)
	}
}

// TopicRegex consumes the topics whose whole name matches, those there at
// the start and those created later, and no other.
func TestTopicRegex(t *testing.T) {
	c := cluster(t, 1, kfake.SeedTopics(1, "orders-eu", "payments", "orders-eu-old"))
	seen := &byTopic{t: t, m: make(map[string][]string)}
	cfg := config(c, "g")
	cfg.Topic, cfg.TopicRegex = "", `orders-(eu|us)`
	cfg.TopicRefresh = 100 * time.Millisecond
	r := startWith(t, cfg, seen.handler, kgo.MetadataMinAge(50*time.Millisecond), kgo.MetadataMaxAge(200*time.Millisecond))

	produceTo(t, c, "orders-eu", "eu0", "eu1")
	produceTo(t, c, "payments", "pay0")
	produceTo(t, c, "orders-eu-old", "old0")
	eventually(t, 10*time.Second, "the orders-eu messages", func() bool { return len(seen.get("orders-eu/0")) == 2 })

	// Created while the consumer runs: one that matches, one that only
	// contains a match.
	adm := kadm.NewClient(mustClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"orders-us", "old-orders-us"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	produceTo(t, c, "orders-us", "us0", "us1", "us2")
	produceTo(t, c, "old-orders-us", "oldus0")
	eventually(t, 10*time.Second, "the messages of orders-us, created later", func() bool { return len(seen.get("orders-us/0")) == 3 })
	produceTo(t, c, "orders-eu", "eu2")
	eventually(t, 10*time.Second, "orders-eu still consumed", func() bool { return len(seen.get("orders-eu/0")) == 3 })

	eventually(t, 10*time.Second, "orders-us committed", func() bool { return committedIn(t, c, "g", "orders-us")[0].At == 3 })

	// A matching topic deleted is dropped: its partitions leave the
	// consumer, and the others carry on.
	if _, err := adm.DeleteTopic(ctx, "orders-us"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "orders-us's partitions dropped", func() bool {
		return r.BufferedIn("orders-us", 0) == -1 && r.BufferedIn("orders-us", 1) == -1
	})
	produceTo(t, c, "orders-eu", "eu3")
	eventually(t, 10*time.Second, "orders-eu consumed after the deletion", func() bool { return len(seen.get("orders-eu/0")) == 4 })
	r.shutdown(t)

	if got := seen.keys(); !slices.Equal(got, []string{"orders-eu/0", "orders-us/0"}) {
		t.Errorf("partitions handled: %v, want only orders-eu's and orders-us's", got)
	}
}

func mustClient(t *testing.T, c *kfake.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestConsumes(t *testing.T) {
	ok := func(context.Context, []consumer.Message) (bool, error) { return true, nil }
	for _, tc := range []struct {
		cfg      consumer.Config
		yes, not []string
	}{
		{consumer.Config{Topic: "jobs"}, []string{"jobs"}, []string{"jobs-dead", "job"}},
		{consumer.Config{Topics: []string{"a", "b"}}, []string{"a", "b"}, []string{"c", "ab"}},
		// The whole name must match.
		{consumer.Config{TopicRegex: "jobs-.*"}, []string{"jobs-eu", "jobs-"}, []string{"old-jobs-eu", "jobs"}},
		{consumer.Config{TopicRegex: "a|b"}, []string{"a", "b"}, []string{"ab", "xa"}},
	} {
		tc.cfg.Brokers, tc.cfg.Group = []string{"127.0.0.1:9092"}, "g"
		c, err := consumer.New(tc.cfg, ok)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tc.yes {
			if !c.Consumes(n) {
				t.Errorf("%+v does not consume %q", tc.cfg, n)
			}
		}
		for _, n := range tc.not {
			if c.Consumes(n) {
				t.Errorf("%+v consumes %q", tc.cfg, n)
			}
		}
		_ = c.Shutdown(context.Background())
	}
}
