package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/conformance"
)

// open opens a store on url, closed when the test ends.
func open(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url, MaxConns: 8, MinConns: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	urls := map[store.JobStore]string{}
	conformance.Run(t, conformance.Backend{
		Open: func(t *testing.T) store.JobStore {
			url := pgtest.NewDatabase(t)
			s := open(t, url)
			mu.Lock()
			urls[s] = url
			mu.Unlock()
			return s
		},
		Reopen: func(t *testing.T, s store.JobStore) store.JobStore {
			mu.Lock()
			url := urls[s]
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, url)
		},
		Watching: func(s store.JobStore) int { return pgstore.Watching(s.(*pgstore.Store)) },
		Polling: conformance.Polling{
			SetInterval: func(s store.JobStore, d time.Duration) { pgstore.SetPollInterval(s.(*pgstore.Store), d) },
			Waiting:     func(s store.JobStore, q string) int { return pgstore.Polling(s.(*pgstore.Store), q) },
		},
		RawJob: func(t *testing.T, s store.JobStore, id string) []byte {
			raw, err := pgstore.RawJob(s.(*pgstore.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		},
	})
}

// TestShared: two stores on one database behave as one (the suite every
// store shared by several servers passes).
func TestShared(t *testing.T) {
	t.Parallel()
	conformance.RunShared(t, conformance.Shared{
		Pair: func(t *testing.T) (store.JobStore, store.JobStore) {
			url := pgtest.NewDatabase(t)
			return open(t, url), open(t, url)
		},
		Polling: conformance.Polling{
			SetInterval: func(s store.JobStore, d time.Duration) { pgstore.SetPollInterval(s.(*pgstore.Store), d) },
			Waiting:     func(s store.JobStore, q string) int { return pgstore.Polling(s.(*pgstore.Store), q) },
		},
	})
}

// Servers that start at the same moment on an empty database all come up:
// the migrations run once, under the advisory lock.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url, MaxConns: 4, MinConns: 1}, nil)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent start failed: %v", err)
		}
	}
	conn := pgtest.Connect(t, url)
	var applied int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if want := pgstore.Migrations(); applied != want {
		t.Fatalf("%d migrations recorded, want %d (each applied once)", applied, want)
	}
}

// A job followed on one server is watched on the other at once, and no
// longer when the follower leaves; a server that starts later hears of the
// follows in place.
func TestWatchesCrossServers(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	changed := make(chan string, 16)
	b.OnWatchChange(func(job string) { changed <- job })

	a.ShareWatch("job-1", true)
	waitWatched(t, b, "job-1", true, changed)
	if a.WatchedElsewhere("job-1") {
		t.Fatal("a server counts its own follower as another server's")
	}
	a.ShareWatch("job-1", false)
	waitWatched(t, b, "job-1", false, changed)

	a.ShareWatch("job-2", true)
	c := open(t, url)
	waitWatched(t, c, "job-2", true, nil)

	// A server that closes takes its follows with it.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitWatched(t, c, "job-2", false, nil)
}

