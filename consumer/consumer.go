package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-run/spool/internal/backoff"
)

// options are knobs that only the package's tests turn: shorter kgo
// timeouts, a shorter "slow handler" threshold.
type options struct {
	kgo           []kgo.Opt
	slowHandler   time.Duration // a handler running longer is logged (60s)
	commitTimeout time.Duration // the longest a commit may take (30s)
}

// maxPollRecords bounds one poll. Dispatching is cheap, so it is generous;
// what bounds memory is pausing the partitions that are behind.
const maxPollRecords = 10_000

// Consumer consumes topics in a consumer group and hands their messages to
// a Handler in batches, one batch at a time per partition, committing what
// the handler accepts.
type Consumer struct {
	s       *settings
	opts    options
	handler Handler
	client  *kgo.Client
	m       *metrics
	log     *slog.Logger
	auth    *authWatch

	mu       sync.Mutex
	ran      bool                          // Run was called, or Shutdown came first
	stopping bool                          // no new partitions: a stop has begun
	forced   bool                          // a stop at once: nothing more is committed
	parts    map[topicPartition]*partition // the partitions we own
	base     context.Context               // parent of the handlers' contexts
	cancel   context.CancelFunc            // cancels base
	workers  sync.WaitGroup                // one per partition worker

	graceful, force         chan struct{} // closed by Shutdown, and when its ctx ends
	gracefulOnce, forceOnce sync.Once
	runDone                 chan struct{} // closed when Run returns
}

// New checks cfg and returns a consumer that handles each batch with h.
// It does not contact the brokers (Run does), but it makes the kgo client,
// so a consumer that is never run should be released with Shutdown.
// Errors wrap ErrInvalidConfig.
func New(cfg Config, h Handler) (*Consumer, error) {
	return newConsumer(cfg, h, options{})
}

func newConsumer(cfg Config, h Handler, o options) (*Consumer, error) {
	if h == nil {
		return nil, invalid("the handler is nil")
	}
	s, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if o.slowHandler <= 0 {
		o.slowHandler = time.Minute
	}
	if o.commitTimeout <= 0 {
		o.commitTimeout = 30 * time.Second
	}
	c := &Consumer{
		s:        s,
		opts:     o,
		handler:  h,
		m:        newMetrics(s.meters),
		log:      s.log.With("topics", s.describeTopics(), "group", s.group),
		auth:     new(authWatch),
		parts:    make(map[topicPartition]*partition),
		graceful: make(chan struct{}),
		force:    make(chan struct{}),
		runDone:  make(chan struct{}),
	}
	c.client, err = kgo.NewClient(c.clientOpts(o.kgo)...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return c, nil
}

// Consumes reports whether the consumer reads topic: one of its topics, or
// a name that matches its TopicRegex. A dead-letter topic must not be one,
// or what is sent there comes back.
func (c *Consumer) Consumes(topic string) bool {
	if c.s.regex != nil {
		return c.s.regex.MatchString(topic)
	}
	return slices.Contains(c.s.topics, topic)
}

// Client is the underlying kgo client, to produce on the same connections
// (for example to a dead-letter topic). Callers must not consume, commit
// or close with it. It stops working once Run has returned.
func (c *Consumer) Client() *kgo.Client { return c.client }

// Run joins the group and consumes until Shutdown has finished, then
// returns nil, or until ctx ends: it then stops at once (handlers' contexts
// are cancelled, nothing more is committed) and returns ctx.Err(). It
// returns an error at once when the brokers reject the credentials, the
// TLS handshake fails or the group or topic is not authorized. Run can be
// called once.
func (c *Consumer) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.ran {
		c.mu.Unlock()
		select {
		case <-c.runDone:
			if c.isClosed(c.graceful) {
				return nil // Shutdown came first: there is nothing to run
			}
		default:
		}
		return errors.New("consumer: Run called more than once")
	}
	c.ran = true
	c.base, c.cancel = context.WithCancel(ctx)
	c.mu.Unlock()
	defer close(c.runDone)
	defer c.cancel()

	if reg, err := c.m.observeLag(c.lags); err != nil {
		c.log.Warn("consumer: no lag gauge", "err", err)
	} else {
		defer func() { _ = reg.Unregister() }()
	}

	// pollCtx ends when any kind of stop begins.
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go func() {
		select {
		case <-c.graceful:
		case <-c.force:
		case <-pollCtx.Done():
		}
		stopPolling()
	}()

	err := c.connect(pollCtx)
	if err == nil && pollCtx.Err() == nil {
		var following sync.WaitGroup
		if c.s.regex != nil {
			following.Go(func() { c.followRegex(pollCtx) })
		} else {
			c.client.AddConsumeTopics(c.s.topics...)
		}
		c.log.Info("consumer: consuming")
		err = c.poll(pollCtx)
		stopPolling()
		following.Wait()
	}

	switch {
	case ctx.Err() != nil:
		c.stopNow("the context ended")
		err = ctx.Err()
	case err != nil:
		c.log.Error("consumer: stopping", "err", err)
		c.stopNow("an error that retrying cannot help")
	case c.isClosed(c.force):
		c.stopNow("the shutdown's context ended")
	default:
		if !c.drain(ctx) {
			c.stopNow("the shutdown's context ended while draining")
			err = ctx.Err()
		}
	}
	c.close()
	c.log.Info("consumer: stopped")
	return err
}

