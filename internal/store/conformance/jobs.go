package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

func testEnqueueAndGet(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.Params = &spoolv1.JobParams{Script: "echo $X", Env: map[string]string{"X": "1"}, WorkingDir: "/tmp", RepositoryUrl: "https://example.com/r.git", Ref: "main"}
	j := enqueue(t, s, nj)
	wantState(t, j, spoolv1.JobState_JOB_STATE_QUEUED)
	if j.GetJobId() == "" || j.GetQueue() != q || j.GetAttempt() != 0 || j.GetMaxAttempts() != 3 || j.GetCreatedAt() == nil {
		t.Fatalf("new job looks wrong: %v", j)
	}
	if j.GetLastSequence() != 0 || j.GetLineCount() != 0 {
		t.Fatalf("new job has a log: last_sequence %d, line_count %d", j.GetLastSequence(), j.GetLineCount())
	}
	got := get(t, s, j.GetJobId())
	if !proto.Equal(got, j) {
		t.Fatalf("Get returned\n%v\nwant what Enqueue returned\n%v", got, j)
	}
	if !proto.Equal(got.GetParams(), nj.Params) || !proto.Equal(got.GetExecutionConfig(), nj.Execution) {
		t.Fatalf("params or execution config not stored as given: %v", got)
	}
	_, err := s.Get(context.Background(), "no-such-job")
	wantErr(t, err, spool.ErrNotFound, "Get unknown job")
}

func testEnqueueIdempotent(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.RequestID = "req-" + q
	first := enqueue(t, s, nj)
	for i := range 3 {
		j, created, err := s.Enqueue(context.Background(), nj)
		if err != nil {
			t.Fatalf("repeat %d: %v", i, err)
		}
		if created || j.GetJobId() != first.GetJobId() {
			t.Fatalf("repeat %d created=%v job %s, want the first job %s", i, created, j.GetJobId(), first.GetJobId())
		}
	}
	// A different request id is a different job.
	nj.RequestID = "other-" + q
	if j := enqueue(t, s, nj); j.GetJobId() == first.GetJobId() {
		t.Fatal("a new request_id returned the old job")
	}
	// Still a repeat once the first job has finished.
	l := leaseOne(t, s, q, shortLease)
	if _, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	nj.RequestID = "req-" + q
	if j, created, err := s.Enqueue(context.Background(), nj); err != nil || created || j.GetJobId() != first.GetJobId() {
		t.Fatalf("repeat after completion: job %s created=%v err=%v", j.GetJobId(), created, err)
	}
}

// testEnqueueIdempotentRace: 50 concurrent enqueues with one request_id
// create exactly one job, and all 50 callers get it.
func testEnqueueIdempotentRace(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.RequestID = "race-" + q
	const n = 50
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]int{}
		created int
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			j, c, err := s.Enqueue(context.Background(), nj)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("Enqueue: %v", err)
				return
			}
			ids[j.GetJobId()]++
			if c {
				created++
			}
		})
	}
	close(start)
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Fatalf("50 concurrent enqueues: %d reported created, %d distinct jobs %v; want exactly 1", created, len(ids), ids)
	}
	jobs, _, err := s.List(context.Background(), store.ListFilter{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("queue holds %d jobs, want 1", len(jobs))
	}
}

func testList(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	qa, qb := newQueue(), newQueue()
	var inA []string // newest last
	for i := range 7 {
		q := qa
		if i%3 == 2 {
			q = qb
		}
		j := enqueue(t, s, newJob(q))
		if q == qa {
			inA = append(inA, j.GetJobId())
		}
	}
	slices.Reverse(inA) // newest first
	// Lease and finish the oldest job of A, cancel the next one.
	l := leaseOne(t, s, qa, shortLease)
	if l.JobID != inA[len(inA)-1] {
		t.Fatalf("leased %s, want the oldest job %s", l.JobID, inA[len(inA)-1])
	}
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, inA[len(inA)-2], "no longer needed"); err != nil {
		t.Fatal(err)
	}

	// All of A, newest first, in pages of 2, without repeats or gaps.
	var walked []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		jobs, next, err := s.List(ctx, store.ListFilter{Queue: qa, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("List page %d: %v", pages, err)
		}
		if len(jobs) > 2 {
			t.Fatalf("page of %d jobs, limit 2", len(jobs))
		}
		for _, j := range jobs {
			walked = append(walked, j.GetJobId())
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(walked, inA) {
		t.Fatalf("paged listing of queue A:\n%v\nwant newest first:\n%v", walked, inA)
	}

	byState := func(states ...spoolv1.JobState) []string {
		jobs, _, err := s.List(ctx, store.ListFilter{Queue: qa, States: states})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, j := range jobs {
			if !slices.Contains(states, j.GetState()) {
				t.Fatalf("state filter %v returned a %s job", states, j.GetState())
			}
			ids = append(ids, j.GetJobId())
		}
		return ids
	}
	if got := byState(spoolv1.JobState_JOB_STATE_FAILED); !slices.Equal(got, inA[len(inA)-1:]) {
		t.Fatalf("failed jobs %v, want %v", got, inA[len(inA)-1:])
	}
	if got := byState(spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED); len(got) != 2 {
		t.Fatalf("failed or cancelled: %v, want 2 jobs", got)
	}
	if got := byState(spoolv1.JobState_JOB_STATE_QUEUED); !slices.Equal(got, inA[:len(inA)-2]) {
		t.Fatalf("queued jobs %v, want %v", got, inA[:len(inA)-2])
	}
	jobs, _, err := s.List(ctx, store.ListFilter{Queue: qb})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("queue B: %d jobs, err %v; want 2", len(jobs), err)
	}
	// Every queue: at least these 7 (the backend may hold other tests' jobs).
	all, _, err := s.List(ctx, store.ListFilter{Limit: 1000})
	if err != nil || len(all) < 7 {
		t.Fatalf("all queues: %d jobs, err %v", len(all), err)
	}
	for _, bad := range []string{"not-a-cursor!", "eyJ0IjoxfQ", "%%%"} {
		_, _, err = s.List(ctx, store.ListFilter{Queue: qa, Cursor: bad})
		wantErr(t, err, spool.ErrInvalidArgument, "List with cursor "+bad)
	}
}

