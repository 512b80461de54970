package notify

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitFor polls cond until it holds: a released wait is forgotten on a
// goroutine of its own, soon after its context ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNotifyWakesWatchersOfTheKeyOnly(t *testing.T) {
	var h Hub
	ctx := t.Context()
	a1, a2, b := h.Watch(ctx, "a"), h.Watch(ctx, "a"), h.Watch(ctx, "b")
	if a1 != a2 {
		t.Fatal("two watchers of one key got different channels")
	}
	h.Notify("a")
	if !closed(a1) || closed(b) {
		t.Fatalf("after Notify(a): a closed %v, b closed %v", closed(a1), closed(b))
	}
	// A watch taken after the notify waits for the next one.
	next := h.Watch(ctx, "a")
	if closed(next) {
		t.Fatal("a new watch saw an old notify")
	}
	h.Notify("nobody") // no watchers: nothing to do, nothing kept
	if h.Len() != 2 {
		t.Fatalf("%d keys pending, want 2 (a and b)", h.Len())
	}
}

// TestNoLostWakeup: a notify between taking the channel and waiting on it
// is never missed.
func TestNoLostWakeup(t *testing.T) {
	var h Hub
	var wg sync.WaitGroup
	for range 100 {
		ch := h.Watch(t.Context(), "k")
		wg.Go(func() { h.Notify("k") })
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a notify was lost")
		}
	}
	wg.Wait()
}

// TestKeysForgottenWithTheirWaiters: the hub keeps a key while a wait on
// it lasts and forgets it when the last one ends, so waits on keys nobody
// ever notifies (made-up queue names) leave nothing behind.
func TestKeysForgottenWithTheirWaiters(t *testing.T) {
	var h Hub
	for i := range 10_000 {
		ctx, cancel := context.WithCancel(context.Background())
		h.Watch(ctx, fmt.Sprint("made-up-", i))
		cancel()
	}
	waitFor(t, "10,000 ended waits forgotten", func() bool { return h.Len() == 0 })

	// Two waits on one key: the key stays until both end.
	first, endFirst := context.WithCancel(context.Background())
	second, endSecond := context.WithCancel(context.Background())
	ch := h.Watch(first, "k")
	h.Watch(second, "k")
	e := h.entry("k")
	endFirst()
	waitFor(t, "the first wait released", func() bool { return h.waiters(e) == 1 })
	if h.Len() != 1 {
		t.Fatal("the key was forgotten while a wait on it lasts")
	}
	h.Notify("k")
	if !closed(ch) {
		t.Fatal("the remaining waiter was not woken")
	}
	// A wait ending after the notify does not touch the key's next entry.
	next := h.Watch(t.Context(), "k")
	endSecond()
	waitFor(t, "the second wait released", func() bool { return h.waiters(e) == 0 })
	if h.Len() != 1 {
		t.Fatal("an old wait's end dropped a newer waiter's key")
	}
	h.Notify("k")
	if !closed(next) {
		t.Fatal("the newer waiter was not woken")
	}
	if h.Len() != 0 {
		t.Fatalf("%d keys left after every wait ended or was woken", h.Len())
	}
}

func (h *Hub) entry(key string) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[key]
}

func (h *Hub) waiters(e *entry) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return e.waiters
}

func TestNotifyAllWakesEveryKey(t *testing.T) {
	var h Hub
	ctx := t.Context()
	a, b := h.Watch(ctx, "a"), h.Watch(ctx, "b")
	h.NotifyAll()
	if !closed(a) || !closed(b) {
		t.Fatalf("after NotifyAll: a closed %v, b closed %v", closed(a), closed(b))
	}
	if h.Len() != 0 {
		t.Fatalf("hub keeps %d keys after NotifyAll", h.Len())
	}
	// A wait taken afterwards waits for the next change.
	if c := h.Watch(ctx, "a"); closed(c) {
		t.Fatal("a new wait after NotifyAll is already closed")
	}
}
