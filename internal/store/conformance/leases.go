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
)

func testDequeueBatch(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q, other := newQueue(), newQueue()
	var ids []string
	for range 5 {
		ids = append(ids, enqueue(t, s, newJob(q)).GetJobId())
	}
	enqueue(t, s, newJob(other))

	before := time.Now()
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 3, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 {
		t.Fatalf("Max 3: got %d leases", len(ls))
	}
	seen := map[string]bool{}
	for i, l := range ls {
		if l.JobID != ids[i] {
			t.Fatalf("lease %d is job %s, want oldest first (%s)", i, l.JobID, ids[i])
		}
		if l.Attempt != 1 || l.Job.GetAttempt() != 1 || l.LeaseID == "" || seen[l.LeaseID] {
			t.Fatalf("lease %d: attempt %d, lease %q (seen before: %v)", i, l.Attempt, l.LeaseID, seen[l.LeaseID])
		}
		seen[l.LeaseID] = true
		if l.Head != store.NewHead() {
			t.Fatalf("lease of a new job starts at %+v, want sequence 1 line 1", l.Head)
		}
		if l.ExpiresAt.Before(before.Add(59*time.Second)) || l.ExpiresAt.After(time.Now().Add(61*time.Second)) {
			t.Fatalf("lease expires at %v, want about a minute from now", l.ExpiresAt)
		}
		wantState(t, get(t, s, l.JobID), spoolv1.JobState_JOB_STATE_RUNNING)
	}
	ls, err = s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 100, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 2 {
		t.Fatalf("the remaining 2 jobs: got %d leases, err %v", len(ls), err)
	}
	ls, err = s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("leased jobs handed out again: %d leases, err %v", len(ls), err)
	}
	// Max is capped.
	enqueueMany(t, s, q, store.MaxDequeue+2)
	ls, err = s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: store.MaxDequeue * 2, LeaseDuration: time.Minute})
	if err != nil || len(ls) != store.MaxDequeue {
		t.Fatalf("Max %d: got %d leases (err %v), want the cap %d", store.MaxDequeue*2, len(ls), err, store.MaxDequeue)
	}
}

// testDequeueMany: a worker with many free slots fills them in one call,
// however few jobs a backend's own reads bring at a time (SQS: 10).
func testDequeueMany(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueueMany(t, s, q, 200)
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 150, LeaseDuration: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(ls) != 150 {
		t.Fatalf("Max 150 of 200 ready: got %d leases (err %v)", len(ls), err)
	}
	seen := map[string]bool{}
	for i, l := range ls {
		if seen[l.JobID] {
			t.Fatalf("job %s leased twice in one call", l.JobID)
		}
		seen[l.JobID] = true
		if i > 0 && l.Job.GetCreatedAt().AsTime().Before(ls[i-1].Job.GetCreatedAt().AsTime()) {
			t.Fatalf("lease %d is older than lease %d: want oldest first", i, i-1)
		}
	}
	rest, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 150, LeaseDuration: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(rest) != 50 {
		t.Fatalf("the other 50: got %d leases (err %v)", len(rest), err)
	}
	for _, l := range rest {
		if seen[l.JobID] {
			t.Fatalf("job %s leased again while its lease is current", l.JobID)
		}
	}
}

func testDequeueLongPoll(t *testing.T, b Backend) {
	s := open(t, b)
	slowPolls(t, b.Polling, s)
	ctx := context.Background()
	q := newQueue()

	// Nothing arrives: it waits the whole time, then returns nothing.
	start := time.Now()
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: time.Second})
	if err != nil || len(ls) != 0 {
		t.Fatalf("empty queue: %v %v", ls, err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("returned after %v, want to wait about 1s", waited)
	}

	// A job arrives while waiting: the enqueue wakes the dequeue.
	wantWoken(t, b.Polling, s, s)

	// A cancelled context ends the wait early.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	ls, _ = s.Dequeue(cctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: 20 * time.Second})
	if len(ls) != 0 {
		t.Fatalf("empty queue gave %d leases", len(ls))
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Dequeue ignored its context for %v", waited)
	}
}

func testHeartbeatAndCancel(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	l := runningJob(t, s, newJob(q))
	exp, cancelled, err := s.Heartbeat(ctx, l.LeaseRef, 10*time.Minute)
	if err != nil || cancelled {
		t.Fatalf("Heartbeat: cancelled=%v err=%v", cancelled, err)
	}
	if !exp.After(l.ExpiresAt) || exp.Before(time.Now().Add(9*time.Minute)) {
		t.Fatalf("Heartbeat extended the lease to %v (was %v), want ~10 minutes from now", exp, l.ExpiresAt)
	}
	j := get(t, s, l.JobID)
	if j.GetLeaseExpiresAt().AsTime().Before(time.Now().Add(9 * time.Minute)) {
		t.Fatalf("job shows lease_expires_at %v after the heartbeat", j.GetLeaseExpiresAt().AsTime())
	}

	c, err := s.Cancel(ctx, l.JobID, "stop")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, c, spoolv1.JobState_JOB_STATE_RUNNING)
	if !c.GetCancelRequested() {
		t.Fatal("cancel of a running job did not mark it")
	}
	if _, cancelled, err = s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil || !cancelled {
		t.Fatalf("Heartbeat after cancel: cancelled=%v err=%v, want cancelled", cancelled, err)
	}
	done, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: -1, Error: "cancelled"})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, done, spoolv1.JobState_JOB_STATE_CANCELLED)
}

