package e2e

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
)

// TestTwoServersOnPostgres: two `spool server` processes on one
// PostgreSQL database behave as one spool. The worker's flush interval is a
// minute, so live output through the other server shows that the follow
// crossed servers.
func TestTwoServersOnPostgres(t *testing.T) {
	t.Parallel()
	store := configArgs(t, postgresConfig(pgtest.NewDatabase(t)))
	testTwoServers(t, store, []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=60"}, true)
}

// testTwoServers: two servers share store (server arguments; env added to
// their environment); a worker talks to server A, a watcher follows the job
// on server B and sees every line, once, in order, while the job runs;
// keys made on A work on B at once, and revoked on A are refused by B
// within a second; B counts the worker polling A. sharedWatch: the store
// carries the "someone is watching" signal between servers.
func testTwoServers(t *testing.T, store, env []string, sharedWatch bool) {
	_, a := startServerEnv(t, freePort(t), t.TempDir(), env, store...)
	_, b := startServerEnv(t, freePort(t), t.TempDir(), env, store...)
	startWorker(t, "worker", a.URL(), t.TempDir())

	job, _, err := a.Submit(context.Background(), client.SubmitParams{Script: slowCount(40)})
	if err != nil {
		t.Fatal(err)
	}
	// The job writes for about 2 s: a follow still open after a minute
	// is stuck, and fails with the servers' and the worker's output.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := b.Events(ctx, job.ID, client.StreamOptions{Follow: true})
	var (
		lines   []string
		seen    []time.Time // when each line reached B
		prevSeq int64
	)
	for ev, err := range s.All() {
		if err != nil {
			t.Fatalf("watching on replica B: %v", err)
		}
		if ev.Sequence != prevSeq+1 {
			t.Fatalf("sequence %d after %d", ev.Sequence, prevSeq)
		}
		prevSeq = ev.Sequence
		for _, l := range ev.Lines {
			lines = append(lines, l.Text)
			seen = append(seen, time.Now())
		}
	}
	done := s.Finished()
	if done == nil || done.State != spool.Succeeded {
		t.Fatalf("replica B's stream ended with %v", done)
	}
	if len(lines) != 40 || lines[0] != "1" || lines[39] != "40" {
		t.Fatalf("replica B saw %d lines (%v…)", len(lines), lines[:min(3, len(lines))])
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q", i+1, l)
		}
	}
	// Live, not replayed at the end: the first line reached B well before
	// the job (about 2 s of output) finished.
	finished := done.Result.FinishedAt
	if !seen[0].Before(finished.Add(-time.Second)) {
		t.Fatalf("replica B saw the first line at %v, the job finished at %v: not live", seen[0], finished)
	}
	// With the follow shared between servers, the worker on A knows that
	// someone watches on B and flushes at once, not at its (long) flush
	// interval: the middle line, too, arrived well before the end.
	if sharedWatch && !seen[19].Before(finished.Add(-500*time.Millisecond)) {
		t.Fatalf("replica B saw line 20 at %v, the job finished at %v: the worker did not hear that B's follower watches", seen[19], finished)
	}

	// B counts the worker that polls A among the default queue's: each
	// server records its workers in the store every 10 s.
	for deadline := time.Now().Add(30 * time.Second); ; {
		qs, _, err := b.Queues(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(qs, func(q *spool.Queue) bool { return q.Name == "default" })
		if i >= 0 && qs[i].Workers == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica B still counts no worker on queue default 30 s on, while one polls A: %+v", qs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A key made through A works on B at once. Revoked through A, A
	// refuses it on its very next call, and B within a second: each server
	// trusts a key it read from the shared store for less than that.
	_, secret, err := a.CreateKey(context.Background(), client.KeyParams{Name: "reader", Role: spool.RoleRead})
	if err != nil {
		t.Fatal(err)
	}
	readerOn := func(c *client.Client) *client.Client {
		r, err := client.New(client.Config{URL: c.URL(), APIKey: secret})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	onA, onB := readerOn(a), readerOn(b)
	for name, r := range map[string]*client.Client{"A": onA, "B": onB} {
		if _, err := r.Job(context.Background(), job.ID); err != nil {
			t.Fatalf("replica %s with a key made on A: %v", name, err)
		}
	}
	if _, err := a.RevokeKey(context.Background(), "reader"); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	if _, err := onA.Job(context.Background(), job.ID); !errors.Is(err, spool.ErrUnauthenticated) {
		t.Fatalf("replica A right after the key was revoked there: %v, want unauthenticated", err)
	}
	for {
		began := time.Now()
		_, err := onB.Job(context.Background(), job.ID)
		if errors.Is(err, spool.ErrUnauthenticated) {
			break
		}
		if err != nil {
			t.Fatalf("replica B after the key was revoked on A: %v", err)
		}
		if began.Sub(revoked) > time.Second {
			t.Fatalf("replica B still took the key %v after it was revoked on A", began.Sub(revoked))
		}
	}
}
