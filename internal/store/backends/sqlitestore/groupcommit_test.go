package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pause is a write that pauses queue, then fails with fail if it is set.
func pause(queue string, fail error) *pendingWrite {
	return &pendingWrite{ctx: context.Background(), done: make(chan struct{}), fn: func(ctx context.Context, tx *sql.Tx, n *notes) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO queues (name, paused_at) VALUES (?, 1)`, queue); err != nil {
			return err
		}
		n.queue(queue)
		return fail
	}}
}

// A write that fails in a group undoes only itself; the others commit.
func TestGroupCommitIsolatesAFailedWrite(t *testing.T) {
	s := openStore(t)
	boom := errors.New("boom")
	group := []*pendingWrite{pause("a", nil), pause("b", boom), pause("c", nil), pause("a", nil)}
	s.commit(group)
	if group[0].err != nil || group[2].err != nil {
		t.Fatalf("the good writes failed: %v, %v", group[0].err, group[2].err)
	}
	if !errors.Is(group[1].err, boom) || group[1].n != nil {
		t.Fatalf("the failing write: %v, notes %v", group[1].err, group[1].n)
	}
	if group[3].err == nil {
		t.Fatal("a second pause of a (a primary key in use) did not fail")
	}
	for q, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if got, err := s.QueuePaused(context.Background(), q); err != nil || got != want {
			t.Errorf("queue %s paused = %v, %v; want %v", q, got, err, want)
		}
	}
}

// Writes that wait together share a commit, and each is acknowledged only
// once it is stored.
func TestGroupCommitShares(t *testing.T) {
	s := openStore(t)
	const n = 200
	before := s.commits.Load()
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			j, _, err := s.Enqueue(context.Background(), store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
				Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 1}}, MaxAttempts: 1})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = j.GetJobId()
		})
	}
	wg.Wait()
	if c := s.commits.Load() - before; c >= n {
		t.Errorf("%d enqueues took %d commits: none was shared", n, c)
	}
	for _, id := range ids {
		if _, err := s.Get(context.Background(), id); err != nil {
			t.Fatalf("acknowledged job %s is not stored: %v", id, err)
		}
	}
}

// A write whose caller gave up before it was taken up is not made; after
// Close, writes are refused rather than left waiting.
func TestGroupCommitCancelAndClose(t *testing.T) {
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.SetQueuePaused(ctx, "x", true, time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write with an ended context: %v", err)
	}
	if p, _ := s.QueuePaused(context.Background(), "x"); p {
		t.Fatal("the cancelled write was made")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetQueuePaused(context.Background(), "y", true, time.Now()); !errors.Is(err, errClosed) {
		t.Fatalf("a write after Close: %v", err)
	}
}
