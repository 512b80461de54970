package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/conformance"
)

// These tests make groups on purpose: a first write is held up in the
// database (a lock another transaction holds), and the writes issued
// while it waits queue behind it; once the lock goes, they run together.

func newJob(queue string) store.NewJob {
	return store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}
}

// leased enqueues n jobs on a queue of their own and leases them all.
func leased(t testing.TB, s *pgstore.Store, n int) []store.Lease {
	t.Helper()
	ctx := context.Background()
	q := "q-" + uuid.NewString()
	for range n {
		if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
			t.Fatal(err)
		}
	}
	var out []store.Lease
	for len(out) < n {
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: store.MaxDequeue, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) == 0 {
			t.Fatalf("leased %d of %d jobs, then none was ready", len(out), n)
		}
		out = append(out, ls...)
	}
	return out
}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not after 10s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gate holds the row writes of s: it locks the row of a job of its own,
// sends a Complete of that job, which takes the committer and waits for the
// lock, and returns letGo, which lets it go and waits for its answer.
func gate(t *testing.T, s *pgstore.Store) (letGo func()) {
	t.Helper()
	l := leased(t, s, 1)[0]
	release, err := pgstore.Hold(s, `SELECT 1 FROM jobs WHERE job_id = $1 FOR UPDATE`, l.JobID)
	if err != nil {
		t.Fatal(err)
	}
	before := pgstore.Groups(s).RowsStarted
	done := make(chan error, 1)
	go func() {
		_, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{})
		done <- err
	}()
	eventually(t, "the held write is taken", func() bool { return pgstore.Groups(s).RowsStarted > before })
	return func() {
		release()
		if err := <-done; err != nil {
			t.Fatalf("the held write: %v", err)
		}
	}
}

// queue runs call in a goroutine of its own once the writes already
// queued are, and waits until it is queued too; wait waits for its answer.
func queue(t *testing.T, s *pgstore.Store, rows bool, call func() error) (wait func() error) {
	t.Helper()
	queued := func() int64 {
		if g := pgstore.Groups(s); rows {
			return g.RowsQueued
		} else {
			return g.JobsQueued
		}
	}
	before := queued()
	done := make(chan error, 1)
	go func() { done <- call() }()
	eventually(t, "a write is queued", func() bool { return queued() > before })
	return func() error { return <-done }
}

func state(t *testing.T, s *pgstore.Store, id string) spoolv1.JobState {
	t.Helper()
	j, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j.GetState()
}

// Completes issued together commit in one transaction, and each is
// answered once its job is stored as completed.
func TestGroupCommitSharesCompletes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	const n = 100
	ls := leased(t, s, n)
	letGo := gate(t, s)
	before := pgstore.Groups(s)
	waits := make([]func() error, n)
	for i, l := range ls {
		waits[i] = queue(t, s, true, func() error {
			_, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{})
			return err
		})
	}
	letGo()
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
		if st := state(t, s, ls[i].JobID); st != spoolv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("job %d answered but %v", i, st)
		}
	}
	after := pgstore.Groups(s)
	// The held write's group, then one for all the others.
	if got := after.RowsDone - before.RowsDone; got != 2 {
		t.Errorf("%d completes took %d transactions besides the held one, want 1", n, got-1)
	}
	if after.Fallbacks != before.Fallbacks {
		t.Errorf("%d groups fell back", after.Fallbacks-before.Fallbacks)
	}
}

