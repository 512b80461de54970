package notify

import (
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

func TestNotifyWakesWatchersOfTheKeyOnly(t *testing.T) {
	var h Hub
	a1, a2, b := h.Watch("a"), h.Watch("a"), h.Watch("b")
	if a1 != a2 {
		t.Fatal("two watchers of one key got different channels")
	}
	h.Notify("a")
	if !closed(a1) || closed(b) {
		t.Fatalf("after Notify(a): a closed %v, b closed %v", closed(a1), closed(b))
	}
	// A watch taken after the notify waits for the next one.
	next := h.Watch("a")
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
		ch := h.Watch("k")
		wg.Go(func() { h.Notify("k") })
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a notify was lost")
		}
	}
	wg.Wait()
}
