package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// testRelease: a released attempt goes back to the queue at once and counts
// against nothing; its token is then stale. Released with countAttempt, it
// counts as a lost lease.
func testRelease(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.MaxAttempts = 1
	l1 := runningJob(t, s, nj)
	j, err := s.Release(ctx, l1.LeaseRef, false, "the worker is shutting down")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, j, spoolv1.JobState_JOB_STATE_QUEUED)
	if j.GetReleasedAttempts() != 1 || len(j.GetNotes()) != 1 || !strings.Contains(j.GetNotes()[0], "shutting down") {
		t.Fatalf("after a release: released %d, notes %q", j.GetReleasedAttempts(), j.GetNotes())
	}
	_, _, err = s.Heartbeat(ctx, l1.LeaseRef, time.Minute)
	wantErr(t, err, spool.ErrStaleLease, "heartbeat after release")
	_, err = s.Complete(ctx, l1.LeaseRef, &spoolv1.JobResult{})
	wantErr(t, err, spool.ErrStaleLease, "complete after release")
	_, err = s.Release(ctx, l1.LeaseRef, false, "")
	wantErr(t, err, spool.ErrStaleLease, "release twice")

	// With max_attempts 1, the released attempt did not use the budget:
	// the job runs again, and losing that lease (count) fails it.
	l2 := leaseOne(t, s, q, time.Minute)
	if l2.JobID != l1.JobID || l2.Attempt != 2 {
		t.Fatalf("released job leased as %s attempt %d", l2.JobID, l2.Attempt)
	}
	j, err = s.Release(ctx, l2.LeaseRef, true, "its command died with a previous worker")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, j, spoolv1.JobState_JOB_STATE_FAILED)
	if !strings.Contains(j.GetResult().GetError(), "1 of 1") {
		t.Fatalf("failure reason %q does not count the lost attempts", j.GetResult().GetError())
	}
}

// testReleaseCancelled: handing back a job whose cancel was asked cancels it.
func testReleaseCancelled(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	l := runningJob(t, s, newJob(newQueue()))
	if _, err := s.Cancel(ctx, l.JobID, "not needed"); err != nil {
		t.Fatal(err)
	}
	j, err := s.Release(ctx, l.LeaseRef, false, "")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, j, spoolv1.JobState_JOB_STATE_CANCELLED)
	if !strings.Contains(j.GetResult().GetError(), "not needed") {
		t.Fatalf("cancel reason lost: %q", j.GetResult().GetError())
	}
}

// testRetries: a failing attempt is queued again after the backoff while
// retries are left, then the job fails; retries do not use max_attempts.
func testRetries(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.MaxAttempts, nj.Retries = 1, 1
	l1 := runningJob(t, s, nj)
	failed := &spoolv1.JobResult{ExitCode: 3}
	j, err := s.Complete(ctx, l1.LeaseRef, failed)
	if err != nil {
		t.Fatal(err)
	}
	// The retry waits SCHEDULED, holding no worker.
	wantState(t, j, spoolv1.JobState_JOB_STATE_SCHEDULED)
	if j.GetRetriedAttempts() != 1 || j.GetRunAfter() == nil || len(j.GetNotes()) != 1 || !strings.Contains(j.GetNotes()[0], "exit code 3") {
		t.Fatalf("after a failure with a retry left: retried %d, run_after %v, notes %q", j.GetRetriedAttempts(), j.GetRunAfter(), j.GetNotes())
	}
	if wait := time.Until(j.GetRunAfter().AsTime()); wait < storekit.RetryBase/2 || wait > storekit.RetryBase+time.Second {
		t.Fatalf("retry waits %v, want about %v", wait, storekit.RetryBase)
	}
	// Not before its time.
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a retry was leased before its backoff: %v %v", ls, err)
	}
	promote(t, s, j.GetRunAfter().AsTime().Add(-time.Millisecond))
	wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_SCHEDULED)
	time.Sleep(time.Until(j.GetRunAfter().AsTime()))
	promote(t, s, j.GetRunAfter().AsTime())
	wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_QUEUED)
	l2 := leaseOne(t, s, q, time.Minute)
	if l2.JobID != l1.JobID || l2.Attempt != 2 {
		t.Fatalf("retry leased as %s attempt %d", l2.JobID, l2.Attempt)
	}
	j, err = s.Complete(ctx, l2.LeaseRef, failed)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, j, spoolv1.JobState_JOB_STATE_FAILED)
	if j.GetResult().GetExitCode() != 3 || j.GetResult().GetAttempt() != 2 {
		t.Fatalf("final result %v", j.GetResult())
	}
}

// testCancelReasonRunning: the reason of a cancel that reaches a running job
// is in its result.
func testCancelReasonRunning(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	l := runningJob(t, s, newJob(newQueue()))
	if _, err := s.Cancel(ctx, l.JobID, "superseded by a newer build"); err != nil {
		t.Fatal(err)
	}
	j, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: -1, Error: "cancelled"})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, j, spoolv1.JobState_JOB_STATE_CANCELLED)
	if j.GetResult().GetError() != "cancelled: superseded by a newer build" {
		t.Fatalf("result error %q", j.GetResult().GetError())
	}
}

// testNotes: notes accumulate in order, on a job in any state, bounded.
func testNotes(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	j := enqueue(t, s, newJob(newQueue()))
	for i := range storekit.MaxNotes + 5 {
		if _, err := s.AddNote(ctx, j.GetJobId(), strings.Repeat("n", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	notes := get(t, s, j.GetJobId()).GetNotes()
	if len(notes) != storekit.MaxNotes || notes[0] != "n" || notes[len(notes)-1] != strings.Repeat("n", storekit.MaxNotes+5) {
		t.Fatalf("%d notes, first %q, last of %d bytes", len(notes), notes[0], len(notes[len(notes)-1]))
	}
	_, err := s.AddNote(ctx, "no-such-job", "x")
	wantErr(t, err, spool.ErrNotFound, "note on a missing job")
}

// testAppendAfterExpiry: an attempt whose lease ran out and was settled may
// still deliver its output while no later attempt has started; once one has,
// it may not.
func testAppendAfterExpiry(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueue(t, s, newJob(q))
	l1 := leaseOne(t, s, q, shortLease)
	if _, err := s.Append(ctx, l1.LeaseRef, events.Messages(batchEvent(l1.Head.NextSequence, "1", "2"))); err != nil {
		t.Fatal(err)
	}
	runOut(l1)
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	wantState(t, get(t, s, l1.JobID), spoolv1.JobState_JOB_STATE_QUEUED)
	head, err := s.Append(ctx, l1.LeaseRef, events.Messages(batchEvent(l1.Head.NextSequence+2, "3")))
	if err != nil {
		t.Fatalf("late output of attempt 1 before attempt 2 started: %v", err)
	}
	if head.NextLine != 4 {
		t.Fatalf("head after the late append: %+v", head)
	}
	l2 := leaseOne(t, s, q, time.Minute)
	if l2.Attempt != 2 || l2.Head != head {
		t.Fatalf("attempt 2 starts at %+v, want %+v", l2.Head, head)
	}
	_, err = s.Append(ctx, l1.LeaseRef, events.Messages(batchEvent(head.NextSequence, "4")))
	wantErr(t, err, spool.ErrStaleLease, "attempt 1's output after attempt 2 started")
}
