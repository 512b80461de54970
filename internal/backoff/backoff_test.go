package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelaysGrowWithinBounds(t *testing.T) {
	b := New(100*time.Millisecond, time.Second)
	caps := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, c := range caps {
		c *= time.Millisecond
		if d := b.Delay(); d < c/2 || d > c {
			t.Fatalf("delay %d = %v, want within [%v, %v]", i, d, c/2, c)
		}
	}
	b.Reset()
	if d := b.Delay(); d > 100*time.Millisecond {
		t.Fatalf("after Reset: %v", d)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	b := New(time.Hour, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); err == nil {
		t.Fatal("Wait ignored a cancelled context")
	}
}
