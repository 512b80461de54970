package batchertest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/batcher/batchertest"
)

func TestAdvanceFiresDueTimersInOrder(t *testing.T) {
	c := batchertest.NewClock(time.Time{})
	start := c.Now()
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().Sub(start).String()) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, at("a"))
	c.AfterFunc(time.Second, at("b")) // same deadline: creation order
	c.AfterFunc(time.Second, func() {
		// A timer armed by a callback fires in the same Advance if due.
		c.AfterFunc(500*time.Millisecond, at("nested"))
	})
	stopped := c.AfterFunc(2*time.Second, at("stopped"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should succeed once")
	}

	c.Advance(2 * time.Second)
	if want := []string{"a@1s", "b@1s", "nested@1.5s"}; !slices.Equal(got, want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
	if d := c.Now().Sub(start); d != 2*time.Second {
		t.Fatalf("now is +%v, want +2s", d)
	}
	if due, ok := c.NextDue(); !ok || due != time.Second || c.Pending() != 1 {
		t.Fatalf("next due %v %v, %d pending", due, ok, c.Pending())
	}
	c.Advance(time.Second)
	if got[len(got)-1] != "c@3s" || c.Pending() != 0 {
		t.Fatalf("fired %q, %d pending", got, c.Pending())
	}
	if _, ok := c.NextDue(); ok {
		t.Fatal("NextDue with no timers")
	}
}

func TestZeroDelayFiresOnNextAdvance(t *testing.T) {
	c := batchertest.NewClock(time.Time{})
	fired := false
	c.AfterFunc(-time.Second, func() { fired = true })
	c.Advance(0)
	if !fired {
		t.Fatal("a timer due now did not fire on Advance(0)")
	}
}

func TestWaitTimers(t *testing.T) {
	c := batchertest.NewClock(time.Time{})
	go c.AfterFunc(time.Second, func() {})
	if err := c.WaitTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitTimers(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
