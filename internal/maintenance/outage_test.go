package maintenance

import (
	"testing"
	"time"
)

// A failure seen since the last answered sweep makes the next sweep give
// grace from that sweep's start; once a sweep has dealt with it, the next
// one is regular again. A failure during a sweep counts for the next.
func TestStoreOutageSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	o := NewOutage(t0)
	if since, _ := o.since(); !since.IsZero() {
		t.Fatalf("no failure seen, yet since = %v", since)
	}

	o.Saw()
	since, seen := o.since()
	if !since.Equal(t0) {
		t.Fatalf("after a failure, since = %v, want the last answer %v", since, t0)
	}
	t1 := t0.Add(time.Second)
	o.swept(t1, seen)
	if since, _ := o.since(); !since.IsZero() {
		t.Fatalf("the failure was dealt with, yet since = %v", since)
	}

	// A failure while a sweep runs: that sweep does not deal with it, and
	// the next gives grace from before it.
	_, seen = o.since()
	o.Saw()
	o.swept(t1.Add(time.Second), seen)
	if since, _ := o.since(); !since.Equal(t1) {
		t.Fatalf("a failure during a sweep: since = %v, want %v", since, t1)
	}
}
