package consumer

import (
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-run/spool/internal/backoff"
)

// mode is where a partition's worker is in its life. It only moves
// forward: a stronger reason to stop replaces a weaker one.
type mode int

const (
	// modeRunning: batches by size and timeout, refused ones again and
	// again.
	modeRunning mode = iota
	// modeDraining: a graceful stop. What is buffered is handed over
	// now, without waiting for the batch timeout; a refused batch ends
	// the partition's work.
	modeDraining
	// modeRevoking: the partition goes to another consumer. The batch
	// in the handler may finish and commit; nothing else starts.
	modeRevoking
	// modeLost: the partition is already someone else's. The handler's
	// context is cancelled and nothing is committed.
	modeLost
	// modeForced: a stop at once, handled like a loss.
	modeForced
)

// pauseBatches is how many batches a partition may have waiting before
// fetching it pauses: enough to keep the handler busy, few enough that a
// partition stuck on a refused batch does not fill memory.
const pauseBatches = 4

// partition is one owned partition: a buffer that polling fills without
// ever blocking, and a worker goroutine that cuts it into batches and runs
// them through the handler one at a time.
type partition struct {
	c      *Consumer
	topic  string
	id     int32
	ctx    context.Context // the handler's: ends on loss or a stop at once
	cancel context.CancelFunc
	wake   chan struct{} // new records or a new mode; capacity 1
	done   chan struct{} // closed when the worker has returned

	mu        sync.Mutex
	mode      mode
	buf       []waiting       // fetched, not yet handed to the handler
	inflight  []waiting       // the batch the handler has (or will get again)
	after     int64           // offset after the last buffered record; -1 before any
	hwm       int64           // high watermark of the latest fetch; -1 before any
	handled   kgo.EpochOffset // end of the newest batch the handler accepted
	committed int64           // newest offset committed; -1 before any

	pauseMu sync.Mutex // orders the decisions to pause and resume with the calls
	paused  bool
}

// topicPartition names a partition of one of the topics consumed.
type topicPartition struct {
	topic     string
	partition int32
}

func newPartition(c *Consumer, tp topicPartition) *partition {
	ctx, cancel := context.WithCancel(c.base)
	return &partition{
		c:         c,
		topic:     tp.topic,
		id:        tp.partition,
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		after:     -1,
		hwm:       -1,
		handled:   kgo.EpochOffset{Epoch: -1, Offset: -1},
		committed: -1,
	}
}

func (p *partition) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// add buffers polled records. It never blocks: polling holds off rebalances
// until it is done handing records out.
func (p *partition) add(recs []*kgo.Record, hwm int64, now time.Time) {
	p.mu.Lock()
	if p.mode != modeRunning {
		p.mu.Unlock()
		return
	}
	for _, r := range recs {
		p.buf = append(p.buf, fromRecord(r, now))
	}
	if n := len(recs); n > 0 {
		p.after = recs[n-1].Offset + 1
	}
	if hwm >= 0 {
		p.hwm = hwm
	}
	p.mu.Unlock()
	p.signal()
	p.syncPause()
}

// setMode moves the partition to m unless it is already further along.
func (p *partition) setMode(m mode) {
	p.mu.Lock()
	if m <= p.mode {
		p.mu.Unlock()
		return
	}
	p.mode = m
	if m >= modeRevoking {
		// Uncommitted and not started: whoever reads the partition
		// next starts from the committed offset and gets them.
		p.buf = nil
	}
	p.mu.Unlock()
	if m >= modeLost {
		p.cancel()
	}
	p.signal()
	p.syncPause()
}

