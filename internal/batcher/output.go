package batcher

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
)

// Defaults for a job whose BatchingConfig leaves a field unset (the
// server's defaults too, with a byte limit that fits a DynamoDB item), and for the two
// latency knobs that are the worker's, not the job's.
const (
	DefaultFlushInterval          = 2 * time.Second
	DefaultMaxBatchSize           = 50
	DefaultMaxBatchBytes          = 256 << 10
	DefaultPlaybackIntervalMillis = 50
	DefaultQuickDelay             = 50 * time.Millisecond
	DefaultWatchedInterval        = 20 * time.Millisecond
)

// OutputConfig configures an OutputBatcher.
type OutputConfig struct {
	// Batching is the job's config; nil or zero fields take the defaults.
	Batching *spoolv1.BatchingConfig
	// QuickDelay: how soon the first lines after a quiet spell are sent
	// (0: DefaultQuickDelay).
	QuickDelay time.Duration
	// WatchedInterval: the flush interval while someone watches the job
	// (0: DefaultWatchedInterval).
	WatchedInterval time.Duration
	// EmitBatch, when set, receives the batches instead of emit, as their
	// descriptions (for a caller that never needs them as messages: the
	// worker writes only a reference to their lines). It is called as
	// emit is; the batch's Lines are valid only during the call.
	EmitBatch func(events.Batch, Reason)
}

// core turns the job's config into the batching core's, filling defaults.
func (c OutputConfig) core() Config {
	b := c.Batching
	return Config{
		MaxItems:        int(orDefault(b.GetMaxBatchSize(), DefaultMaxBatchSize)),
		MaxBytes:        orDefault(b.GetMaxBatchBytes(), DefaultMaxBatchBytes),
		FlushInterval:   orDefault(convert.FlushInterval(b), DefaultFlushInterval),
		QuickDelay:      orDefault(c.QuickDelay, DefaultQuickDelay),
		WatchedInterval: orDefault(c.WatchedInterval, DefaultWatchedInterval),
	}
}

func orDefault[N int32 | int64 | time.Duration](v, def N) N {
	if v <= 0 {
		return def
	}
	return v
}

// OutputBatcher turns a job attempt's output lines and process events into
// the events the worker publishes: OUTPUT_BATCH events flushed by the
// batching core's rules, and each process event as an item of its own
// right after the lines that preceded it. Every event gets the next
// sequence, so the sequences emitted are continuous from the first one,
// with no gaps or repeats. All methods are safe for concurrent use.
type OutputBatcher struct {
	core      *Batcher[events.Line]
	clock     Clock
	emit      func(*spoolv1.JobEvent)
	emitBatch func(events.Batch, Reason)
	attempt   int32
	playback  int32
	maxBytes  int64

	// Guarded by the core's lock: flushes and Do already run under it, so
	// sequences are handed out in the order events are emitted.
	next  int64
	stats OutputStats
}

// NewOutput returns an OutputBatcher whose first event gets firstSequence.
// emit receives the events in sequence order. It is called synchronously,
// under the batcher's lock (from Line, Event, Close or a timer), so it must
// be quick (the worker appends to a local spool file) and must not call
// back into the OutputBatcher. It owns the events it receives.
func NewOutput(cfg OutputConfig, firstSequence int64, attempt int32, clock Clock, emit func(*spoolv1.JobEvent)) *OutputBatcher {
	if clock == nil {
		clock = SystemClock()
	}
	core := cfg.core()
	o := &OutputBatcher{
		clock:     clock,
		emit:      emit,
		emitBatch: cfg.EmitBatch,
		attempt:   attempt,
		playback:  orDefault(cfg.Batching.GetPlaybackIntervalMillis(), DefaultPlaybackIntervalMillis),
		maxBytes:  core.MaxBytes,
		next:      firstSequence,
		stats:     OutputStats{Flushes: map[Reason]int64{}},
	}
	o.core = New(core, clock, lineSize, o.flush)
	return o
}

func lineSize(l events.Line) int64 { return int64(len(l.Data)) }

// Line buffers an output line. A line longer than the batch byte limit is
// split into pieces that fit (all but the last Partial), because the store
// refuses a batch over the limit and no output may be dropped.
func (o *OutputBatcher) Line(l events.Line) {
	if l.Time.IsZero() {
		l.Time = o.clock.Now()
	}
	for int64(len(l.Data)) > o.maxBytes {
		piece := l
		piece.Data, piece.Partial = l.Data[:o.maxBytes:o.maxBytes], true
		o.core.Add(piece)
		l.Data = l.Data[o.maxBytes:]
	}
	o.core.Add(l)
}

// Event emits a process event (start, end, error): first the lines buffered
// so far, then ev with the next sequence, the attempt, and the current time
// if it has no timestamp. ev is modified in place. Both happen under one
// lock, so no batch can take a sequence in between. Output events must go
// through Line: Event panics on them.
func (o *OutputBatcher) Event(ev *spoolv1.JobEvent) {
	if t := ev.GetEventType(); events.IsOutput(t) || t == spoolv1.EventType_EVENT_TYPE_UNSPECIFIED {
		panic(fmt.Sprintf("batcher: OutputBatcher.Event takes process events, not %v", t))
	}
	o.core.Do(func() {
		ev.Sequence = o.next
		o.next++
		ev.Attempt = o.attempt
		if ev.GetTimestamp() == nil {
			ev.Timestamp = timestamppb.New(o.clock.Now())
		}
		o.stats.Events++
		o.emit(ev)
	})
}

// SetWatched shortens the flush interval while someone watches the job.
func (o *OutputBatcher) SetWatched(w bool) { o.core.SetWatched(w) }

// FlushInterval is the longest a line waits for its batch while nobody
// watches the job (0: no timed flush).
func (o *OutputBatcher) FlushInterval() time.Duration { return o.core.cfg.FlushInterval }

// Flush emits the buffered lines now (ReasonExplicit), for a worker that
// is about to wait on something slow.
func (o *OutputBatcher) Flush() { o.core.Flush(ReasonExplicit) }

// Close emits the lines still buffered. Line and Event after Close panic.
func (o *OutputBatcher) Close() { o.core.Close() }

// Buffered is how many lines wait in memory for their batch.
func (o *OutputBatcher) Buffered() int { return o.core.Buffered() }

// NextSequence returns the sequence the next emitted event will get.
// Buffered lines have none yet.
func (o *OutputBatcher) NextSequence() int64 {
	var n int64
	o.core.with(func() { n = o.next })
	return n
}

// Stats returns what has been emitted so far.
func (o *OutputBatcher) Stats() OutputStats {
	var s OutputStats
	o.core.with(func() { s = o.stats.clone() })
	return s
}

// flush is the core's flush function: it makes one OUTPUT_BATCH event of
// the lines, giving them the next len(lines) sequences.
func (o *OutputBatcher) flush(lines []events.Line, r Reason) {
	n := len(lines)
	var size int64
	for _, l := range lines {
		size += int64(len(l.Data))
	}
	start := o.next
	o.next += int64(n)
	o.stats.Batches++
	o.stats.Lines += int64(n)
	o.stats.Bytes += size
	o.stats.Flushes[r]++
	b := events.Batch{Sequence: start, Lines: lines, Attempt: o.attempt, PlaybackIntervalMillis: o.playback}
	if o.emitBatch != nil {
		o.emitBatch(b, r)
		return
	}
	o.emit(b.Event())
}
