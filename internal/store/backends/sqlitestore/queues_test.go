package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The paused queues are kept in memory for the leases that ask about them;
// what they say must be what the database says, across a restart too.
func TestPausedQueuesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "spool.db")
	s := open(t, path)
	at := time.Now()
	for _, q := range []string{"a", "b"} {
		if err := s.SetQueuePaused(ctx, q, true, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetQueuePaused(ctx, "b", false, at); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a": true, "b": false, "c": false}
	check := func(when string) {
		t.Helper()
		for q, paused := range want {
			if got, err := s.QueuePaused(ctx, q); err != nil || got != paused {
				t.Errorf("%s: QueuePaused(%s) = %v, %v; want %v", when, q, got, err, paused)
			}
		}
	}
	check("before the restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	check("after the restart")
	if err := s.SetQueuePaused(ctx, "a", false, at); err != nil {
		t.Fatal(err)
	}
	want["a"] = false
	check("after a resume")
}
