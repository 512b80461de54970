package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
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

// checkPausedRows checks which queues have a row in queues, as pause's
// writes leave them (they write the table, not the store's memory of it).
func checkPausedRows(t *testing.T, s *Store, want map[string]bool) {
	t.Helper()
	for q, paused := range want {
		var got bool
		err := s.r.QueryRow(`SELECT EXISTS (SELECT 1 FROM queues WHERE name = ?)`, q).Scan(&got)
		if err != nil || got != paused {
			t.Errorf("queue %s paused = %v, %v; want %v", q, got, err, paused)
		}
	}
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
	checkPausedRows(t, s, map[string]bool{"a": true, "b": false, "c": true})
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

// writerRuns is how many statements the store's writer connection has
// run.
func writerRuns(t *testing.T, s *Store) int {
	t.Helper()
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var runs int
	if err := conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		runs = c.runs
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return runs
}

// newJob is a job as Enqueue makes it from nj.
func newJob(nj store.NewJob) *spoolv1.Job {
	nj.Queue, nj.MaxAttempts = "q", 1
	nj.Params = &spoolv1.JobParams{Argv: []string{"true"}}
	nj.Execution = &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 1}}
	return storekit.NewJobRecord(nj, storekit.Now())
}

// The new jobs of a group go in together, without a savepoint each; a job
// whose id is in use fails alone, a repeated request id (of a job stored
// before, or of another job of the group) answers with the first job, and
// the others are stored.
func TestGroupInsertsNewJobsTogether(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for _, nj := range []store.NewJob{{ID: "taken", RequestID: "r-old"}, {RequestID: "r-dup"}} {
		if _, _, err := enqueueOne(s, newJob(nj)); err != nil {
			t.Fatal(err)
		}
	}
	dup, err := s.r.QueryContext(ctx, `SELECT job_id FROM jobs WHERE request_id = 'r-dup'`)
	if err != nil {
		t.Fatal(err)
	}
	var dupID string
	for dup.Next() {
		if err := dup.Scan(&dupID); err != nil {
			t.Fatal(err)
		}
	}
	dup.Close()

	jobs := []*spoolv1.Job{
		newJob(store.NewJob{RequestID: "r-a"}),
		newJob(store.NewJob{ID: "taken", RequestID: "r-new"}), // id in use
		newJob(store.NewJob{RequestID: "r-dup"}),              // stored before
		newJob(store.NewJob{}),
		newJob(store.NewJob{RequestID: "r-twice"}),
		newJob(store.NewJob{RequestID: "r-twice"}), // the one before's repeat
		newJob(store.NewJob{ID: "named"}),
	}
	group := make([]*pendingWrite, len(jobs))
	outs := make([]*enqueued, len(jobs))
	for i, j := range jobs {
		group[i], outs[i] = enqueueWrite(j, nil)
		group[i].ctx = ctx
	}
	before := writerRuns(t, s)
	s.commit(group)
	runs := writerRuns(t, s) - before

	for _, i := range []int{0, 3, 6} {
		if group[i].err != nil || !outs[i].created || outs[i].job.GetJobId() != jobs[i].JobId || !group[i].inserted {
			t.Errorf("job %d: err %v, created %v, inserted with the group %v", i, group[i].err, outs[i].created, group[i].inserted)
		}
		if len(group[i].n) != 1 {
			t.Errorf("job %d notes %v, want its queue", i, group[i].n)
		}
	}
	if !errors.Is(group[1].err, spool.ErrAlreadyExists) || group[1].n != nil {
		t.Errorf("a job id in use: %v, notes %v", group[1].err, group[1].n)
	}
	if group[2].err != nil || outs[2].created || outs[2].job.GetJobId() != dupID {
		t.Errorf("a request id stored before: err %v, created %v, job %s, want %s", group[2].err, outs[2].created, outs[2].job.GetJobId(), dupID)
	}
	if group[4].err != nil || group[5].err != nil || !outs[4].created || outs[5].created || outs[5].job.GetJobId() != jobs[4].JobId {
		t.Errorf("a request id twice in the group: %v, %v; created %v, %v; second answered with %s, want %s",
			group[4].err, group[5].err, outs[4].created, outs[5].created, outs[5].job.GetJobId(), jobs[4].JobId)
	}
	for _, i := range []int{0, 3, 4, 6} {
		if _, err := s.Get(ctx, jobs[i].JobId); err != nil {
			t.Errorf("job %d is not stored: %v", i, err)
		}
	}
	if _, err := s.Get(ctx, jobs[5].JobId); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("the repeat of a request id was stored as a job of its own: %v", err)
	}
	// Four statements for the three jobs inserted together (a savepoint
	// around inserts of two and one), and seven for the four others, with
	// no savepoint (an Enqueue's one write is its first statement); one
	// by one, with a savepoint each, the three would have taken nine.
	if runs > 11 {
		t.Errorf("the group ran %d statements", runs)
	}
}