// A group's settles go to the database in one statement, and each lands
// on its own row as it would alone: a success ends its job with its result
// and keeps the lease handle (a repeat is recognised), a failure with a
// retry left is queued again with a time to wait and no lease or result,
// and a release is queued with neither.
func TestGroupCommitSettlesEachAsAlone(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	q := "q-" + uuid.NewString()
	retrying := newJob(q)
	retrying.MaxAttempts, retrying.Retries = 2, 1
	for _, nj := range []store.NewJob{newJob(q), retrying, newJob(q)} {
		if _, _, err := s.Enqueue(ctx, nj); err != nil {
			t.Fatal(err)
		}
	}
	retried, others := conformance.LeaseRetried(t, s, q, 3)
	done, released := others[0], others[1]
	letGo := gate(t, s)
	before := pgstore.Groups(s).RowsDone
	waits := []func() error{
		queue(t, s, true, func() error {
			_, err := s.Complete(ctx, done.LeaseRef, &spoolv1.JobResult{ExitCode: 0})
			return err
		}),
		queue(t, s, true, func() error {
			_, err := s.Complete(ctx, retried.LeaseRef, &spoolv1.JobResult{ExitCode: 3})
			return err
		}),
		queue(t, s, true, func() error {
			_, err := s.Release(ctx, released.LeaseRef, false, "the worker stops")
			return err
		}),
	}
	letGo()
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if got := pgstore.Groups(s).RowsDone - before; got != 2 {
		t.Fatalf("the three settles took %d transactions besides the held one, want 1", got-1)
	}
	get := func(id string) *spoolv1.Job {
		j, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if j := get(done.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || j.GetResult().GetAttempt() != 1 || j.GetRunAfter() != nil {
		t.Errorf("the success: state %v, result %v, run after %v", j.GetState(), j.GetResult(), j.GetRunAfter())
	}
	if _, err := s.Complete(ctx, done.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Errorf("a repeat of the success was not recognised: %v", err)
	}
	if j := get(retried.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED || !j.GetRunAfter().AsTime().After(time.Now()) || j.GetResult() != nil {
		t.Errorf("the retry: state %v, run after %v, result %v", j.GetState(), j.GetRunAfter(), j.GetResult())
	}
	if _, err := s.Complete(ctx, retried.LeaseRef, &spoolv1.JobResult{}); !errors.Is(err, spool.ErrStaleLease) {
		t.Errorf("the retried attempt's lease still completes: %v", err)
	}
	if j := get(released.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_QUEUED || j.GetResult() != nil || j.GetRunAfter() != nil {
		t.Errorf("the release: state %v, result %v, run after %v", j.GetState(), j.GetResult(), j.GetRunAfter())
	}
	if _, err := s.Release(ctx, released.LeaseRef, false, "again"); !errors.Is(err, spool.ErrStaleLease) {
		t.Errorf("the released lease still holds: %v", err)
	}
	// What the searches read: the retry waits, the released job is ready,
	// and only the success has ended.
	again, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 3, LeaseDuration: time.Minute})
	if err != nil || len(again) != 1 || again[0].JobID != released.JobID {
		t.Errorf("leasing again took %d jobs (%v), want only the released one", len(again), err)
	}
	ended, err := s.EndedBefore(ctx, time.Now().Add(time.Minute), 10)
	if err != nil || len(ended) != 2 || !slices.Contains(ended, done.JobID) {
		// The gate's own job has ended too.
		t.Errorf("ended jobs %v (%v), want the success and the gate's job", ended, err)
	}
}

// Many Completes of different jobs at once, with no help: far fewer
// transactions than jobs.
func TestGroupCommitConcurrentCompletes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	const n = 200
	ls := leased(t, s, n)
	before := pgstore.Groups(s).RowsDone
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			if _, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := pgstore.Groups(s).RowsDone - before; got > n/2 {
		t.Errorf("%d concurrent completes took %d transactions", n, got)
	}
}

// A stale lease and a missing job in the middle of a group fail alone; the
// writes beside them commit, in the same transaction.
func TestGroupCommitOwnFailureIsolated(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ls := leased(t, s, 3)
	letGo := gate(t, s)
	before := pgstore.Groups(s)
	complete := func(ref store.LeaseRef) func() error {
		return func() error {
			_, err := s.Complete(context.Background(), ref, &spoolv1.JobResult{})
			return err
		}
	}
	stale := ls[1].LeaseRef
	stale.LeaseID = "not-" + stale.LeaseID
	waits := []func() error{
		queue(t, s, true, complete(ls[0].LeaseRef)),
		queue(t, s, true, complete(stale)),
		queue(t, s, true, complete(store.LeaseRef{JobID: "no-such-job", Queue: "q", Attempt: 1, LeaseID: "x"})),
		queue(t, s, true, complete(ls[2].LeaseRef)),
	}
	letGo()
	errs := make([]error, len(waits))
	for i, wait := range waits {
		errs[i] = wait()
	}
	if errs[0] != nil || errs[3] != nil {
		t.Fatalf("the good completes failed: %v, %v", errs[0], errs[3])
	}
	if !errors.Is(errs[1], spool.ErrStaleLease) {
		t.Errorf("the stale lease: %v, want ErrStaleLease", errs[1])
	}
	if !errors.Is(errs[2], spool.ErrNotFound) {
		t.Errorf("the missing job: %v, want ErrNotFound", errs[2])
	}
	for i, want := range []spoolv1.JobState{spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_RUNNING, spoolv1.JobState_JOB_STATE_SUCCEEDED} {
		if st := state(t, s, ls[i].JobID); st != want {
			t.Errorf("job %d is %v, want %v", i, st, want)
		}
	}
	after := pgstore.Groups(s)
	if after.RowsDone-before.RowsDone != 2 || after.Fallbacks != before.Fallbacks {
		t.Errorf("%d transactions besides the held one, %d fell back; want 1 and none",
			after.RowsDone-before.RowsDone-1, after.Fallbacks-before.Fallbacks)
	}
}

// A statement that fails fails its group's transaction: every write of
// the group runs again alone, so the bad one fails and the others commit.
func TestGroupCommitFallsBackAlone(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ls := leased(t, s, 3)
	letGo := gate(t, s)
	before := pgstore.Groups(s)
	complete := func(ref store.LeaseRef) func() error {
		return func() error {
			_, err := s.Complete(context.Background(), ref, &spoolv1.JobResult{})
			return err
		}
	}
	waits := []func() error{
		queue(t, s, true, complete(ls[0].LeaseRef)),
		queue(t, s, true, func() error { return pgstore.BadWrite(context.Background(), s, ls[1].JobID) }),
		queue(t, s, true, complete(ls[2].LeaseRef)),
	}
	letGo()
	errs := make([]error, len(waits))
	for i, wait := range waits {
		errs[i] = wait()
	}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the good completes failed: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil {
		t.Fatal("the bad write succeeded")
	}
	for i, want := range []spoolv1.JobState{spoolv1.JobState_JOB_STATE_SUCCEEDED, spoolv1.JobState_JOB_STATE_RUNNING, spoolv1.JobState_JOB_STATE_SUCCEEDED} {
		if st := state(t, s, ls[i].JobID); st != want {
			t.Errorf("job %d is %v, want %v", i, st, want)
		}
	}
	if got := pgstore.Groups(s).Fallbacks - before.Fallbacks; got != 1 {
		t.Errorf("%d groups fell back, want 1", got)
	}
}

// A write whose caller gives up while it waits for its group is not made,
// and its caller gets the context's error.
func TestGroupCommitCancelledNotWritten(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ls := leased(t, s, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Complete(ctx, ls[0].LeaseRef, &spoolv1.JobResult{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a complete with an ended context: %v", err)
	}
	letGo := gate(t, s)
	ctx, cancel = context.WithCancel(context.Background())
	wait := queue(t, s, true, func() error {
		_, err := s.Complete(ctx, ls[1].LeaseRef, &spoolv1.JobResult{})
		return err
	})
	cancel()
	if err := wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a complete cancelled while queued: %v", err)
	}
	letGo()
	for _, l := range ls {
		if st := state(t, s, l.JobID); st != spoolv1.JobState_JOB_STATE_RUNNING {
			t.Errorf("job %s of a cancelled complete is %v", l.JobID, st)
		}
	}
	// Likewise for an enqueue.
	if _, _, err := s.Enqueue(ctx, newJob("q")); !errors.Is(err, context.Canceled) {
		t.Fatalf("an enqueue with an ended context: %v", err)
	}
}

// Writes of one job issued together each see the one before: they go in
// successive transactions, in the order they came.
func TestGroupCommitSameJobInOrder(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	l := leased(t, s, 1)[0]
	other := leased(t, s, 1)[0]
	letGo := gate(t, s)
	before := pgstore.Groups(s)
	ctx := context.Background()
	lines := make([]string, 50)
	for i := range lines {
		lines[i] = fmt.Sprint(i + 1)
	}
	start := &spoolv1.JobEvent{Sequence: 1, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 42, Command: "true"}}}
	batch := events.Batch{Sequence: 2, PlaybackIntervalMillis: 50, Lines: events.TextLines(time.Now(), lines...)}.Event()
	waits := []func() error{
		queue(t, s, true, func() error { _, err := s.Append(ctx, l.LeaseRef, events.Messages(start)); return err }),
		queue(t, s, true, func() error { _, err := s.AddNote(ctx, other.JobID, "beside"); return err }),
		queue(t, s, true, func() error { _, err := s.Append(ctx, l.LeaseRef, events.Messages(batch)); return err }),
		queue(t, s, true, func() error {
			_, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{})
			return err
		}),
	}
	letGo()
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	j, err := s.Get(ctx, l.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || j.GetLastSequence() != 51 || j.GetLineCount() != 50 {
		t.Fatalf("job after start, 50 lines and complete: %v, last sequence %d, %d lines", j.GetState(), j.GetLastSequence(), j.GetLineCount())
	}
	// The held write's group, then the first append with the note, the
	// second append, the complete.
	if got := pgstore.Groups(s).RowsDone - before.RowsDone; got != 4 {
		t.Errorf("%d transactions, want 4", got)
	}
}

