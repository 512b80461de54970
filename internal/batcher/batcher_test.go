package batcher_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/batcher/batchertest"
)

// flushed is one batch as the flush function saw it.
type flushed[T any] struct {
	items  []T
	reason batcher.Reason
	at     time.Time
}

// recorder collects flushes (copying them: the batcher reuses its array).
type recorder[T any] struct {
	clock batcher.Clock
	mu    sync.Mutex
	got   []flushed[T]
}

func (r *recorder[T]) flush(batch []T, reason batcher.Reason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, flushed[T]{items: slices.Clone(batch), reason: reason, at: r.clock.Now()})
}

// take returns the flushes since the last take.
func (r *recorder[T]) take() []flushed[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// intBatcher batches ints whose size is their value, on a fake clock.
func intBatcher(t *testing.T, cfg batcher.Config) (*batcher.Batcher[int], *recorder[int], *batchertest.Clock) {
	t.Helper()
	clock := batchertest.NewClock(time.Time{})
	rec := &recorder[int]{clock: clock}
	b := batcher.New(cfg, clock, func(n int) int64 { return int64(n) }, rec.flush)
	return b, rec, clock
}

// expect checks flushes against "reason:items" strings, e.g. "size:[1 2]".
func expect[T any](t *testing.T, got []flushed[T], want ...string) {
	t.Helper()
	g := make([]string, len(got))
	for i, f := range got {
		g[i] = fmt.Sprintf("%v:%v", f.reason, f.items)
	}
	if !slices.Equal(g, want) {
		t.Fatalf("flushes:\n got  %q\n want %q", g, want)
	}
}

func addAll(b *batcher.Batcher[int], items ...int) {
	for _, it := range items {
		b.Add(it)
	}
}

var steady = batcher.Config{MaxItems: 100, FlushInterval: 2 * time.Second, QuickDelay: 50 * time.Millisecond, WatchedInterval: 200 * time.Millisecond}

func TestFlushOnInterval(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	// The first items of all are quick (nothing was flushed before).
	b.Add(0)
	clock.Advance(50 * time.Millisecond)
	expect(t, rec.take(), "quick:[0]")
	start := clock.Now()
	// Right after a flush is not a quiet spell: the interval applies.
	addAll(b, 1, 2)
	clock.Advance(time.Second)
	b.Add(3)
	clock.Advance(time.Second - time.Nanosecond)
	expect(t, rec.take())
	clock.Advance(time.Nanosecond)
	got := rec.take()
	expect(t, got, "interval:[1 2 3]")
	if want := start.Add(2 * time.Second); !got[0].at.Equal(want) {
		t.Fatalf("flushed at %v, want %v (the interval counts from the first item)", got[0].at, want)
	}
	if clock.Pending() != 0 {
		t.Fatalf("%d timers pending with an empty buffer", clock.Pending())
	}
}

func TestFlushOnSize(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{MaxItems: 3, FlushInterval: time.Second})
	addAll(b, 0, 1, 2, 3, 4, 5, 6)
	expect(t, rec.take(), "size:[0 1 2]", "size:[3 4 5]")
	clock.Advance(time.Second)
	expect(t, rec.take(), "interval:[6]")
}

func TestFlushOnBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []int
		want  []string
	}{
		{"exactly at the limit flushes at once", []int{4, 6}, []string{"bytes:[4 6]"}},
		{"one byte over flushes what was there", []int{4, 7}, []string{"bytes:[4]"}},
		{"the next batch fills up again", []int{4, 7, 3, 1}, []string{"bytes:[4]", "bytes:[7 3]"}},
		{"an item larger than the limit goes alone", []int{2, 15, 1}, []string{"bytes:[2]", "bytes:[15]"}},
		{"empty items never overflow", []int{0, 0, 9, 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, rec, _ := intBatcher(t, batcher.Config{MaxBytes: 10, FlushInterval: time.Second})
			addAll(b, tc.items...)
			got := rec.take()
			expect(t, got, tc.want...)
			for _, f := range got {
				var sum int
				for _, it := range f.items {
					sum += it
				}
				if sum > 10 && len(f.items) > 1 {
					t.Fatalf("batch %v holds %d bytes, over the limit", f.items, sum)
				}
			}
		})
	}
}

func TestDoFlushesThenRuns(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	addAll(b, 1, 2)
	var ranAfter int
	b.Do(func() { ranAfter = len(rec.got) })
	expect(t, rec.take(), "critical:[1 2]")
	if ranAfter != 1 {
		t.Fatalf("fn ran after %d flushes, want 1 (after the pending items)", ranAfter)
	}
	if clock.Pending() != 0 {
		t.Fatal("the flushed batch's timer is still pending")
	}
	// Nothing buffered: fn runs, nothing is flushed.
	ran := false
	b.Do(func() { ran = true })
	if !ran {
		t.Fatal("Do did not run fn")
	}
	expect(t, rec.take())
}

