package conformance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// spend is SpendOnce that fails the test on an error.
func spend(t *testing.T, s store.JobStore, id string, until time.Time) bool {
	t.Helper()
	first, err := s.SpendOnce(context.Background(), id, until)
	if err != nil {
		t.Fatalf("SpendOnce %s: %v", id, err)
	}
	return first
}

// spent is Spent that fails the test on an error.
func spent(t *testing.T, s store.JobStore, id string) bool {
	t.Helper()
	got, err := s.Spent(context.Background(), id)
	if err != nil {
		t.Fatalf("Spent %s: %v", id, err)
	}
	return got
}

// testSpendOnce: an id is spent once; spending it again is refused and it
// reads as spent until its time passes; then it counts as never spent.
func testSpendOnce(t *testing.T, b Backend) {
	s := open(t, b)
	id := "ticket:" + newQueue()
	if spent(t, s, id) {
		t.Fatal("an id never spent reads as spent")
	}
	if !spend(t, s, id, time.Now().Add(time.Hour)) {
		t.Fatal("the first spend of an id was not first")
	}
	if spend(t, s, id, time.Now().Add(time.Hour)) {
		t.Fatal("an id was spent twice")
	}
	if !spent(t, s, id) || spent(t, s, id+"-other") {
		t.Fatal("Spent does not tell the spent id from another")
	}

	// An id whose time has passed is as good as new: its token is refused
	// by its own expiry by then, and the store may have forgotten it.
	short := "session:" + newQueue()
	if !spend(t, s, short, time.Now().Add(time.Second)) {
		t.Fatal("the first spend of a short-lived id was not first")
	}
	// Only the clock ends an id's time, so the wait is by the clock.
	for deadline := time.Now().Add(10 * time.Second); spent(t, s, short); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an id still reads as spent long after its time")
		}
	}
	if !spend(t, s, short, time.Now().Add(time.Hour)) {
		t.Fatal("an id whose time had passed could not be spent again")
	}
	if !spent(t, s, short) {
		t.Fatal("an id spent again does not read as spent")
	}
}

// testSpendOnceRace: of many spenders of one id at once, exactly one is
// first.
func testSpendOnceRace(t *testing.T, b Backend) {
	s := open(t, b)
	id := "ticket:" + newQueue()
	var firsts atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			first, err := s.SpendOnce(context.Background(), id, time.Now().Add(time.Hour))
			if err != nil {
				t.Errorf("SpendOnce: %v", err)
			}
			if first {
				firsts.Add(1)
			}
		})
	}
	wg.Wait()
	if firsts.Load() != 1 {
		t.Fatalf("%d spenders of one id were first", firsts.Load())
	}
}

// testSharedSpent: an id spent through one server is spent for the other,
// which can neither spend it again nor miss it.
func testSharedSpent(t *testing.T, a, b store.JobStore) {
	id := "ticket:" + newQueue()
	if !spend(t, a, id, time.Now().Add(time.Hour)) {
		t.Fatal("the first spend was not first")
	}
	if !spent(t, b, id) {
		t.Fatal("the other server does not see the id spent")
	}
	if spend(t, b, id, time.Now().Add(time.Hour)) {
		t.Fatal("the other server spent the id again")
	}
}
