package awsstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// serverPair opens two stores on the same tables and queues: two servers.
func serverPair(t *testing.T) (*awsstore.Store, *awsstore.Store) {
	t.Helper()
	cfg := awstest.Shared(t).NewConfig(t)
	return openStore(t, cfg), openStore(t, cfg)
}

// TestMaxRunningAcrossServers: dequeues on two servers at once never run
// more of a queue than its limit, and a job's end frees its slot for the
// other server, which never heard of the end.
func TestMaxRunningAcrossServers(t *testing.T) {
	a, b := serverPair(t)
	ctx := context.Background()
	q := newQueue()
	if err := a.SetQueueMaxRunning(ctx, q, 2); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		if _, _, err := b.Enqueue(ctx, newJob(q)); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		got []store.Lease
		wg  sync.WaitGroup
	)
	for i := range 6 {
		s := []*awsstore.Store{a, b}[i%2]
		wg.Go(func() {
			ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 4, LeaseDuration: time.Minute})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, ls...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 2 {
		t.Fatalf("6 dequeues on two servers under a limit of 2 leased %d", len(got))
	}
	if _, err := a.Complete(ctx, got[0].LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 4, LeaseDuration: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(ls) != 1 {
		t.Fatalf("after one of the two ended, the other server leased %d (%v), want 1", len(ls), err)
	}
}

// TestPromoteAcrossServers: two servers promoting the same due jobs at
// once queue each once between them, and each is leased once.
func TestPromoteAcrossServers(t *testing.T) {
	a, b := serverPair(t)
	ctx := context.Background()
	q := newQueue()
	at := storekit.Now().Add(time.Hour)
	const n = 20
	for range n {
		nj := newJob(q)
		nj.RunAfter = at
		if _, _, err := a.Enqueue(ctx, nj); err != nil {
			t.Fatal(err)
		}
	}
	var pa, pb store.Promoted
	var ea, eb error
	var wg sync.WaitGroup
	wg.Go(func() { pa, ea = a.PromoteScheduled(ctx, at) })
	wg.Go(func() { pb, eb = b.PromoteScheduled(ctx, at) })
	wg.Wait()
	if ea != nil || eb != nil {
		t.Fatal(ea, eb)
	}
	if pa.Queued+pb.Queued != n {
		t.Fatalf("the two servers queued %d and %d jobs, want %d between them", pa.Queued, pb.Queued, n)
	}
	seen := map[string]bool{}
	for len(seen) < n {
		ls, err := b.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: n, LeaseDuration: time.Minute, Wait: 5 * time.Second})
		if err != nil || len(ls) == 0 {
			t.Fatalf("leased %d of %d promoted jobs (%v)", len(seen), n, err)
		}
		for _, l := range ls {
			if seen[l.JobID] {
				t.Fatalf("job %s leased twice", l.JobID)
			}
			seen[l.JobID] = true
		}
	}
}

// TestEarlyMessageOfScheduledJob: a message that finds its job still
// scheduled (a promotion that sent it and stopped before its write) leases
// nothing before the job's time, nor while the job waits for another; a
// retry whose time came is leased from it at once, promoted or not.
func TestEarlyMessageOfScheduledJob(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	q := newQueue()
	later := newJob(q)
	later.RunAfter = storekit.Now().Add(time.Hour)
	lj, _, err := s.Enqueue(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	pj := newJob(q)
	pj.Retries = 1
	parent := running(t, s, pj, time.Minute)
	after := newJob(q)
	after.After = []string{parent.JobID}
	aj, _, err := s.Enqueue(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{lj.GetJobId(), aj.GetJobId()} {
		if err := awsstore.SendRaw(ctx, s, q, `{"job_id":"`+id+`","queue":"`+q+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute, Wait: time.Second})
	if err != nil || len(ls) != 0 {
		t.Fatalf("early messages leased %d (%v)", len(ls), err)
	}
	for _, id := range []string{lj.GetJobId(), aj.GetJobId()} {
		if j, err := s.Get(ctx, id); err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED {
			t.Fatalf("job %s after an early message: %v (%v)", id, j.GetState(), err)
		}
	}
	retry, err := s.Complete(ctx, parent.LeaseRef, &spoolv1.JobResult{ExitCode: 1})
	if err != nil || retry.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED {
		t.Fatalf("a failed attempt with attempts left: %v (%v)", retry.GetState(), err)
	}
	if err := awsstore.SendRaw(ctx, s, q, `{"job_id":"`+retry.GetJobId()+`","queue":"`+q+`"}`); err != nil {
		t.Fatal(err)
	}
	// Hidden until the retry's time, then leased: no promotion ran.
	l := leaseOne(t, s, q, time.Minute)
	if l.JobID != retry.GetJobId() || l.Attempt != 2 {
		t.Fatalf("leased %s attempt %d, want the retry %s attempt 2", l.JobID, l.Attempt, retry.GetJobId())
	}
	if !time.Now().After(retry.GetRunAfter().AsTime()) {
		t.Fatalf("the retry was leased before its time %v", retry.GetRunAfter().AsTime())
	}
	if l.Job.GetRunAfter() != nil || l.Job.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("leased from its message: %v, run_after %v; want running, as if promoted", l.Job.GetState(), l.Job.GetRunAfter())
	}
}

// TestNotifyDueOnExpiry: a job that owes webhooks and ends because its
// lease ran out with no attempt left owes them from then, and a claim
// finds it; a job that ends with nothing to notify is not claimed.
func TestNotifyDueOnExpiry(t *testing.T) {
	s := freshStore(t)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.MaxAttempts, nj.Notify = 1, []string{"https://example.com/hook"}
	l := running(t, s, nj, time.Second)
	quiet := newJob(q)
	quiet.MaxAttempts = 1
	lq := running(t, s, quiet, time.Second)
	// No signal tells that a lease ran out: wait for the later one.
	time.Sleep(max(time.Until(l.ExpiresAt), time.Until(lq.ExpiresAt)) + 10*time.Millisecond)
	if _, err := s.ExpireLeases(ctx, store.Sweep{Grace: time.Minute, Gap: time.Hour}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Get(ctx, l.JobID)
	if err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_FAILED || j.GetNotifyDue() == nil {
		t.Fatalf("an expired job out of attempts: %v, notify_due %v (%v)", j.GetState(), j.GetNotifyDue(), err)
	}
	got, err := s.ClaimNotifications(ctx, storekit.Now(), time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].GetJobId() != l.JobID {
		t.Fatalf("claimed %d jobs (%v), want the expired one", len(got), err)
	}
}
