package consumer

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHooks are the knobs only tests turn.
type TestHooks struct {
	Kgo           []kgo.Opt     // added after the consumer's own options
	SlowHandler   time.Duration // threshold of the slow-handler warning
	CommitTimeout time.Duration
}

// NewWithHooks is New with test knobs.
func NewWithHooks(cfg Config, h Handler, hk TestHooks) (*Consumer, error) {
	return newConsumer(cfg, h, options{kgo: hk.Kgo, slowHandler: hk.SlowHandler, commitTimeout: hk.CommitTimeout})
}

// Buffered is how many messages of partition id of topic "events" (the
// tests' usual topic) wait in the consumer's buffer (-1 if it does not own
// the partition).
func (c *Consumer) Buffered(id int32) int { return c.BufferedIn("events", id) }

// BufferedIn is Buffered for a partition of any topic.
func (c *Consumer) BufferedIn(topic string, id int32) int {
	c.mu.Lock()
	p := c.parts[topicPartition{topic, id}]
	c.mu.Unlock()
	if p == nil {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.buf)
}