// Enqueues issued together share one insert; repeats of a request id,
// before or within the burst, are answered with the first job.
func TestGroupEnqueueShares(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	seen := newJob("q")
	seen.RequestID = "seen"
	first, created, err := s.Enqueue(ctx, seen)
	if err != nil || !created {
		t.Fatalf("first enqueue of a request: created %v, %v", created, err)
	}
	// Inserts wait while the table is locked: the first takes the
	// committer, the others queue.
	release, err := pgstore.Hold(s, `LOCK TABLE jobs IN SHARE MODE`)
	if err != nil {
		t.Fatal(err)
	}
	before := pgstore.Groups(s)
	held := make(chan error, 1)
	go func() { _, _, err := s.Enqueue(ctx, newJob("q")); held <- err }()
	eventually(t, "the held enqueue is taken", func() bool { return pgstore.Groups(s).JobsStarted > before.JobsStarted })

	type answer struct {
		job     *spoolv1.Job
		created bool
	}
	// More than a group of row writes takes: a bulk submission's jobs go
	// in one insert.
	const n = 400
	answers := make([]answer, n)
	waits := make([]func() error, n)
	for i := range n {
		nj := newJob("q")
		switch i {
		case 10, 50, 90:
			nj.RequestID = "burst"
		case 20:
			nj.RequestID = "seen"
		}
		waits[i] = queue(t, s, false, func() error {
			j, created, err := s.Enqueue(ctx, nj)
			answers[i] = answer{j, created}
			return err
		})
	}
	release()
	if err := <-held; err != nil {
		t.Fatalf("the held enqueue: %v", err)
	}
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	for i, a := range answers {
		switch i {
		case 50, 90:
			if a.created || a.job.GetJobId() != answers[10].job.GetJobId() {
				t.Errorf("repeat %d of a request in the burst: created %v, job %s; want job %s", i, a.created, a.job.GetJobId(), answers[10].job.GetJobId())
			}
		case 20:
			if a.created || a.job.GetJobId() != first.GetJobId() {
				t.Errorf("repeat of an earlier request: created %v, job %s; want job %s", a.created, a.job.GetJobId(), first.GetJobId())
			}
		default:
			if !a.created {
				t.Errorf("enqueue %d created nothing", i)
			}
			if _, err := s.Get(ctx, a.job.GetJobId()); err != nil {
				t.Errorf("enqueue %d answered, but: %v", i, err)
			}
		}
	}
	after := pgstore.Groups(s)
	// The held one, then the burst with its first "burst", then each
	// repeat of it in a group of its own.
	if got := after.JobsDone - before.JobsDone; got != 4 {
		t.Errorf("%d enqueues took %d inserts besides the held one, want 3", n, got-1)
	}
	if after.Fallbacks != before.Fallbacks {
		t.Errorf("%d groups fell back", after.Fallbacks-before.Fallbacks)
	}
}