func (p *partition) currentMode() mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// syncPause pauses fetching the partition while more than pauseBatches
// batches wait, and resumes once at most one does, or once the partition
// stops running: a pause outlives the partition in the client otherwise.
func (p *partition) syncPause() {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	p.mu.Lock()
	n, running := len(p.buf), p.mode == modeRunning
	p.mu.Unlock()
	size := p.c.s.batchSize
	want := running && (n > pauseBatches*size || p.paused && n > size)
	if want == p.paused {
		return
	}
	tp := map[string][]int32{p.topic: {p.id}}
	if want {
		p.c.client.PauseFetchPartitions(tp)
	} else {
		p.c.client.ResumeFetchPartitions(tp)
	}
	p.paused = want
	p.c.log.Debug("consumer: fetching paused", "topic", p.topic, "partition", p.id, "paused", want, "buffered", n)
}

// run is the partition's worker.
func (p *partition) run() {
	defer close(p.done)
	defer p.syncPause()
	bo := backoff.New(p.c.s.retryBackoff, p.c.s.maxRetryBackoff)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch := p.next(timer)
		if batch == nil {
			break
		}
		p.deliver(batch, bo)
	}
	p.finalCommit()
}

// next waits for the next batch: BatchSize messages, or fewer once the
// oldest has waited BatchTimeout, or whatever is buffered during a graceful
// stop. It returns nil when the worker should return.
func (p *partition) next(timer *time.Timer) []waiting {
	size, timeout := p.c.s.batchSize, p.c.s.batchTimeout
	for {
		now := time.Now()
		var take int
		var wait time.Duration
		p.mu.Lock()
		switch {
		case p.mode >= modeRevoking, p.mode == modeDraining && len(p.buf) == 0:
			p.mu.Unlock()
			return nil
		case len(p.buf) == 0:
		case p.mode == modeDraining || len(p.buf) >= size:
			take = min(len(p.buf), size)
		default:
			if wait = p.buf[0].arrived.Add(timeout).Sub(now); wait <= 0 {
				take = len(p.buf)
			}
		}
		if take > 0 {
			batch := slices.Clone(p.buf[:take])
			p.buf = p.buf[take:]
			if len(p.buf) == 0 {
				p.buf = nil // let the backing array go
			}
			p.inflight = batch
			p.mu.Unlock()
			p.syncPause()
			return batch
		}
		p.mu.Unlock()
		var expired <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			expired = timer.C
		}
		select {
		case <-p.wake:
		case <-expired:
		}
		timer.Stop()
	}
}

// deliver runs the batch through the handler until it accepts it, or the
// partition stops running. Later messages of the partition wait meanwhile:
// skipping a batch would lose it.
func (p *partition) deliver(batch []waiting, bo *backoff.Backoff) {
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			p.c.m.redelivered()
		}
		commit := p.call(batch)
		if p.ctx.Err() != nil {
			return // lost, or a stop at once: the answer no longer counts
		}
		if commit {
			last := batch[len(batch)-1]
			eo := kgo.EpochOffset{Epoch: last.epoch, Offset: last.msg.Offset + 1}
			p.mu.Lock()
			p.handled, p.inflight = eo, nil
			p.mu.Unlock()
			bo.Reset()
			if !p.c.s.noCommit {
				p.commit(eo)
			}
			return
		}
		if p.currentMode() != modeRunning {
			p.drop()
			return
		}
		d := bo.Delay()
		p.c.log.Warn("consumer: batch not done; delivering it again",
			"topic", p.topic, "partition", p.id, "first_offset", batch[0].msg.Offset, "messages", len(batch), "attempt", attempt, "pause", d)
		switch p.sleep(d) {
		case modeRunning:
		case modeDraining:
			// A graceful stop hands everything over now: one more
			// try at once, and no retry after it.
		default:
			p.drop()
			return
		}
	}
}

// drop gives up the batch in flight and everything buffered behind it,
// uncommitted, for the next reader of the partition.
func (p *partition) drop() {
	p.mu.Lock()
	n := len(p.inflight) + len(p.buf)
	var first int64 = -1
	if len(p.inflight) > 0 {
		first = p.inflight[0].msg.Offset
	}
	p.inflight, p.buf = nil, nil
	p.mu.Unlock()
	p.c.log.Info("consumer: refused batch left uncommitted while the partition stops",
		"topic", p.topic, "partition", p.id, "first_offset", first, "messages", n)
}