func testLeaseExpiry(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.MaxAttempts = 2
	j := enqueue(t, s, nj)

	l1 := leaseOne(t, s, q, shortLease)
	runOut(l1)
	// Only a reaper's sweep settles an expired lease; Dequeue leaves it.
	if ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: shortLease}); err != nil || len(ls) != 0 {
		t.Fatalf("Dequeue took over an expired lease no sweep had settled: %v %v", ls, err)
	}
	if res, err := s.ExpireLeases(ctx, Sweep); err != nil || res != (store.Swept{Settled: 1}) {
		t.Fatalf("ExpireLeases: %+v, %v; want 1 settled", res, err)
	}
	l2 := leaseOne(t, s, q, shortLease)
	if l2.JobID != j.GetJobId() || l2.Attempt != 2 || l2.LeaseID == l1.LeaseID {
		t.Fatalf("redelivery: job %s attempt %d lease %q, want job %s attempt 2 with a new lease", l2.JobID, l2.Attempt, l2.LeaseID, j.GetJobId())
	}
	// Attempt 1 is fenced off.
	_, _, err := s.Heartbeat(ctx, l1.LeaseRef, time.Minute)
	wantErr(t, err, spool.ErrStaleLease, "heartbeat of attempt 1")

	// Attempt 2 is the last: its expiry fails the job.
	runOut(l2)
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	f := get(t, s, j.GetJobId())
	wantState(t, f, spoolv1.JobState_JOB_STATE_FAILED)
	if !strings.Contains(f.GetResult().GetError(), "attempt 2 of 2") {
		t.Fatalf("failure reason %q does not say the attempts ran out", f.GetResult().GetError())
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: shortLease})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a failed job was handed out again: %v %v", ls, err)
	}
	_, _, err = s.Heartbeat(ctx, l2.LeaseRef, time.Minute)
	wantErr(t, err, spool.ErrStaleLease, "heartbeat after the job failed")
}

func testExpireLeases(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	requeued := enqueue(t, s, newJob(q))
	cancelled := enqueue(t, s, newJob(q))
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 2, LeaseDuration: shortLease})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Dequeue: %v %v", ls, err)
	}
	if _, err := s.Cancel(ctx, cancelled.GetJobId(), ""); err != nil {
		t.Fatal(err)
	}
	runOut(ls...)
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	wantState(t, get(t, s, requeued.GetJobId()), spoolv1.JobState_JOB_STATE_QUEUED)
	c := get(t, s, cancelled.GetJobId())
	wantState(t, c, spoolv1.JobState_JOB_STATE_CANCELLED)
	if c.GetResult().GetError() == "" {
		t.Fatal("a job cancelled by lease expiry has no reason")
	}
	l := leaseOne(t, s, q, time.Minute)
	if l.JobID != requeued.GetJobId() || l.Attempt != 2 {
		t.Fatalf("re-queued job leased as %s attempt %d", l.JobID, l.Attempt)
	}
}

func testStaleLeases(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	l := runningJob(t, s, newJob(q))
	forged := []store.LeaseRef{
		{JobID: l.JobID, Queue: q, Attempt: l.Attempt, LeaseID: "not-the-lease"},
		{JobID: l.JobID, Queue: q, Attempt: l.Attempt + 1, LeaseID: l.LeaseID},
		{JobID: l.JobID, Queue: q, Attempt: l.Attempt - 1, LeaseID: l.LeaseID},
	}
	for _, ref := range forged {
		_, _, err := s.Heartbeat(ctx, ref, time.Minute)
		wantErr(t, err, spool.ErrStaleLease, "heartbeat with a wrong lease")
		_, err = s.Append(ctx, ref, events.Messages(startEvent(1)))
		wantErr(t, err, spool.ErrStaleLease, "append with a wrong lease")
		_, err = s.Complete(ctx, ref, &spoolv1.JobResult{})
		wantErr(t, err, spool.ErrStaleLease, "complete with a wrong lease")
	}
	missing := store.LeaseRef{JobID: "no-such-job", Queue: q, Attempt: 1, LeaseID: l.LeaseID}
	_, _, err := s.Heartbeat(ctx, missing, time.Minute)
	wantErr(t, err, spool.ErrNotFound, "heartbeat of an unknown job")
	// The real lease is unharmed.
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
		t.Fatalf("the real lease stopped working: %v", err)
	}
	wantState(t, get(t, s, l.JobID), spoolv1.JobState_JOB_STATE_RUNNING)
}

