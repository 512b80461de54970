package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// testSharedPollers: the workers each server records are read by every
// server, together; a server's new record replaces its old one, and a
// record older than asked for is not read.
func testSharedPollers(t *testing.T, a, b store.JobStore) {
	sa, sb := a.Capabilities().PollerSharer, b.Capabilities().PollerSharer
	if sa == nil || sb == nil {
		t.Fatal("a store that servers share must offer store.Capabilities.PollerSharer: without it, each server counts only the workers polling it")
	}
	ctx := context.Background()
	q1, q2 := newQueue(), newQueue()
	before := storekit.Now().Add(-time.Second)
	if err := sa.SharePollers(ctx, map[string][]string{q1: {"w-a"}}); err != nil {
		t.Fatal(err)
	}
	if err := sb.SharePollers(ctx, map[string][]string{q1: {"w-b"}, q2: {"w-c", "w-d"}}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]store.PollerSharer{"a": sa, "b": sb} {
		got, err := s.SharedPollers(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		if w := sorted(got[q1]); !slices.Equal(w, []string{"w-a", "w-b"}) {
			t.Errorf("server %s reads %v polling %s, want w-a (server a's) and w-b (server b's)", name, w, q1)
		}
		if w := sorted(got[q2]); !slices.Equal(w, []string{"w-c", "w-d"}) {
			t.Errorf("server %s reads %v polling %s, want w-c and w-d", name, w, q2)
		}
	}

	// a's workers left q1 for q2: its new record replaces the old.
	if err := sa.SharePollers(ctx, map[string][]string{q2: {"w-a"}}); err != nil {
		t.Fatal(err)
	}
	got, err := sb.SharedPollers(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	if w := sorted(got[q1]); !slices.Equal(w, []string{"w-b"}) {
		t.Errorf("after a's new record, %v polling %s, want w-b alone", w, q1)
	}
	if w := sorted(got[q2]); !slices.Equal(w, []string{"w-a", "w-c", "w-d"}) {
		t.Errorf("after a's new record, %v polling %s, want w-a, w-c, w-d", w, q2)
	}

	// Records older than asked for are not read.
	got, err = sb.SharedPollers(ctx, storekit.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got[q1])+len(got[q2]) > 0 {
		t.Errorf("records read from before since: %v", got)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