// TestDoIsAtomic races timed flushes (real clock, tiny interval) and Adds
// against Do: a critical flush must always be directly followed by its fn,
// never by another batch.
func TestDoIsAtomic(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, s)
	}
	b := batcher.New(batcher.Config{MaxItems: 7, FlushInterval: time.Microsecond}, batcher.SystemClock(), nil,
		func(batch []int, r batcher.Reason) { record(r.String()) })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 5000 {
				b.Add(i)
			}
		})
	}
	wg.Go(func() {
		for range 2000 {
			b.Do(func() { record("fn") })
		}
	})
	wg.Wait()
	b.Close()
	for i, s := range log {
		if s == "critical" && (i+1 == len(log) || log[i+1] != "fn") {
			t.Fatalf("entry %d: a critical flush is followed by %q, not its fn", i, log[min(i+1, len(log)-1)])
		}
	}
}

func TestClose(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	addAll(b, 1, 2)
	b.Close()
	expect(t, rec.take(), "close:[1 2]")
	if clock.Pending() != 0 {
		t.Fatalf("%d timers pending after Close", clock.Pending())
	}
	b.Close() // a second Close is harmless
	b.Flush(batcher.ReasonExplicit)
	b.SetWatched(true)
	clock.Advance(time.Minute)
	expect(t, rec.take())

	for name, call := range map[string]func(){
		"Add": func() { b.Add(3) },
		"Do":  func() { b.Do(func() {}) },
	} {
		msg := panicMessage(call)
		if !strings.Contains(msg, name+" called after Close") {
			t.Errorf("%s after Close: panic %q, want one saying so", name, msg)
		}
	}
}

func panicMessage(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return ""
}

func TestExplicitFlush(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	b.Flush(batcher.ReasonExplicit)
	expect(t, rec.take())
	addAll(b, 5)
	b.Flush(batcher.ReasonExplicit)
	expect(t, rec.take(), "explicit:[5]")
	clock.Advance(time.Minute)
	expect(t, rec.take())
}

// TestQuickFlushAfterQuietSpell: occasional output is shown promptly, while
// steady output waits for the interval (few writes) and busy output fills
// batches.
func TestQuickFlushAfterQuietSpell(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	clock.Advance(2 * time.Second) // quiet since creation

	b.Add(1)
	if due, _ := clock.NextDue(); due != 50*time.Millisecond {
		t.Fatalf("first item after a quiet spell is due in %v, want the quick delay", due)
	}
	clock.Advance(49 * time.Millisecond)
	expect(t, rec.take())
	clock.Advance(time.Millisecond)
	expect(t, rec.take(), "quick:[1]")

	// Steady output: the last flush was recent, so the interval applies.
	clock.Advance(500 * time.Millisecond)
	b.Add(2)
	clock.Advance(time.Second)
	b.Add(3)
	clock.Advance(time.Second - time.Nanosecond)
	expect(t, rec.take())
	clock.Advance(time.Nanosecond)
	expect(t, rec.take(), "interval:[2 3]")

	// Exactly one interval of quiet counts as a quiet spell again.
	clock.Advance(2 * time.Second)
	b.Add(4)
	clock.Advance(50 * time.Millisecond)
	expect(t, rec.take(), "quick:[4]")
}

func TestQuickDelayNeverExceedsInterval(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{FlushInterval: time.Second, QuickDelay: 5 * time.Second})
	clock.Advance(time.Hour)
	b.Add(1)
	clock.Advance(time.Second)
	expect(t, rec.take(), "interval:[1]")
}

func TestWatchedInterval(t *testing.T) {
	b, rec, clock := intBatcher(t, steady)
	b.Add(0)
	clock.Advance(50 * time.Millisecond)
	expect(t, rec.take(), "quick:[0]") // the first items of all are quick
	b.Add(1)                           // due in 2s
	clock.Advance(100 * time.Millisecond)
	b.SetWatched(true) // now due 200ms after the item came
	clock.Advance(99 * time.Millisecond)
	expect(t, rec.take())
	clock.Advance(time.Millisecond)
	expect(t, rec.take(), "interval:[1]")

	b.Add(2)
	clock.Advance(200 * time.Millisecond)
	expect(t, rec.take(), "interval:[2]")

	// Becoming watched when the deadline is already past flushes at once.
	b.SetWatched(false)
	b.Add(3)
	clock.Advance(time.Second)
	expect(t, rec.take())
	b.SetWatched(true)
	clock.Advance(0)
	expect(t, rec.take(), "interval:[3]")

	b.SetWatched(false)
	b.Add(4)
	clock.Advance(200 * time.Millisecond)
	expect(t, rec.take())
	clock.Advance(1800 * time.Millisecond)
	expect(t, rec.take(), "interval:[4]")
	if clock.Pending() != 0 {
		t.Fatalf("%d timers pending, want 0", clock.Pending())
	}
}

func TestWatchedIntervalLongerThanFlushIntervalIsIgnored(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{FlushInterval: time.Second, WatchedInterval: 3 * time.Second})
	b.SetWatched(true)
	b.Add(1)
	clock.Advance(time.Second)
	expect(t, rec.take(), "interval:[1]")
}