func testComplete(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	l := runningJob(t, s, newJob(q))
	started := ts(epochMs)
	done, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 0, StartedAt: started})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, done, spoolv1.JobState_JOB_STATE_SUCCEEDED)
	r := done.GetResult()
	if r.GetAttempt() != 1 || r.GetFinishedAt() == nil || !r.GetStartedAt().AsTime().Equal(started.AsTime()) {
		t.Fatalf("result not recorded as given: %v", r)
	}
	again, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 9})
	if err != nil {
		t.Fatalf("repeated Complete of the same attempt: %v", err)
	}
	wantState(t, again, spoolv1.JobState_JOB_STATE_SUCCEEDED)
	if again.GetResult().GetExitCode() != 0 {
		t.Fatal("a repeated Complete changed the result")
	}
	_, err = s.Append(ctx, l.LeaseRef, events.Messages(startEvent(1)))
	wantErr(t, err, spool.ErrStaleLease, "append after Complete")
	_, _, err = s.Heartbeat(ctx, l.LeaseRef, time.Minute)
	wantErr(t, err, spool.ErrStaleLease, "heartbeat after Complete")

	// Non-zero exit fails the job; it is never handed out again.
	l2 := runningJob(t, s, newJob(q))
	f, err := s.Complete(ctx, l2.LeaseRef, &spoolv1.JobResult{ExitCode: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, f, spoolv1.JobState_JOB_STATE_FAILED)
	if f.GetResult().GetExitCode() != 2 {
		t.Fatalf("exit code %d, want 2", f.GetResult().GetExitCode())
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: shortLease, Wait: 1500 * time.Millisecond})
	if err != nil || len(ls) != 0 {
		t.Fatalf("completed jobs were handed out again: %v %v", ls, err)
	}
}

// testGraceLeases: a server back from an outage gives running leases time
// to reconnect; an expired lease comes back to life for its own worker.
func testGraceLeases(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	enqueue(t, s, newJob(q))
	l := leaseOne(t, s, q, shortLease)
	runOut(l) // expired, as during an outage
	n, err := s.Capabilities().LeaseGracer.GraceLeases(ctx, time.Now().Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("GraceLeases: %d jobs, err %v; want 1", n, err)
	}
	if _, err := s.ExpireLeases(ctx, Sweep); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: shortLease})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a graced lease was handed out again: %v %v", ls, err)
	}
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
		t.Fatalf("the worker could not resume its graced lease: %v", err)
	}
}

// testFinish: a store.Finisher stores an attempt's last events and its
// result together, or neither: a repeat changes nothing, a stale lease or
// events the log refuses leave the job as it was.
func testFinish(t *testing.T, b Backend) {
	s := open(t, b)
	f := s.Capabilities().Finisher
	ctx := context.Background()
	q := newQueue()
	l := runningJob(t, s, newJob(q))
	last := events.Messages(startEvent(l.Head.NextSequence), batchEvent(l.Head.NextSequence+1, "a", "b"), endEvent(l.Head.NextSequence+3, 0))
	for i := range 2 {
		done, err := f.Finish(ctx, l.LeaseRef, last, &spoolv1.JobResult{ExitCode: int32(i)})
		if err != nil {
			t.Fatalf("finish %d: %v", i+1, err)
		}
		wantState(t, done, spoolv1.JobState_JOB_STATE_SUCCEEDED)
		if done.GetLastSequence() != l.Head.NextSequence+3 || done.GetLineCount() != 2 {
			t.Fatalf("finish %d: the job says last_sequence %d line_count %d", i+1, done.GetLastSequence(), done.GetLineCount())
		}
	}
	items, _ := readItems(t, s, store.ReadRequest{JobID: l.JobID, FromSequence: 1})
	if got := sequences(items); len(got) != 3 {
		t.Fatalf("stored items at %v, want the 3 events once", got)
	}

	// Refused events: nothing is stored and the job runs on.
	l2 := runningJob(t, s, newJob(q))
	_, err := f.Finish(ctx, l2.LeaseRef, events.Messages(batchEvent(l2.Head.NextSequence+5, "gap")), &spoolv1.JobResult{})
	wantErr(t, err, spool.ErrInvalidArgument, "finish with a gap in the log")
	wantState(t, get(t, s, l2.JobID), spoolv1.JobState_JOB_STATE_RUNNING)

	// A stale lease: refused, nothing stored.
	stale := l2.LeaseRef
	stale.LeaseID += "-old"
	_, err = f.Finish(ctx, stale, events.Messages(startEvent(l2.Head.NextSequence)), &spoolv1.JobResult{})
	wantErr(t, err, spool.ErrStaleLease, "finish under a stale lease")
	if j := get(t, s, l2.JobID); j.GetLastSequence() != l2.Head.NextSequence-1 {
		t.Fatalf("a refused finish stored events: last_sequence %d", j.GetLastSequence())
	}
}
