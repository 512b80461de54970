package consumer

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The group callbacks. kgo calls them one at a time, never while polled
// records are being handed out (BlockRebalanceOnPoll), and, for a revoke,
// while the group generation is still valid, so commits made before they
// return still count.

// onAssigned starts a worker for each partition we got. kgo starts
// fetching them only after this returns, so a worker is always there for
// their records.
func (c *Consumer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	tps := flatten(assigned)
	if len(tps) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		// A stop has begun: nothing will be fetched for them, and
		// leaving the group hands them on.
		return
	}
	for _, tp := range tps {
		if c.parts[tp] != nil {
			continue
		}
		p := newPartition(c, tp)
		c.parts[tp] = p
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			p.run()
		}()
	}
	c.log.Info("consumer: partitions assigned", "partitions", assigned)
}

// flatten lists the partitions of a kgo topic map, sorted.
func flatten(m map[string][]int32) []topicPartition {
	var tps []topicPartition
	for topic, ids := range m {
		for _, id := range ids {
			tps = append(tps, topicPartition{topic, id})
		}
	}
	slices.SortFunc(tps, func(a, b topicPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return cmp.Compare(a.partition, b.partition)
	})
	return tps
}

// onRevoked lets the revoked partitions finish and commit the batch in the
// handler, drops what they buffered (the next owner reads it again from the
// committed offset), and returns once they are done, so that the next
// owner starts after our last commit.
func (c *Consumer) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := c.release(revoked)
	if len(parts) == 0 {
		return
	}
	settle(parts, modeRevoking)
	for _, p := range parts {
		// The worker committed on its way out; this covers a commit
		// that failed then, or one a graceful stop left to us.
		p.finalCommit()
	}
	c.log.Info("consumer: partitions revoked", "partitions", revoked)
}

// onLost is for partitions already given to someone else (our session
// expired): the handlers' contexts are cancelled, and nothing is committed,
// since a commit now could move back the new owner's offset.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := c.release(lost)
	if len(parts) == 0 {
		return
	}
	settle(parts, modeLost)
	c.log.Warn("consumer: partitions lost", "partitions", lost)
}

// release removes the partitions from those we own and returns them.
func (c *Consumer) release(m map[string][]int32) []*partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []*partition
	for _, tp := range flatten(m) {
		if p := c.parts[tp]; p != nil {
			parts = append(parts, p)
			delete(c.parts, tp)
		}
	}
	return parts
}

// settle tells the workers of parts how they end, all at once so that they
// wind down together, and waits until every one has.
func settle(parts []*partition, m mode) {
	for _, p := range parts {
		p.setMode(m)
	}
	for _, p := range parts {
		<-p.done
	}
}