func TestStaleTimerDoesNothing(t *testing.T) {
	fake := batchertest.NewClock(time.Time{})
	clock := batchertest.LateStops(fake) // stale timers run, as when Stop loses a race
	rec := &recorder[int]{clock: clock}
	b := batcher.New(batcher.Config{MaxItems: 2, FlushInterval: 2 * time.Second}, clock, nil, rec.flush)

	b.Add(1) // timer A, due at 2s
	b.Add(2) // size flush; A is now stale but cannot be stopped
	expect(t, rec.take(), "size:[1 2]")
	fake.Advance(time.Second)
	b.Add(3) // timer B, due at 3s
	fake.Advance(time.Second)
	expect(t, rec.take()) // A fired: it must not flush item 3 early
	fake.Advance(time.Second)
	expect(t, rec.take(), "interval:[3]")

	// A stale timer after Close does nothing either.
	b.Add(4)
	b.Close()
	expect(t, rec.take(), "close:[4]")
	fake.Advance(time.Hour)
	expect(t, rec.take())
}

func TestAtMostOneTimer(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{MaxItems: 1000, FlushInterval: time.Second, QuickDelay: 10 * time.Millisecond, WatchedInterval: 100 * time.Millisecond})
	for i := range 500 {
		b.Add(i)
		if i%7 == 0 {
			b.SetWatched(i%2 == 0)
		}
		if n := clock.Pending(); n != 1 {
			t.Fatalf("after item %d: %d timers pending, want 1", i, n)
		}
		clock.Advance(time.Duration(i%13) * time.Millisecond)
	}
	b.Close()
	var n int
	for _, f := range rec.take() {
		n += len(f.items)
	}
	if n != 500 {
		t.Fatalf("flushed %d items, want 500", n)
	}
}

func TestZeroConfigOnlyFlushesWhenAsked(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{})
	addAll(b, 1, 2, 3)
	clock.Advance(time.Hour)
	expect(t, rec.take())
	if clock.Pending() != 0 {
		t.Fatal("a timer was armed with no interval configured")
	}
	b.Close()
	expect(t, rec.take(), "close:[1 2 3]")
}

func TestWatchedIntervalWithoutFlushInterval(t *testing.T) {
	b, rec, clock := intBatcher(t, batcher.Config{WatchedInterval: 100 * time.Millisecond})
	b.Add(1)
	clock.Advance(time.Hour)
	expect(t, rec.take())
	b.SetWatched(true) // the item has a deadline now
	clock.Advance(100 * time.Millisecond)
	expect(t, rec.take(), "interval:[1]")
}

// TestConcurrentAdd: items added from several goroutines each come out
// exactly once, in each goroutine's order, in batches within the limits.
func TestConcurrentAdd(t *testing.T) {
	type item struct{ g, i int }
	const goroutines, perG = 8, 5000
	var (
		mu      sync.Mutex
		batches [][]item
	)
	cfg := batcher.Config{MaxItems: 37, MaxBytes: 300, FlushInterval: 50 * time.Microsecond, QuickDelay: 10 * time.Microsecond}
	b := batcher.New(cfg, batcher.SystemClock(), func(it item) int64 { return int64(it.i % 20) },
		func(batch []item, r batcher.Reason) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, slices.Clone(batch))
		})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				b.Add(item{g, i})
				if i%1000 == 0 {
					b.Flush(batcher.ReasonExplicit)
				}
			}
		})
	}
	wg.Wait()
	b.Close()

	next := make([]int, goroutines)
	for _, batch := range batches {
		var size int64
		for _, it := range batch {
			if it.i != next[it.g] {
				t.Fatalf("goroutine %d: got item %d, want %d", it.g, it.i, next[it.g])
			}
			next[it.g]++
			size += int64(it.i % 20)
		}
		if len(batch) > cfg.MaxItems || size > cfg.MaxBytes {
			t.Fatalf("batch of %d items, %d bytes exceeds the limits", len(batch), size)
		}
	}
	for g, n := range next {
		if n != perG {
			t.Fatalf("goroutine %d: %d items flushed, want %d", g, n, perG)
		}
	}
}

func TestReasonString(t *testing.T) {
	var names []string
	for _, r := range batcher.Reasons() {
		names = append(names, r.String())
	}
	want := []string{"size", "bytes", "interval", "quick", "critical", "close", "explicit"}
	if !slices.Equal(names, want) {
		t.Fatalf("reasons %q, want %q", names, want)
	}
	if s := batcher.Reason(0).String(); s != "Reason(0)" {
		t.Fatalf("Reason(0) = %q", s)
	}
}

// TestBuffered: the items waiting are counted until their flush.
func TestBuffered(t *testing.T) {
	b, rec, _ := intBatcher(t, batcher.Config{MaxItems: 3, FlushInterval: time.Hour})
	defer b.Close()
	for i, want := range []int{1, 2, 0, 1} {
		b.Add(1)
		if got := b.Buffered(); got != want {
			t.Fatalf("after %d adds, %d buffered, want %d", i+1, got, want)
		}
	}
	expect(t, rec.take(), "size:[1 1 1]")
}
