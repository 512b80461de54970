package consumer

import (
	"context"
	"slices"

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
	ids := assigned[c.s.topic]
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		// A stop has begun: nothing will be fetched for them, and
		// leaving the group hands them on.
		return
	}
	for _, id := range ids {
		if c.parts[id] != nil {
			continue
		}
		p := newPartition(c, id)
		c.parts[id] = p
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			p.run()
		}()
	}
	c.log.Info("consumer: partitions assigned", "partitions", ids)
}

// onRevoked lets the revoked partitions finish and commit the batch in the
// handler, drops what they buffered (the next owner reads it again from the
// committed offset), and returns once they are done, so that the next
// owner starts after our last commit.
func (c *Consumer) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	parts := c.release(revoked[c.s.topic])
	if len(parts) == 0 {
		return
	}
	settle(parts, modeRevoking)
	for _, p := range parts {
		// The worker committed on its way out; this covers a commit
		// that failed then, or one a graceful stop left to us.
		p.finalCommit()
	}
	c.log.Info("consumer: partitions revoked", "partitions", ids(parts))
}

// onLost is for partitions already given to someone else (our session
// expired): the handlers' contexts are cancelled, and nothing is committed,
// since a commit now could move back the new owner's offset.
func (c *Consumer) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := c.release(lost[c.s.topic])
	if len(parts) == 0 {
		return
	}
	settle(parts, modeLost)
	c.log.Warn("consumer: partitions lost", "partitions", ids(parts))
}

// release removes the partitions from those we own and returns them.
func (c *Consumer) release(ids []int32) []*partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []*partition
	for _, id := range ids {
		if p := c.parts[id]; p != nil {
			parts = append(parts, p)
			delete(c.parts, id)
		}
	}
	return parts
}

func ids(parts []*partition) []int32 {
	out := make([]int32, len(parts))
	for i, p := range parts {
		out[i] = p.id
	}
	slices.Sort(out)
	return out
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