// testListRareState: listing by a state that only the oldest job is in,
// page by page with the cursor, finds it once, in all queues and in its
// own; pages may be short (a backend may bound a call's work) but never
// longer than the limit.
func testListRareState(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	failed := enqueue(t, s, newJob(q))
	l := leaseOne(t, s, q, time.Minute)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	const others = 300
	for range others {
		enqueue(t, s, newJob(q))
	}
	for _, f := range []store.ListFilter{
		{States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}, Limit: 2},
		{Queue: q, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED}, Limit: 2},
	} {
		var found []string
		for calls := 1; ; calls++ {
			if calls > others {
				t.Fatalf("listing %+v does not end", f)
			}
			jobs, next, err := s.List(ctx, f)
			if err != nil {
				t.Fatalf("List %+v: %v", f, err)
			}
			if len(jobs) > f.Limit {
				t.Fatalf("List %+v: a page of %d jobs", f, len(jobs))
			}
			for _, j := range jobs {
				found = append(found, j.GetJobId())
			}
			if next == "" {
				break
			}
			f.Cursor = next
		}
		if len(found) != 1 || found[0] != failed.GetJobId() {
			t.Fatalf("listing the failed jobs found %v, want only %s", found, failed.GetJobId())
		}
	}
}

func testCancelQueued(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	j := enqueue(t, s, newJob(q))
	c, err := s.Cancel(ctx, j.GetJobId(), "changed my mind")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, c, spoolv1.JobState_JOB_STATE_CANCELLED)
	if c.GetResult().GetError() == "" || c.GetResult().GetFinishedAt() == nil {
		t.Fatalf("cancelled job's result says nothing: %v", c.GetResult())
	}
	again, err := s.Cancel(ctx, j.GetJobId(), "")
	if err != nil || !proto.Equal(again, c) {
		t.Fatalf("second cancel changed the job or failed: %v %v", again, err)
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: shortLease})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a cancelled job was handed out: %v %v", ls, err)
	}
	_, err = s.Cancel(ctx, "no-such-job", "")
	wantErr(t, err, spool.ErrNotFound, "Cancel unknown job")
}

// testRejectedJob: a job enqueued with a reject reason is failed from the
// start, keeps what it was given (here a message on stdin), is found again
// by its request id and is never leased.
func testRejectedJob(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.Params = &spoolv1.JobParams{Stdin: []byte("not a job spec\x00\xff"), Env: map[string]string{"SPOOL_MESSAGE_OFFSET": "7"}}
	nj.RequestID = "reject-" + q
	nj.RejectReason = "the message is not a job spec"
	j := enqueue(t, s, nj)
	wantState(t, j, spoolv1.JobState_JOB_STATE_FAILED)
	got := get(t, s, j.GetJobId())
	if !proto.Equal(got, j) {
		t.Fatalf("Get returned\n%v\nwant what Enqueue returned\n%v", got, j)
	}
	if got.GetResult().GetError() != nj.RejectReason || got.GetResult().GetExitCode() != -1 || got.GetResult().GetFinishedAt() == nil {
		t.Fatalf("a rejected job's result is %v", got.GetResult())
	}
	if !proto.Equal(got.GetParams(), nj.Params) {
		t.Fatalf("a rejected job lost its params: %v", got.GetParams())
	}
	again, created, err := s.Enqueue(context.Background(), nj)
	if err != nil || created || again.GetJobId() != j.GetJobId() {
		t.Fatalf("the request again: %v created=%v err=%v, want job %s", again.GetJobId(), created, err, j.GetJobId())
	}
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute, Wait: 300 * time.Millisecond})
	if err != nil || len(ls) != 0 {
		t.Fatalf("Dequeue leased %d jobs of a queue holding a rejected one (err %v)", len(ls), err)
	}
	jobs, _, err := s.List(context.Background(), store.ListFilter{Queue: q, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}})
	if err != nil || len(jobs) != 1 || jobs[0].GetJobId() != j.GetJobId() {
		t.Fatalf("List of failed jobs: %d jobs, err %v", len(jobs), err)
	}
}
