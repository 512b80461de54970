package batcher

import (
	"sync"
	"time"
)

// Config sets when a Batcher flushes. A zero or negative field disables its
// rule: no count limit, no byte limit, no timed flush, no quick flush, no
// watched interval.
type Config struct {
	// MaxItems: flush when this many items are buffered.
	MaxItems int
	// MaxBytes: a batch's total size never exceeds this. An item that would
	// push the buffer over flushes the buffer first, and a buffer that
	// reaches it exactly is flushed at once. An item larger than MaxBytes on
	// its own is flushed alone, so callers that need the limit to hold
	// (stores with an item size limit) must split such items before Add.
	MaxBytes int64
	// FlushInterval: buffered items are flushed at least this often.
	FlushInterval time.Duration
	// QuickDelay: the first items after a quiet spell (no flush for at least
	// FlushInterval) are flushed this soon, so occasional output shows up
	// promptly while busy output still fills whole batches.
	QuickDelay time.Duration
	// WatchedInterval replaces FlushInterval, when shorter, while
	// SetWatched(true): someone is looking, so latency matters more than
	// the number of writes.
	WatchedInterval time.Duration
}

// Batcher buffers items and hands them to its flush function in batches.
// All methods are safe for concurrent use.
//
// The flush function runs with the batcher's lock held: flushes are
// serialized and happen in the order the items were added, with nothing
// added in between. It must therefore be quick and must not call back into
// the batcher (that deadlocks). The batch slice is only valid during the
// call: the batcher reuses its backing array, so a flush function that keeps
// items must copy them out.
type Batcher[T any] struct {
	cfg   Config
	clock Clock
	size  func(T) int64
	flush func(batch []T, r Reason)

	mu        sync.Mutex
	buf       []T
	bytes     int64
	lastFlush time.Time // the last flush: the start of the current quiet spell (zero: none yet, so the first items are quick)
	watched   bool
	closed    bool

	// At most one timer is pending. gen is bumped whenever that timer
	// becomes obsolete (a flush, a re-arm, Close); a timer whose callback
	// runs anyway (Stop lost the race) sees a different gen and does nothing.
	timer       Timer
	gen         uint64
	timerReason Reason
	timerArmed  time.Time
	timerDue    time.Time
}

// New returns a Batcher. size gives an item's size for Config.MaxBytes (it
// may be nil when MaxBytes is not used); flush receives each batch.
func New[T any](cfg Config, clock Clock, size func(T) int64, flush func(batch []T, r Reason)) *Batcher[T] {
	if clock == nil {
		clock = SystemClock()
	}
	if size == nil {
		size = func(T) int64 { return 0 }
	}
	b := &Batcher[T]{cfg: cfg, clock: clock, size: size, flush: flush}
	if cfg.MaxItems > 0 {
		// The buffer is reused batch after batch; size it once, within
		// reason for a generous MaxItems that is rarely reached.
		b.buf = make([]T, 0, min(cfg.MaxItems, 1024))
	}
	// No lastFlush yet: the start is the quietest spell of all, so the
	// first items are flushed after QuickDelay and a watcher of a new job
	// sees its first lines at once.
	return b
}

// Add buffers item. It flushes synchronously, in the caller's goroutine,
// when the item fills the batch or would take it over MaxBytes.
func (b *Batcher[T]) Add(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		panic("batcher: Add called after Close")
	}
	n := b.size(item)
	if len(b.buf) > 0 && b.cfg.MaxBytes > 0 && b.bytes+n > b.cfg.MaxBytes {
		b.flushLocked(ReasonBytes)
	}
	b.buf = append(b.buf, item)
	b.bytes += n
	switch {
	case b.cfg.MaxItems > 0 && len(b.buf) >= b.cfg.MaxItems:
		b.flushLocked(ReasonSize)
	case b.cfg.MaxBytes > 0 && b.bytes >= b.cfg.MaxBytes:
		// Full: only empty items could still fit, and waiting for them
		// would only delay what is here.
		b.flushLocked(ReasonBytes)
	case b.timer == nil:
		b.armLocked()
	}
}

// Flush flushes what is buffered now, with reason r. It does nothing when
// the buffer is empty.
func (b *Batcher[T]) Flush(r Reason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked(r)
}

