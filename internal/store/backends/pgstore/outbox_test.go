package pgstore

import (
	"slices"
	"testing"
)

// Notes that wake the same waiters are sent once, newest first noted order
// kept; unsent ones go back ahead of newer notes without overwriting them.
func TestOutboxMergesAndPutsBack(t *testing.T) {
	o := &outbox{pending: map[string]string{}, kick: make(chan struct{}, 1)}
	o.add(notes{"job:a 2 1", "queue:q"})
	o.add(notes{"job:b", "job:a 5 9"})
	got := o.take()
	if want := []string{"job:a 5 9", "queue:q", "job:b"}; !slices.Equal(got, want) {
		t.Fatalf("take = %q, want %q", got, want)
	}
	if rest := o.take(); len(rest) != 0 {
		t.Fatalf("take after take = %q, want nothing", rest)
	}
	// A send failed; meanwhile job a moved on and job c changed.
	o.add(notes{"job:a 7 12", "job:c"})
	o.putBack(got)
	if got, want := o.take(), []string{"queue:q", "job:b", "job:a 7 12", "job:c"}; !slices.Equal(got, want) {
		t.Fatalf("after putBack, take = %q, want %q", got, want)
	}
}
