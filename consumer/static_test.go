package consumer_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-run/spool/consumer"
)

// requests counts the JoinGroup requests kfake receives, by instance id
// ("" for a dynamic member), and the heartbeats. A member that is
// rebalanced joins again, so these counts show who was.
type requests struct {
	mu         sync.Mutex
	joins      map[string]int
	heartbeats int
}

func countRequests(c *kfake.Cluster) *requests {
	r := &requests{joins: make(map[string]int)}
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		id := ""
		if j := req.(*kmsg.JoinGroupRequest); j.InstanceID != nil {
			id = *j.InstanceID
		}
		r.mu.Lock()
		r.joins[id]++
		r.mu.Unlock()
		return nil, nil, false // kfake handles it as usual
	})
	c.ControlKey(int16(kmsg.Heartbeat), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r.mu.Lock()
		r.heartbeats++
		r.mu.Unlock()
		return nil, nil, false
	})
	return r
}

func (r *requests) joinsOf(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.joins[id]
}

func (r *requests) beats() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heartbeats
}

// owned lists the partitions of topic that r owns.
func owned(r *running, partitions int32) []int32 {
	var out []int32
	for p := range partitions {
		if r.Buffered(p) >= 0 {
			out = append(out, p)
		}
	}
	return out
}

// events records the rebalance events a consumer logs: its partitions
// assigned, revoked or lost.
type events struct {
	mu   sync.Mutex
	msgs []string
}

func (e *events) Enabled(context.Context, slog.Level) bool { return true }
func (e *events) WithAttrs([]slog.Attr) slog.Handler       { return e }
func (e *events) WithGroup(string) slog.Handler            { return e }
func (e *events) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "consumer: partitions ") {
		e.mu.Lock()
		e.msgs = append(e.msgs, strings.TrimPrefix(r.Message, "consumer: partitions "))
		e.mu.Unlock()
	}
	return nil
}

func (e *events) since(n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.msgs[n:])
}

func (e *events) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.msgs)
}

// While a static member is away (restarting), the group does not
// rebalance: the other member keeps heartbeating undisturbed, with its own
// partitions only, and the restarted member gets its partitions back.
// Without InstanceID the member leaves and the other one takes over all
// the partitions meanwhile, which shows that the test would notice.
//
// On the rejoin kfake replaces the static member in place (the group has
// two members after it, not a third waiting for its session to end) but,
// unlike Kafka, it compares the members' subscription bytes, in which
// kgo's cooperative-sticky balancer keeps each member's owned partitions;
// so kfake still runs a rebalance there, in which the other member
// rejoins, keeps its partitions and revokes nothing. Kafka skips it.
func TestStaticMembership(t *testing.T) {
	const partitions = 4
	for _, static := range []bool{true, false} {
		name := map[bool]string{true: "static", false: "dynamic"}[static]
		t.Run(name, func(t *testing.T) {
			c := cluster(t, partitions)
			reqs := countRequests(c)
			handled := make(chan batch, 100)
			handler := func(_ context.Context, msgs []consumer.Message) (bool, error) {
				handled <- describe(msgs)
				return true, nil
			}
			member := func(id string, log *slog.Logger) consumer.Config {
				cfg := config(c, "g")
				if static {
					cfg.InstanceID = id
				}
				if log != nil {
					cfg.Logger = log
				}
				return cfg
			}
			idB := ""
			if static {
				idB = "consumer-b"
			}
			// A session long enough for the restart, however slow
			// the machine.
			long := kgo.SessionTimeout(20 * time.Second)
			a := startWith(t, member("consumer-a", nil), handler, long)
			eventually(t, 10*time.Second, "a owning every partition", func() bool { return len(owned(a, partitions)) == partitions })
			evB := new(events)
			b := startWith(t, member("consumer-b", slog.New(evB)), handler, long)
			eventually(t, 10*time.Second, "a and b sharing the partitions", func() bool {
				na, nb := len(owned(a, partitions)), len(owned(b, partitions))
				return na > 0 && nb > 0 && na+nb == partitions
			})
			ofA, ofB := owned(a, partitions), owned(b, partitions)
			before, joinsB := evB.count(), reqs.joinsOf(idB)

			a.shutdown(t)
			if !static {
				eventually(t, 10*time.Second, "b taking a's partitions over", func() bool { return len(owned(b, partitions)) == partitions })
				return
			}
			// Three heartbeats of b answered: a rebalance would have
			// answered them REBALANCE_IN_PROGRESS and made b rejoin.
			beats := reqs.beats()
			eventually(t, 10*time.Second, "three heartbeats of b", func() bool { return reqs.beats() >= beats+3 })
			if n := reqs.joinsOf(idB); n != joinsB {
				t.Errorf("b joined the group %d more times while a was away: it was rebalanced", n-joinsB)
			}
			if got := owned(b, partitions); !slices.Equal(got, ofB) {
				t.Errorf("while a was away b owns %v, it owned %v", got, ofB)
			}

			a = startWith(t, member("consumer-a", nil), handler, long)
			eventually(t, 10*time.Second, "a owning its partitions again", func() bool { return slices.Equal(owned(a, partitions), ofA) })
			produce(t, c, 1, 0, 1, 2, 3)
			seen := map[int32]bool{}
			for len(seen) < partitions {
				seen[receive(t, handled, "a batch after the restart").partition] = true
			}
			if got := owned(b, partitions); !slices.Equal(got, ofB) {
				t.Errorf("b owns %v, it owned %v", got, ofB)
			}
			if got := evB.since(before); len(got) > 0 {
				t.Errorf("b's partitions moved while a restarted: %q", got)
			}
			// What kgo is given: the instance id, on the first join
			// and on the rejoin after the restart.
			if n := reqs.joinsOf("consumer-a"); n < 2 {
				t.Errorf("a joined %d times with its instance id, want its first join and its rejoin", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			groups, err := kadm.NewClient(mustClient(t, c)).DescribeGroups(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range groups["g"].Members {
				if m.InstanceID != nil {
					ids = append(ids, *m.InstanceID)
				}
			}
			slices.Sort(ids)
			if len(groups["g"].Members) != 2 || !slices.Equal(ids, []string{"consumer-a", "consumer-b"}) {
				t.Errorf("the group's members after the restart: %d, instance ids %v", len(groups["g"].Members), ids)
			}
			a.shutdown(t)
			b.shutdown(t)
		})
	}
}

// Two consumers given the same InstanceID: the second fences the first,
// whose Run returns an error that says what happened instead of fencing
// the second back, and so on.
func TestStaticMembershipFenced(t *testing.T) {
	c := cluster(t, 1)
	cfg := config(c, "g")
	cfg.InstanceID = "twin"
	handler := func(context.Context, []consumer.Message) (bool, error) { return true, nil }
	first := start(t, cfg, handler)
	eventually(t, 10*time.Second, "the first owning the partition", func() bool { return first.Buffered(0) >= 0 })
	second := start(t, cfg, handler)
	err := receive(t, first.done, "the first consumer's Run to return")
	if !errors.Is(err, kerr.FencedInstanceID) || !strings.Contains(err.Error(), `instance id "twin"`) {
		t.Fatalf("Run of the fenced consumer: %v", err)
	}
	eventually(t, 10*time.Second, "the second owning the partition", func() bool { return second.Buffered(0) >= 0 })
	second.shutdown(t)
}
