package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
)

// enqueueN enqueues n jobs on queue q.
func enqueueN(t *testing.T, s store.JobStore, q string, n int) {
	t.Helper()
	for range n {
		if _, _, err := s.Enqueue(context.Background(), store.NewJob{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"true"}},
			Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
}

func dequeueUnpaused(s *pgstore.Store, q string, wait time.Duration) ([]store.Lease, error) {
	return s.DequeueUnpaused(context.Background(), store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute, Wait: wait})
}

// waitForLockWaiter waits until a session of the test's database waits
// for an advisory lock.
func waitForLockWaiter(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing waited for the queue's pause lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holdPauseLock begins a transaction on a connection of its own that holds
// queue q's pause lock, shared (as a lease under way does) or alone (as a
// pause does).
func holdPauseLock(t *testing.T, url string, shared bool) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pgtest.Connect(t, url).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	lock := `SELECT pg_advisory_xact_lock($1, hashtext('q'))`
	if shared {
		lock = `SELECT pg_advisory_xact_lock_shared($1, hashtext('q'))`
	}
	if _, err := tx.Exec(ctx, lock, pgstore.PauseLockClass); err != nil {
		t.Fatal(err)
	}
	return tx
}

// leaseResult is what a dequeue in the background got.
type leaseResult struct {
	n   int
	err error
}

// dequeueInBackground runs dequeueUnpaused on its own goroutine.
func dequeueInBackground(s *pgstore.Store, q string, wait time.Duration) <-chan leaseResult {
	out := make(chan leaseResult, 1)
	go func() {
		leases, err := dequeueUnpaused(s, q, wait)
		out <- leaseResult{len(leases), err}
	}()
	return out
}

func TestPausedQueueLeasesNothing(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	enqueueN(t, s, "q", 3)
	if err := s.SetQueuePaused(ctx, "q", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if leases, err := dequeueUnpaused(s, "q", 0); err != nil || len(leases) != 0 {
		t.Fatalf("paused queue: %d leases, %v; want none", len(leases), err)
	}
	if err := s.SetQueuePaused(ctx, "q", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if leases, err := dequeueUnpaused(s, "q", 0); err != nil || len(leases) != 3 {
		t.Fatalf("resumed queue: %d leases, %v; want 3", len(leases), err)
	}
}

// A pause waits for the leases under way (here, a session holding the
// queue's pause lock as a lease does): once it returns, none of them can
// still commit.
func TestPauseWaitsForLeasesUnderWay(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	ctx := context.Background()
	tx := holdPauseLock(t, url, true)
	paused := make(chan error, 1)
	go func() { paused <- s.SetQueuePaused(ctx, "q", true, time.Now()) }()
	waitForLockWaiter(t, pgtest.Connect(t, url))
	select {
	case err := <-paused:
		t.Fatalf("the pause returned (%v) while a lease of its queue was under way", err)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
}

// A lease that starts while a pause is under way waits for it, and then
// sees it: it leases nothing.
func TestLeaseSeesAPauseUnderWay(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	ctx := context.Background()
	enqueueN(t, s, "q", 3)
	tx := holdPauseLock(t, url, false)
	if _, err := tx.Exec(ctx, `INSERT INTO queues (name, paused_at) VALUES ('q', 1)`); err != nil {
		t.Fatal(err)
	}
	got := dequeueInBackground(s, "q", 0)
	waitForLockWaiter(t, pgtest.Connect(t, url))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.n != 0 {
		t.Fatalf("a lease that waited out a pause took %d jobs (%v); want none", r.n, r.err)
	}
}

// A resume on one server wakes the polls of the queue on another at once,
// without waiting for their interval.
func TestResumeWakesPollsOfPausedQueue(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	pgstore.SetPollInterval(a, time.Hour)
	ctx := context.Background()
	enqueueN(t, a, "q", 2)
	if err := a.SetQueuePaused(ctx, "q", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	got := dequeueInBackground(a, "q", 30*time.Second)
	for pgstore.Polling(a, "q") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.SetQueuePaused(ctx, "q", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil || r.n != 2 {
			t.Fatalf("after the resume: %d leases, %v; want 2", r.n, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a resume on another server did not wake the queue's waiting poll")
	}
}

// A promotion on one server wakes the polls of the job's queue on another
// at once.
func TestPromotionWakesPollsOfOtherServers(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	sqlrowstest.CheckPromotionWakes(t, a, b, func(d time.Duration) { pgstore.SetPollInterval(a, d) },
		func(q string) int { return pgstore.Polling(a, q) })
}