// Do flushes what is buffered (ReasonCritical) and then runs fn, both under
// the batcher's lock, so no other flush can come between them: whatever fn
// emits directly follows the last batch. Like the flush function, fn must
// not call back into the batcher.
func (b *Batcher[T]) Do(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		panic("batcher: Do called after Close")
	}
	b.flushLocked(ReasonCritical)
	fn()
}

// SetWatched switches between FlushInterval and WatchedInterval. When the
// switch makes the pending timer's deadline earlier, the timer is re-armed
// for the new deadline, so a watcher who arrives sees buffered items soon.
func (b *Batcher[T]) SetWatched(w bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watched == w || b.closed {
		return
	}
	b.watched = w
	if b.timer == nil {
		// Only possible with no FlushInterval: items may be waiting for
		// a size flush and now have a watched interval to honour.
		if len(b.buf) > 0 {
			b.armLocked()
		}
		return
	}
	iv := b.intervalLocked()
	if due := b.timerArmed.Add(iv); iv > 0 && due.Before(b.timerDue) {
		armed := b.timerArmed
		b.stopTimerLocked()
		b.startTimerLocked(ReasonInterval, armed, due, b.clock.Now())
	}
}

// Close flushes the rest (ReasonClose) and stops the timer. Calling Close
// again does nothing; Add and Do after Close panic.
func (b *Batcher[T]) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.flushLocked(ReasonClose)
	b.stopTimerLocked()
	b.closed = true
}

// Buffered is how many items wait for the next flush.
func (b *Batcher[T]) Buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

// with runs fn under the batcher's lock without flushing, for wrappers in
// this package that keep state next to the buffer (sequence counters,
// statistics) and want one lock for both.
func (b *Batcher[T]) with(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn()
}

func (b *Batcher[T]) flushLocked(r Reason) {
	if len(b.buf) == 0 {
		return
	}
	b.stopTimerLocked()
	b.lastFlush = b.clock.Now()
	b.flush(b.buf, r)
	// Drop the references so flushed items can be collected, then reuse
	// the array for the next batch.
	clear(b.buf)
	b.buf = b.buf[:0]
	b.bytes = 0
}

// intervalLocked is the timed-flush interval in force: the watched interval
// while watched and shorter, else FlushInterval (0: no timed flush).
func (b *Batcher[T]) intervalLocked() time.Duration {
	iv := max(b.cfg.FlushInterval, 0)
	if b.watched && b.cfg.WatchedInterval > 0 && (iv == 0 || b.cfg.WatchedInterval < iv) {
		iv = b.cfg.WatchedInterval
	}
	return iv
}

// armLocked starts the timer for a buffer that just received its first
// item: QuickDelay after a quiet spell, the interval otherwise.
func (b *Batcher[T]) armLocked() {
	now := b.clock.Now()
	delay, reason := b.intervalLocked(), ReasonInterval
	quiet := b.cfg.FlushInterval > 0 && now.Sub(b.lastFlush) >= b.cfg.FlushInterval
	if quiet && b.cfg.QuickDelay > 0 && (delay == 0 || b.cfg.QuickDelay < delay) {
		delay, reason = b.cfg.QuickDelay, ReasonQuick
	}
	if delay <= 0 {
		return // no timed flush configured: size, bytes, Do and Close still flush
	}
	b.startTimerLocked(reason, now, now.Add(delay), now)
}

// startTimerLocked arms the timer for items buffered since armed, to fire
// at due (at once if that has passed).
func (b *Batcher[T]) startTimerLocked(r Reason, armed, due, now time.Time) {
	gen := b.gen
	b.timerReason, b.timerArmed, b.timerDue = r, armed, due
	b.timer = b.clock.AfterFunc(max(due.Sub(now), 0), func() { b.fire(gen) })
}

func (b *Batcher[T]) stopTimerLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.gen++
}

// fire is a timer's callback. The timer may have lost its race with a flush
// that made it obsolete; then gen has moved on and there is nothing to do.
func (b *Batcher[T]) fire(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen || b.closed {
		return
	}
	b.timer = nil // it has fired; nothing to stop
	b.flushLocked(b.timerReason)
}
