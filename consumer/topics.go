package consumer

import (
	"context"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkTopics reads which topics cfg asks for: one, several or a pattern.
func (s *settings) checkTopics(cfg Config) error {
	given := 0
	for _, set := range []bool{cfg.Topic != "", cfg.Topics != nil, cfg.TopicRegex != ""} {
		if set {
			given++
		}
	}
	if given > 1 {
		return invalid("give one of Topic, Topics and TopicRegex, not several")
	}
	if cfg.TopicRefresh < 0 {
		return invalid("TopicRefresh is negative (%v)", cfg.TopicRefresh)
	}
	s.topicRefresh = cfg.TopicRefresh
	if s.topicRefresh == 0 {
		s.topicRefresh = defaultTopicRefresh
	}
	switch {
	case cfg.Topic != "":
		if !validTopic(cfg.Topic) {
			return invalid("Topic %q is not a valid topic name (at most 249 of a-z A-Z 0-9 . _ -)", cfg.Topic)
		}
		s.topics = []string{cfg.Topic}
	case cfg.Topics != nil:
		if len(cfg.Topics) == 0 {
			return invalid("Topics is empty")
		}
		for i, t := range cfg.Topics {
			if !validTopic(t) {
				return invalid("Topics[%d] %q is not a valid topic name (at most 249 of a-z A-Z 0-9 . _ -)", i, t)
			}
			if slices.Index(cfg.Topics, t) < i {
				return invalid("Topics names %q twice", t)
			}
		}
		s.topics = slices.Clone(cfg.Topics)
	case cfg.TopicRegex != "":
		// Compiled alone first: anchoring a pattern like ")(" could
		// otherwise turn it into a different one that compiles.
		_, err := regexp.Compile(cfg.TopicRegex)
		if err == nil {
			// Kafka's Java client matches the whole name, and so do
			// we: "orders-.*" should not pick up "old-orders-eu".
			s.regex, err = regexp.Compile(`^(?:` + cfg.TopicRegex + `)$`)
		}
		if err != nil {
			return invalid("TopicRegex %q does not compile: %v", cfg.TopicRegex, err)
		}
	}
	return nil
}

// eventHubsTopic sets the topic from the connection string's EntityPath
// when none is given, and refuses several: an Event Hubs consumer reads
// one event hub, as the Event Hubs SDKs do, and a connection string
// with an EntityPath authorizes that hub alone.
func (s *settings) eventHubsTopic(eh EventHubs) error {
	switch {
	case s.regex != nil:
		return invalid("TopicRegex with Event Hubs: an Event Hubs consumer reads one event hub; give it in Topic or EntityPath")
	case len(s.topics) > 1:
		return invalid("Topics has %d topics with Event Hubs: an Event Hubs consumer reads one event hub; run one consumer per hub", len(s.topics))
	case len(s.topics) == 0 && eh.EventHub != "":
		s.topics = []string{eh.EventHub}
	}
	return nil
}

// describeTopics is how the logs name what the consumer reads.
func (s *settings) describeTopics() any {
	if s.regex != nil {
		return s.regex.String()
	}
	return s.topics
}

// followRegex subscribes to the topics that match the regex, now and
// every topicRefresh, until ctx ends. kgo could match a regex itself, but
// only when the client is made, and a client with topics joins its group
// at once; New must not join (see clientOpts).
//
// A topic that disappears from two listings in a row (it was deleted) is
// dropped from the subscription; two, because a broker that has just
// joined may list topics it does not know yet as missing.
func (c *Consumer) followRegex(ctx context.Context) {
	subscribed := make(map[string]bool)
	missing := make(map[string]int)
	warned := false
	t := time.NewTicker(c.s.topicRefresh)
	defer t.Stop()
	for {
		names, err := c.listTopics(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.log.Warn("consumer: listing the topics to match TopicRegex", "err", err)
		default:
			var add, drop []string
			for _, n := range names {
				delete(missing, n)
				if !subscribed[n] && c.s.regex.MatchString(n) {
					add = append(add, n)
					subscribed[n] = true
				}
			}
			for n := range subscribed {
				if !slices.Contains(names, n) {
					if missing[n]++; missing[n] >= 2 {
						drop = append(drop, n)
						delete(subscribed, n)
						delete(missing, n)
					}
				}
			}
			if len(add) > 0 {
				slices.Sort(add)
				c.log.Info("consumer: topics matching TopicRegex", "added", add)
				c.client.AddConsumeTopics(add...)
			}
			if len(subscribed) == 0 && !warned {
				// Most likely a typo in the pattern, or the
				// wrong cluster: say so rather than wait quietly.
				c.log.Warn("consumer: no topic matches TopicRegex yet; looking again every "+c.s.topicRefresh.String(),
					"topics_listed", len(names))
				warned = true
			}
			if len(drop) > 0 {
				c.log.Info("consumer: topics matching TopicRegex are gone", "dropped", drop)
				c.client.PurgeTopicsFromConsuming(drop...)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// listTopics returns the names of the cluster's topics, internal ones
// left out.
func (c *Consumer) listTopics(ctx context.Context) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest() // no topics: all of them
	resp, err := req.RequestWith(ctx, c.client)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range resp.Topics {
		if t.Topic == nil || t.IsInternal {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			continue // being created or deleted: the next listing tells
		}
		names = append(names, *t.Topic)
	}
	return names, nil
}