// sleep waits d, or less if the partition stops running; it returns the
// mode then.
func (p *partition) sleep(d time.Duration) mode {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		if m := p.currentMode(); m != modeRunning {
			return m
		}
		select {
		case <-t.C:
			return p.currentMode()
		case <-p.wake:
		}
	}
}

// call hands the batch to the handler once and tells whether it accepted
// it. A panic counts as a refusal: one bad message must not take down the
// process and every other partition with it.
func (p *partition) call(batch []waiting) (commit bool) {
	msgs := make([]Message, len(batch))
	for i := range batch {
		msgs[i] = batch[i].msg
	}
	first, last := msgs[0].Offset, msgs[len(msgs)-1].Offset
	start := time.Now()
	slow := time.AfterFunc(p.c.opts.slowHandler, func() {
		p.c.log.Warn("consumer: handler is slow", "topic", p.topic, "partition", p.id, "first_offset", first, "last_offset", last,
			"running_for", time.Since(start).Round(time.Millisecond))
	})
	outcome := outcomeRefused
	defer func() {
		slow.Stop()
		if r := recover(); r != nil {
			commit, outcome = false, outcomePanic
			p.c.log.Error("consumer: handler panicked", "topic", p.topic, "partition", p.id, "first_offset", first, "last_offset", last,
				"panic", r, "stack", string(debug.Stack()))
		}
		p.c.m.handled(outcome, len(msgs), time.Since(start))
	}()
	ok, err := p.c.handler(p.ctx, msgs)
	switch {
	case err != nil:
		outcome = outcomeError
		p.c.log.Warn("consumer: handler failed", "topic", p.topic, "partition", p.id, "first_offset", first, "last_offset", last, "err", err)
	case ok:
		outcome, commit = outcomeCommit, true
	}
	return commit
}

// commit commits eo for the partition and waits for the answer. A failure
// is logged and otherwise ignored: the next commit of the partition covers
// this one, and the revoke or stop commits the newest handled offset.
func (p *partition) commit(eo kgo.EpochOffset) {
	ctx, cancel := context.WithTimeout(p.ctx, p.c.opts.commitTimeout)
	defer cancel()
	var err error
	p.c.client.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{p.topic: {p.id: eo}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
			if err = e; err != nil {
				return
			}
			for _, t := range resp.Topics {
				for _, tp := range t.Partitions {
					if e := kerr.ErrorForCode(tp.ErrorCode); e != nil {
						err = e
					}
				}
			}
		})
	p.c.m.committed(err == nil)
	if err != nil {
		p.c.log.Warn("consumer: commit failed; a later commit of the partition will cover it",
			"topic", p.topic, "partition", p.id, "offset", eo.Offset, "err", err)
		return
	}
	p.mu.Lock()
	p.committed = max(p.committed, eo.Offset)
	p.mu.Unlock()
}

// finalCommit commits the newest handled offset if an earlier commit of it
// failed, when the partition leaves us in good order (revoked, or a
// graceful stop); never after a loss or a stop at once. It runs only once
// the worker is done or from the worker itself.
func (p *partition) finalCommit() {
	p.mu.Lock()
	m, eo, committed := p.mode, p.handled, p.committed
	p.mu.Unlock()
	if m >= modeLost || p.ctx.Err() != nil || eo.Offset <= committed || p.c.s.noCommit {
		return
	}
	p.commit(eo)
}

// lag is the high watermark of the latest fetch minus the next offset to
// hand to the handler; false before the partition has seen any record.
func (p *partition) lag() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.after
	if len(p.buf) > 0 {
		next = p.buf[0].msg.Offset
	}
	if len(p.inflight) > 0 {
		next = p.inflight[0].msg.Offset
	}
	if p.hwm < 0 || next < 0 {
		return 0, false
	}
	return max(p.hwm-next, 0), true
}
