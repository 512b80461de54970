package awsstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeCalls is a gatherer's call that records its batches and holds each
// until told to go on.
type fakeCalls struct {
	mu      sync.Mutex
	batches [][]int
	started chan []int
	proceed chan struct{}
}

func newFakeCalls() *fakeCalls {
	return &fakeCalls{started: make(chan []int, 100), proceed: make(chan struct{}, 100)}
}

func (f *fakeCalls) call(ctx context.Context, key string, batch []*gathered[int]) {
	items := make([]int, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	f.mu.Lock()
	f.batches = append(f.batches, items)
	f.mu.Unlock()
	f.started <- items
	<-f.proceed
	for _, p := range batch {
		if p.item < 0 {
			p.err = errors.New("refused")
		}
	}
}

func (f *fakeCalls) next(t *testing.T) []int {
	t.Helper()
	select {
	case b := <-f.started:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no call started")
		return nil
	}
}

// waiting is how many entries of key wait.
func (g *gatherer[T]) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.lanes[key]; l != nil {
		return len(l.waiting)
	}
	return 0
}

// awaitWaiting polls until n entries of key wait: nothing signals an
// entry's arrival.
func awaitWaiting[T any](t *testing.T, g *gatherer[T], key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.waiting(key) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries wait, want %d", g.waiting(key), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGatherer: a lone entry goes at once; entries arriving while a call is
// in flight wait for the next, but a full batch goes at once; an entry
// whose ctx ends while it waits is answered with ctx's error and not sent;
// an entry's failure is its own.
func TestGatherer(t *testing.T) {
	f := newFakeCalls()
	g := newGatherer(10, f.call)
	ctx := context.Background()

	errs := make(chan error, 100)
	go func() { errs <- g.do(ctx, "q", 0) }()
	if b := f.next(t); !slices.Equal(b, []int{0}) {
		t.Fatalf("first call took %v, want [0] alone", b)
	}
	// 0 is in flight: 24 arrive; two full batches go at once.
	var wg sync.WaitGroup
	for i := 1; i <= 25; i++ {
		if i == 23 {
			continue
		}
		item := i
		if i == 24 {
			item = -i // refused
		}
		wg.Go(func() { errs <- g.do(ctx, "q", item) })
	}
	full := [][]int{f.next(t), f.next(t)}
	for _, b := range full {
		if len(b) != 10 {
			t.Fatalf("a batch of %d went while a call was in flight, want only full ones: %v", len(b), full)
		}
	}
	awaitWaiting(t, g, "q", 4)
	gone, cancel := context.WithCancel(ctx)
	var gaveUp error
	wg.Go(func() { gaveUp = g.do(gone, "q", 23) })
	awaitWaiting(t, g, "q", 5)
	cancel()
	awaitWaiting(t, g, "q", 4)
	f.proceed <- struct{}{} // 0
	f.proceed <- struct{}{} // the full ones
	f.proceed <- struct{}{}
	last := f.next(t)
	f.proceed <- struct{}{}
	wg.Wait()
	if !errors.Is(gaveUp, context.Canceled) {
		t.Fatalf("an entry whose ctx ended while it waited: %v, want context.Canceled", gaveUp)
	}
	sent := slices.Concat(full[0], full[1], last)
	slices.Sort(sent)
	want := []int{-24}
	for i := 1; i <= 25; i++ {
		if i != 23 && i != 24 {
			want = append(want, i)
		}
	}
	if !slices.Equal(sent, want) || len(last) != 4 {
		t.Fatalf("sent %v (last batch %v), want %v with the last four together", sent, last, want)
	}
	failed := 0
	for range 25 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d entries failed, want the refused one only", failed)
	}
	if err := g.do(gone, "q", 99); !errors.Is(err, context.Canceled) {
		t.Fatalf("an entry whose ctx had ended: %v, want context.Canceled", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.batches) != 4 {
		t.Fatalf("calls %v, want 4", f.batches)
	}
	// The lane goes once its last call has answered.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		n := len(g.lanes)
		g.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lane with nothing waiting or in flight is kept")
		}
	}
}

// TestGathererCallContext: a call's context carries its first entry's
// values, and ends only once every entry's ctx has.
func TestGathererCallContext(t *testing.T) {
	type key struct{}
	a, cancelA := context.WithCancel(context.WithValue(context.Background(), key{}, "a"))
	b, cancelB := context.WithCancel(context.Background())
	ctx, stop := joinContexts([]*gathered[int]{{ctx: a}, {ctx: b}})
	defer stop()
	if ctx.Value(key{}) != "a" {
		t.Fatal("the call's context lost its first entry's values")
	}
	cancelA()
	if ctx.Err() != nil {
		t.Fatal("one entry's ctx ending ended the call's")
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call's context outlived every entry's")
	}
}