// waitWatched waits until s sees job watched elsewhere (or not), and, with
// changed, that it said so.
func waitWatched(t *testing.T, s *pgstore.Store, job string, want bool, changed chan string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for s.WatchedElsewhere(job) != want {
		select {
		case <-deadline:
			t.Fatalf("%s watched elsewhere: not %v after 10s", job, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if changed == nil {
		return
	}
	for {
		select {
		case got := <-changed:
			if got == job {
				return
			}
		case <-deadline:
			t.Fatalf("no change reported for %s", job)
		}
	}
}

// The listening connection is cut (as a database restart or a network
// fault would): the store dials again, and its waiters hear of changes made
// meanwhile and after.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	job, _, err := a.Enqueue(ctx, store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woken := b.Watch(wctx, job.GetJobId())

	admin := pgtest.Connect(t, url)
	var cut int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'spool-listen'`).Scan(&cut); err != nil || cut != 2 {
		t.Fatalf("cut %d listening connections (%v), want both servers'", cut, err)
	}
	// A change while b is not listening: b's waiter is woken when it
	// listens again, to read what it missed.
	if _, err := a.Cancel(ctx, job.GetJobId(), "changed while cut off"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(15 * time.Second):
		t.Fatal("a waiter on the cut-off server was never woken")
	}
	// And it hears new changes again.
	job2, _, err := a.Enqueue(ctx, store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		w := b.Watch(wctx, job2.GetJobId())
		if _, err := a.AddNote(ctx, job2.GetJobId(), "ping"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w:
			return
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not hear changes after listening again")
		}
	}
}

// A server coming back gives running leases grace only when no other
// server was running meanwhile (whose reaper kept the leases' time).
func TestGraceOnlyWhenAlone(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	if _, _, err := a.Enqueue(ctx, store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if ls, err := a.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 1, LeaseDuration: time.Second}); err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d, %v", len(ls), err)
	}
	if n, err := b.GraceLeases(ctx, time.Now().Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("with another server running, GraceLeases extended %d leases (%v), want none", n, err)
	}
}

func TestConfigErrorsKeepThePasswordOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  pgstore.Config
		want string
	}{
		{pgstore.Config{}, "store.postgres.url is not set"},
		{pgstore.Config{URL: "postgres://spool:hunter2@db:notaport/spool"}, "store.postgres.url is not a PostgreSQL URL"},
		{pgstore.Config{URL: "postgres://db/spool", MaxConns: -1}, "store.postgres.max_conns must not be negative"},
		{pgstore.Config{URL: "postgres://db/spool", MaxConns: 2, MinConns: 3}, "min_conns (3) is more than max_conns (2)"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if err := (pgstore.Config{URL: "postgres://spool:secret@db.internal:5432/spool"}).Validate(); err != nil {
		t.Errorf("a good URL: %v", err)
	}
}

// A database that does not answer is named in the error, password left out.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	_, err := pgstore.Open(context.Background(), pgstore.Config{URL: "postgres://spool:hunter2@127.0.0.1:1/spool?connect_timeout=2"}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot reach spool@127.0.0.1:1/spool") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("got %v", err)
	}
}

// A server that stops may take the notes of its last commits with it: the
// servers that stay wake all their waiters, so nothing waits forever for a
// change nobody announced.
func TestStoppedServerWakesWaiters(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := pgtest.Connect(t, url)
	now := time.Now().UnixMicro()
	if _, err := admin.Exec(ctx, `INSERT INTO servers (id, started_at, seen_at) VALUES ('ghost', $1, $1)`, now); err != nil {
		t.Fatal(err)
	}
	running := pgstore.NoticeStopped(a, nil)
	if !slices.Contains(running, "ghost") {
		t.Fatalf("running servers = %q, want the ghost among them", running)
	}
	woken := a.Watch(ctx, "job-nobody-announced")
	pgstore.NoticeStopped(a, running)
	select {
	case <-woken:
		t.Fatal("a waiter was woken while every server still ran")
	default:
	}
	// The ghost stops beating.
	if _, err := admin.Exec(ctx, `UPDATE servers SET seen_at = $1 WHERE id = 'ghost'`, now-int64(time.Hour/time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	if running := pgstore.NoticeStopped(a, running); slices.Contains(running, "ghost") {
		t.Fatalf("running servers = %q, still the ghost", running)
	}
	select {
	case <-woken:
	default:
		t.Fatal("a server stopped, and the waiters here were not woken to look again")
	}
}

// Listing scatters reads an index in listing order, never a sort: the
// primary key's for all of them, the partial index of the active ones for
// those alone.
func TestListScattersReadsAnIndexInOrder(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	for _, active := range []bool{false, true} {
		for _, cursor := range []string{"", "019a0000-0000-7000-8000-000000000000"} {
			f := store.ScatterFilter{Active: active, Cursor: cursor}
			plan, err := pgstore.ScatterListPlan(s, f)
			if err != nil {
				t.Fatal(err)
			}
			index := "scatters_pkey"
			if active {
				index = "scatters_active"
			}
			if strings.Contains(plan, "Sort") || !strings.Contains(plan, "Index Scan Backward using "+index+" on scatters") {
				t.Errorf("listing %+v:\n%s\nwant a backward scan of %s, no sort", f, plan, index)
			}
		}
	}
}

// A scatter of a thousand batches of 10 KB is written in one transaction
// and read back whole.
func TestCreateScatterOfManyBatches(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	const n, size = 1000, 10 << 10
	sc := &spoolv1.Scatter{ScatterId: uuid.Must(uuid.NewV7()).String(), Progress: &spoolv1.ScatterProgress{BatchCount: n, Waiting: n}}
	rec := &store.ScatterRecord{Scatter: sc, Active: true, Ended: store.NewBits(n), Failed: store.NewBits(n)}
	batches := make([][]byte, n)
	for i := range batches {
		batches[i] = fmt.Appendf(nil, `["%d%s"]`, i, strings.Repeat("x", size))
	}
	start := time.Now()
	if err := s.CreateScatter(context.Background(), rec, batches); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d batches of %d bytes in %v", n, len(batches[0]), time.Since(start))
	for _, i := range []int32{0, 499, 999} {
		b, err := s.ScatterBatch(context.Background(), sc.GetScatterId(), i)
		if err != nil || !bytes.Equal(b, batches[i]) {
			t.Fatalf("batch %d: %d bytes, %v", i, len(b), err)
		}
	}
}

// A job named by its caller, enqueued at once through two servers by
// repeats of one request, is created once and returned to every repeat;
// another request cannot take its id.
func TestNamedJobRace(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	servers := []*pgstore.Store{open(t, url), open(t, url)}
	ctx := context.Background()
	for round := range 10 {
		nj := store.NewJob{ID: fmt.Sprintf("%s.%d", uuid.Must(uuid.NewV7()), round), Queue: "q",
			Params:    &spoolv1.JobParams{Argv: []string{"true"}},
			Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}
		nj.RequestID = "scatter:" + nj.ID
		var (
			wg      sync.WaitGroup
			created atomic.Int32
		)
		for i := range 8 {
			wg.Go(func() {
				j, c, err := servers[i%2].Enqueue(ctx, nj)
				if err != nil || j.GetJobId() != nj.ID {
					t.Errorf("enqueue: %s %v", j.GetJobId(), err)
					return
				}
				if c {
					created.Add(1)
				}
			})
		}
		wg.Wait()
		if created.Load() != 1 {
			t.Fatalf("the job was created %d times, want once", created.Load())
		}
		for _, req := range []string{"another", ""} {
			other := nj
			other.RequestID = req
			if _, _, err := servers[0].Enqueue(ctx, other); !errors.Is(err, spool.ErrAlreadyExists) {
				t.Fatalf("the id again, request %q: %v, want ErrAlreadyExists", req, err)
			}
		}
	}
}

// Leases, the sweep, promotion and the claim of webhooks read the partial
// indexes of queued, running and scheduled jobs and of jobs owing
// webhooks, also in the generic plan a prepared statement comes to: their
// predicates and the statements' terms agree.
func TestStateSearchesUsePartialIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	plans, err := pgstore.Plans(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"jobs_queued_priority", "jobs_queued_priority", "jobs_running", "jobs_running",
		"jobs_scheduled", "jobs_scheduled", "jobs_notify_due"} {
		if !strings.Contains(plans[i], want) {
			t.Errorf("plan %d does not use %s:\n%s", i, want, plans[i])
		}
	}
}

// The lease of a queue without a limit does not count its running jobs:
// the count is there, never executed; with a limit it is.
func TestLeaseCountsRunningOnlyUnderALimit(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	conformance.EnqueueMany(t, s, "free", 1, 3)
	conformance.EnqueueMany(t, s, "held", 1, 3)
	if err := s.SetQueueMaxRunning(ctx, "held", 2); err != nil {
		t.Fatal(err)
	}
	free, err := pgstore.LeaseAnalysis(s, "free")
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgstore.LeaseAnalysis(s, "held")
	if err != nil {
		t.Fatal(err)
	}
	count := func(plan string) string {
		for _, line := range strings.Split(plan, "\n") {
			if strings.Contains(line, "Aggregate") {
				return line
			}
		}
		return ""
	}
	if c := count(free); !strings.Contains(c, "never executed") {
		t.Errorf("the lease of a queue without a limit counted its running jobs:\n%s", free)
	}
	if c := count(held); c == "" || strings.Contains(c, "never executed") {
		t.Errorf("the lease of a queue with a limit did not count its running jobs:\n%s", held)
	}
}

// A queue's max_running holds across servers: two servers leasing at once,
// through both kinds of lease (the service's, which reads the pause too,
// and the plain one), never run more than the limit; and a pause still
// stops the leases of a queue with a limit.
func TestMaxRunningAcrossServers(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	servers := []*pgstore.Store{open(t, url), open(t, url)}
	ctx := context.Background()
	const limit = 4
	if err := servers[0].SetQueueMaxRunning(ctx, "q", limit); err != nil {
		t.Fatal(err)
	}
	conformance.EnqueueMany(t, servers[0], "q", 4, 40)
	var leased atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			s := servers[i%2]
			req := store.DequeueRequest{Queue: "q", Max: 3, LeaseDuration: time.Minute}
			lease := s.Dequeue
			if i%4 < 2 {
				lease = s.DequeueUnpaused
			}
			ls, err := lease(ctx, req)
			if err != nil {
				t.Error(err)
			}
			leased.Add(int64(len(ls)))
		})
	}
	wg.Wait()
	if n := leased.Load(); n != limit {
		t.Fatalf("12 leases on two servers under a limit of %d leased %d", limit, n)
	}
	if err := servers[1].SetQueueMaxRunning(ctx, "q", 0); err != nil {
		t.Fatal(err)
	}
	if err := servers[1].SetQueuePaused(ctx, "q", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ls, err := servers[0].DequeueUnpaused(ctx, store.DequeueRequest{Queue: "q", Max: 3, LeaseDuration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("a paused queue without a limit leased %d (%v)", len(ls), err)
	}
	if err := servers[1].SetQueueMaxRunning(ctx, "q", 10); err != nil {
		t.Fatal(err)
	}
	if ls, err := servers[0].DequeueUnpaused(ctx, store.DequeueRequest{Queue: "q", Max: 3, LeaseDuration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("a paused queue with a limit leased %d (%v)", len(ls), err)
	}
	if err := servers[1].SetQueuePaused(ctx, "q", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	if ls, err := servers[0].DequeueUnpaused(ctx, store.DequeueRequest{Queue: "q", Max: 10, LeaseDuration: time.Minute}); err != nil || len(ls) != 6 {
		t.Fatalf("resumed, with 4 running under a limit of 10: leased %d (%v), want 6", len(ls), err)
	}
}