// enqueueOne stores j through the writer, alone.
func enqueueOne(s *Store, j *spoolv1.Job) (*spoolv1.Job, bool, error) {
	w, e := enqueueWrite(j, nil)
	err := s.submit(context.Background(), w)
	return e.job, e.created, err
}

// A lease of many jobs is one statement: each gets a lease handle of its
// own, and they come oldest first.
func TestLeaseManyInOneStatement(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const n = 300
	var want []string
	for i := range n {
		j, _, err := enqueueOne(s, newJob(store.NewJob{RequestID: fmt.Sprint(i)}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, j.JobId)
	}
	before := writerRuns(t, s)
	leases, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: n + 10, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if runs := writerRuns(t, s) - before; runs > 2 {
		t.Errorf("a lease of %d jobs ran %d statements", n, runs)
	}
	if len(leases) != n {
		t.Fatalf("leased %d jobs, want %d", len(leases), n)
	}
	handles := map[string]bool{}
	for i, l := range leases {
		if l.JobID != want[i] {
			t.Fatalf("lease %d is of job %s, want %s (oldest first)", i, l.JobID, want[i])
		}
		if l.LeaseID == "" || handles[l.LeaseID] {
			t.Fatalf("lease %d has handle %q, empty or given before", i, l.LeaseID)
		}
		handles[l.LeaseID] = true
		if l.Attempt != 1 || l.Job.GetState() != spoolv1.JobState_JOB_STATE_RUNNING || l.ExpiresAt.IsZero() {
			t.Fatalf("lease %d: attempt %d, state %v, expires %v", i, l.Attempt, l.Job.GetState(), l.ExpiresAt)
		}
	}
	// Each handle is the one stored: the lease completes the job.
	for _, l := range leases {
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatalf("complete job %s: %v", l.JobID, err)
		}
	}
	more, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: n, LeaseDuration: time.Minute})
	if err != nil || len(more) != 0 {
		t.Fatalf("after all were leased, a dequeue got %d jobs, %v", len(more), err)
	}
}

// A write without a savepoint that fails in SQLite after it has changed
// something is undone all the same: the group is made again with a
// savepoint for each write, and the others commit.
func TestGroupCommitUndoesAFailedBareWrite(t *testing.T) {
	s := openStore(t)
	bad := pause("b", nil)
	bad.bare = true
	fn := bad.fn
	bad.fn = func(ctx context.Context, tx *sql.Tx, n *notes) error {
		if err := fn(ctx, tx, n); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO queues (name, paused_at) VALUES ('b', 2)`) // b is in use
		return err
	}
	good := pause("c", nil)
	good.bare = true
	group := []*pendingWrite{pause("a", nil), bad, good}
	s.commit(group)
	if group[0].err != nil || group[2].err != nil {
		t.Fatalf("the good writes failed: %v, %v", group[0].err, group[2].err)
	}
	if group[1].err == nil || group[1].n != nil {
		t.Fatalf("the failing write: %v, notes %v", group[1].err, group[1].n)
	}
	checkPausedRows(t, s, map[string]bool{"a": true, "b": false, "c": true})
}

// When the group's insert of new jobs fails as a whole (here a job with no
// queue, which no conflict clause skips), it is undone and each job goes
// in on its own: the bad one fails, the others are stored.
func TestGroupInsertFailingWhole(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	jobs := []*spoolv1.Job{newJob(store.NewJob{}), newJob(store.NewJob{}), newJob(store.NewJob{})}
	group := make([]*pendingWrite, len(jobs))
	outs := make([]*enqueued, len(jobs))
	for i, j := range jobs {
		group[i], outs[i] = enqueueWrite(j, nil)
		group[i].ctx = ctx
	}
	group[1].job.args[1] = nil // queue, NOT NULL
	s.commit(group)
	for _, i := range []int{0, 2} {
		if group[i].err != nil || !outs[i].created || group[i].inserted {
			t.Errorf("job %d: err %v, created %v, inserted with the group %v", i, group[i].err, outs[i].created, group[i].inserted)
		}
		if _, err := s.Get(ctx, jobs[i].JobId); err != nil {
			t.Errorf("job %d is not stored: %v", i, err)
		}
	}
	if group[1].err == nil || outs[1].created {
		t.Errorf("the job with no queue: err %v, created %v", group[1].err, outs[1].created)
	}
	if _, err := s.Get(ctx, jobs[1].JobId); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("the job with no queue was stored: %v", err)
	}
}
