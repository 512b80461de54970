package sqlitestore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/conformance"
)

// completeWrite is the write Complete submits, for a test to group.
func completeWrite(ref store.LeaseRef, res *spoolv1.JobResult) *pendingWrite {
	c := &completion{ref: ref, res: res}
	return &pendingWrite{ctx: context.Background(), done: make(chan struct{}), fn: c.alone, bare: true, completion: c}
}

// Completions that meet in a group are made with one read and one update
// for a run of them, and each ends as it would alone: a success and a
// failure with a retry left are written, a stale lease and a missing job
// are refused alone, and a second completion of a job in the same group
// (a repeat) sees the first's and is answered with it.
func TestCompletionsMeetInOneRun(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	retrying := newJob(store.NewJob{})
	retrying.MaxAttempts, retrying.Retries = 2, 1
	for _, j := range []*spoolv1.Job{newJob(store.NewJob{}), retrying, newJob(store.NewJob{}), newJob(store.NewJob{})} {
		if _, _, err := enqueueOne(s, j); err != nil {
			t.Fatal(err)
		}
	}
	retried, plain := conformance.LeaseRetried(t, s, "q", 4)
	done, stale, last := plain[0], plain[1], plain[2]
	staleRef := stale.LeaseRef
	staleRef.LeaseID = "not-the-lease"
	group := []*pendingWrite{
		completeWrite(done.LeaseRef, &spoolv1.JobResult{ExitCode: 0}),
		completeWrite(retried.LeaseRef, &spoolv1.JobResult{ExitCode: 3}),
		completeWrite(staleRef, &spoolv1.JobResult{}),
		completeWrite(store.LeaseRef{JobID: "no-such-job", Queue: "q", Attempt: 1, LeaseID: "x"}, &spoolv1.JobResult{}),
		completeWrite(done.LeaseRef, &spoolv1.JobResult{ExitCode: 0}), // the repeat: a run of its own
		completeWrite(last.LeaseRef, &spoolv1.JobResult{ExitCode: 0}),
	}
	before := writerRuns(t, s)
	s.commit(group)
	// A read and an update for each of the two runs (BEGIN and COMMIT
	// are not counted).
	if runs := writerRuns(t, s) - before; runs != 4 {
		t.Errorf("six completions in two runs ran %d statements, want 4", runs)
	}
	for i, want := range []error{nil, nil, spool.ErrStaleLease, spool.ErrNotFound, nil, nil} {
		if got := group[i].err; (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
			t.Errorf("completion %d: %v, want %v", i, got, want)
		}
	}
	for i, w := range group {
		if (w.err == nil) != (w.completion.out != nil) {
			t.Errorf("completion %d answered job %v with error %v", i, w.completion.out, w.err)
		}
	}
	if st := group[4].completion.out.GetState(); st != spoolv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("the repeat was answered with a job %v, want it succeeded", st)
	}
	if len(group[4].n) != 0 {
		t.Errorf("the repeat woke %v: it wrote nothing", group[4].n)
	}
	get := func(id string) *spoolv1.Job {
		j, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, l := range []store.Lease{done, last} {
		if j := get(l.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || j.GetResult().GetAttempt() != 1 {
			t.Errorf("job %s: %v, result %v; want succeeded", l.JobID, j.GetState(), j.GetResult())
		}
	}
	if j := get(retried.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED || !j.GetRunAfter().AsTime().After(time.Now()) || j.GetResult() != nil {
		t.Errorf("the retry: %v, run after %v, result %v", j.GetState(), j.GetRunAfter(), j.GetResult())
	}
	if j := get(stale.JobID); j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		t.Errorf("the job of the stale completion is %v, want still running", j.GetState())
	}
	// What the searches read: only the stale one's job is still leased, the
	// retry waits, and the two successes have ended.
	if again, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 4, LeaseDuration: time.Minute}); err != nil || len(again) != 0 {
		t.Errorf("a lease after the group took %d jobs (%v), want none", len(again), err)
	}
	if ended, err := s.EndedBefore(ctx, time.Now().Add(time.Minute), 10); err != nil || len(ended) != 2 {
		t.Errorf("ended jobs %v (%v), want the two successes", ended, err)
	}
	if _, err := s.Complete(ctx, stale.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Errorf("the stale completion's job no longer completes with its real lease: %v", err)
	}
}

// A run whose update fails in SQLite (here, a trigger refuses one job's
// row) undoes the group's transaction; the group is made again with each
// completion alone, and only the refused one fails.
func TestCompletionRunRedoneAlone(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for range 3 {
		if _, _, err := enqueueOne(s, newJob(store.NewJob{})); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 3, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 3 {
		t.Fatalf("leased %d, %v", len(ls), err)
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TEMP TRIGGER refuse BEFORE UPDATE ON jobs WHEN OLD.job_id = '`+ls[1].JobID+`'
		BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	group := make([]*pendingWrite, len(ls))
	for i, l := range ls {
		group[i] = completeWrite(l.LeaseRef, &spoolv1.JobResult{})
	}
	s.commit(group)
	for i, l := range ls {
		j, err := s.Get(ctx, l.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if group[i].err == nil || j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
				t.Errorf("the refused completion: %v, its job %v", group[i].err, j.GetState())
			}
			continue
		}
		if group[i].err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || group[i].completion.out == nil {
			t.Errorf("completion %d: %v, its job %v", i, group[i].err, j.GetState())
		}
	}
}