// Shutdown stops gracefully: no more fetching, every buffered message is
// handed to the handler at once (without waiting for BatchTimeout), what it
// accepts is committed, then the consumer leaves the group. A batch the
// handler refuses now is not retried: it and the rest of its partition are
// left uncommitted, for the next consumer to read again. Shutdown returns
// when Run has returned. If ctx ends first, the stop becomes a stop at once
// (as when Run's context ends) and Shutdown returns ctx.Err().
func (c *Consumer) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if !c.ran {
		// Nothing runs yet: close, and let a later Run return at once.
		c.ran = true
		c.gracefulOnce.Do(func() { close(c.graceful) })
		close(c.runDone)
		c.mu.Unlock()
		c.client.Close()
		return nil
	}
	c.mu.Unlock()
	c.gracefulOnce.Do(func() { close(c.graceful) })
	if ctx.Err() == nil {
		select {
		case <-c.runDone:
			return nil
		case <-ctx.Done():
		}
	}
	c.forceOnce.Do(func() { close(c.force) })
	<-c.runDone
	return ctx.Err()
}

func (c *Consumer) isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// connect pings the brokers until one answers, so that credentials or
// certificates they reject end Run with an error that says so, instead of
// a consumer that waits forever. Brokers that are merely away are waited
// for. It returns nil if ctx ends.
func (c *Consumer) connect(ctx context.Context) error {
	bo := backoff.New(200*time.Millisecond, 5*time.Second)
	for {
		err := c.client.Ping(ctx)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if fatal := c.fatal(err); fatal != nil {
			return fatal
		}
		c.log.Warn("consumer: no broker answers yet", "err", err)
		if backoff.Sleep(ctx, bo.Delay()) != nil {
			return nil
		}
	}
}

// poll hands polled records to their partitions until ctx ends or an error
// means there is no point going on. Between a poll and AllowRebalance no
// rebalance can happen, so a record is only ever handed to a partition we
// still own; handing over never blocks, so rebalances wait for nothing.
func (c *Consumer) poll(ctx context.Context) error {
	for {
		fetches := c.client.PollRecords(ctx, maxPollRecords)
		now := time.Now()
		var fatal error
		fetches.EachError(func(topic string, partition int32, err error) {
			if ctx.Err() != nil || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			if f := c.fatal(err); f != nil {
				fatal = f
				return
			}
			c.log.Warn("consumer: fetch error", "topic", topic, "partition", partition, "err", err)
		})
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err != nil && len(fp.Records) == 0 {
				return
			}
			c.mu.Lock()
			p := c.parts[topicPartition{fp.Topic, fp.Partition}]
			c.mu.Unlock()
			if p == nil {
				c.log.Debug("consumer: records of a partition we do not own", "topic", fp.Topic, "partition", fp.Partition)
				return
			}
			p.add(fp.Records, fp.HighWatermark, now)
		})
		c.client.AllowRebalance()
		if fatal != nil {
			return fatal
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// drain runs the graceful part of a stop: it has every partition hand its
// buffered messages to the handler now, and waits for them. It reports false
// if the stop became a stop at once meanwhile.
func (c *Consumer) drain(ctx context.Context) bool {
	if topics := c.client.GetConsumeTopics(); len(topics) > 0 {
		c.client.PauseFetchTopics(topics...)
	}
	c.mu.Lock()
	c.stopping = true
	parts := c.owned()
	c.mu.Unlock()
	c.log.Info("consumer: stopping gracefully", "partitions", len(parts))
	for _, p := range parts {
		p.setMode(modeDraining)
	}
	done := make(chan struct{})
	go func() {
		c.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-c.force:
	case <-ctx.Done():
	}
	return false
}

// stopNow cancels every handler's context and waits for the workers; from
// here on nothing is committed.
func (c *Consumer) stopNow(why string) {
	c.mu.Lock()
	c.stopping, c.forced = true, true
	parts := c.owned()
	c.mu.Unlock()
	c.log.Info("consumer: stopping at once", "why", why, "partitions", len(parts))
	for _, p := range parts {
		p.setMode(modeForced)
	}
	c.cancel()
	c.workers.Wait()
}

// close leaves the group and closes the client. Leaving runs the revoke
// callback, which commits what a graceful stop handled but could not
// commit yet; a stop at once skips that and does not wait long for the
// broker's answer.
func (c *Consumer) close() {
	c.mu.Lock()
	forced := c.forced
	c.mu.Unlock()
	leaveCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if forced {
		leaveCtx, cancel = context.WithTimeout(leaveCtx, 5*time.Second)
		defer cancel()
	} else {
		// A graceful leave turns into a quick one if Shutdown's
		// context ends while the broker is slow to answer.
		go func() {
			select {
			case <-c.force:
				c.mu.Lock()
				c.forced = true
				c.mu.Unlock()
				c.cancel()
				cancel()
			case <-leaveCtx.Done():
			}
		}()
	}
	if err := c.client.LeaveGroupContext(leaveCtx); err != nil && !errors.Is(err, context.Canceled) {
		c.log.Warn("consumer: leaving the group", "err", err)
	}
	c.client.CloseAllowingRebalance()
}

// owned returns the partitions we own. c.mu must be held.
func (c *Consumer) owned() []*partition {
	ps := make([]*partition, 0, len(c.parts))
	for _, p := range c.parts {
		ps = append(ps, p)
	}
	return ps
}

// lags reports each owned partition's lag, for the gauge.
func (c *Consumer) lags(yield func(topic string, partition int32, lag int64)) {
	c.mu.Lock()
	parts := c.owned()
	c.mu.Unlock()
	for _, p := range parts {
		if lag, ok := p.lag(); ok {
			yield(p.topic, p.id, lag)
		}
	}
}