// An enqueue naming a job id in use fails the group's insert: the group's
// enqueues run alone, the others are created and that one alone fails.
func TestGroupEnqueueFallsBack(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	named := newJob("q")
	named.ID = "named-" + uuid.NewString()
	if _, _, err := s.Enqueue(ctx, named); err != nil {
		t.Fatal(err)
	}
	release, err := pgstore.Hold(s, `LOCK TABLE jobs IN SHARE MODE`)
	if err != nil {
		t.Fatal(err)
	}
	before := pgstore.Groups(s)
	held := make(chan error, 1)
	go func() { _, _, err := s.Enqueue(ctx, newJob("q")); held <- err }()
	eventually(t, "the held enqueue is taken", func() bool { return pgstore.Groups(s).JobsStarted > before.JobsStarted })
	ids := make([]string, 5)
	var waits []func() error
	for i := range ids {
		waits = append(waits, queue(t, s, false, func() error {
			j, _, err := s.Enqueue(ctx, newJob("q"))
			ids[i] = j.GetJobId()
			return err
		}))
		if i == 2 {
			waits = append(waits, queue(t, s, false, func() error { _, _, err := s.Enqueue(ctx, named); return err }))
		}
	}
	release()
	if err := <-held; err != nil {
		t.Fatalf("the held enqueue: %v", err)
	}
	for i, wait := range waits {
		err := wait()
		if i == 3 {
			if !errors.Is(err, spool.ErrAlreadyExists) {
				t.Errorf("an enqueue of a job id in use: %v, want ErrAlreadyExists", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	for _, id := range ids {
		if _, err := s.Get(ctx, id); err != nil {
			t.Errorf("job %s answered, but: %v", id, err)
		}
	}
	if got := pgstore.Groups(s).Fallbacks - before.Fallbacks; got != 1 {
		t.Errorf("%d groups fell back, want 1", got)
	}
}
