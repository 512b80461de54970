package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// queueStats returns the stats of the named queues, failing when one is
// missing.
func queueStats(t *testing.T, s store.JobStore, since time.Time, names ...string) map[string]store.QueueStats {
	t.Helper()
	all, err := s.QueueStats(context.Background(), since)
	if err != nil {
		t.Fatalf("QueueStats: %v", err)
	}
	out := map[string]store.QueueStats{}
	for i, q := range all {
		if i > 0 && all[i-1].Name >= q.Name {
			t.Fatalf("QueueStats not in name order: %q before %q", all[i-1].Name, q.Name)
		}
		out[q.Name] = q
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			t.Fatalf("QueueStats has no queue %q (got %d queues)", n, len(all))
		}
	}
	return out
}

// testQueueStats: each queue's counts of what waits, runs and ended.
func testQueueStats(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	start := storekit.Now()
	q, other := newQueue(), newQueue()
	for range 5 {
		enqueue(t, s, newJob(q))
	}
	otherJob := enqueue(t, s, newJob(other))
	// Of q's five jobs: one succeeds, one fails, one is cancelled while
	// queued, one runs; one waits.
	ok := leaseOne(t, s, q, time.Minute)
	if _, err := s.Complete(ctx, ok.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	bad := leaseOne(t, s, q, time.Minute)
	if _, err := s.Complete(ctx, bad.LeaseRef, &spoolv1.JobResult{ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	run := leaseOne(t, s, q, time.Minute)
	jobs, _, err := s.List(ctx, store.ListFilter{Queue: q, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_QUEUED}})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("List queued: %d jobs, %v", len(jobs), err)
	}
	if _, err := s.Cancel(ctx, jobs[0].GetJobId(), "not needed"); err != nil {
		t.Fatal(err)
	}
	waiting := jobs[1]

	got := queueStats(t, s, start, q, other)[q]
	want := store.QueueStats{Name: q, Queued: 1, Running: 1, Succeeded: 1, Failed: 1, Cancelled: 1,
		OldestQueued: waiting.GetCreatedAt().AsTime()}
	if got != want {
		t.Fatalf("QueueStats(%s):\n got %+v\nwant %+v", q, got, want)
	}
	if o := queueStats(t, s, start, other)[other]; o.Queued != 1 || o.Running != 0 || !o.OldestQueued.Equal(otherJob.GetCreatedAt().AsTime()) {
		t.Fatalf("QueueStats(%s) = %+v; want one queued", other, o)
	}
	// Only what ended since the time asked for counts as ended.
	later := queueStats(t, s, storekit.Now().Add(time.Second), q)[q]
	if later.Succeeded != 0 || later.Failed != 0 || later.Cancelled != 0 || later.Queued != 1 || later.Running != 1 {
		t.Fatalf("QueueStats since a later time: %+v; want nothing ended, 1 queued, 1 running", later)
	}
	if _, err := s.Complete(ctx, run.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	if st := queueStats(t, s, start, q)[q]; st.Running != 0 || st.Succeeded != 2 {
		t.Fatalf("after the running job ended: %+v", st)
	}
}

// testQueuePause: a paused queue is shown paused, since its first pause,
// also when no job names it, until it is resumed.
func testQueuePause(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q, empty := newQueue(), newQueue()
	enqueue(t, s, newJob(q))
	at := storekit.Now()
	for _, name := range []string{q, empty} {
		if err := s.SetQueuePaused(ctx, name, true, at); err != nil {
			t.Fatal(err)
		}
		// Pausing again keeps the first time.
		if err := s.SetQueuePaused(ctx, name, true, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if p, err := s.QueuePaused(ctx, name); err != nil || !p {
			t.Fatalf("QueuePaused(%s) = %v, %v after pausing", name, p, err)
		}
	}
	st := queueStats(t, s, at, q, empty)
	if g := st[q]; !g.Paused || !g.PausedAt.Equal(at) || g.Queued != 1 {
		t.Fatalf("paused queue: %+v; want paused at %v with 1 queued", g, at)
	}
	if g := st[empty]; !g.Paused || g.Queued != 0 || !g.OldestQueued.IsZero() {
		t.Fatalf("paused queue without jobs: %+v", g)
	}
	if p, err := s.QueuePaused(ctx, newQueue()); err != nil || p {
		t.Fatalf("QueuePaused of an unknown queue = %v, %v; want false", p, err)
	}
	if b.Reopen != nil {
		s = b.Reopen(t, s)
		t.Cleanup(func() { _ = s.Close() })
		if p, err := s.QueuePaused(ctx, q); err != nil || !p {
			t.Fatalf("pause lost on reopening: %v, %v", p, err)
		}
	}
	if err := s.SetQueuePaused(ctx, q, false, storekit.Now()); err != nil {
		t.Fatal(err)
	}
	if p, err := s.QueuePaused(ctx, q); err != nil || p {
		t.Fatalf("QueuePaused after resuming = %v, %v", p, err)
	}
	if g := queueStats(t, s, at, q)[q]; g.Paused || !g.PausedAt.IsZero() {
		t.Fatalf("resumed queue still shows paused: %+v", g)
	}
}

// testStartedAt: each lease sets started_at; an external job starts when
// it is created.
func testStartedAt(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	j := enqueue(t, s, newJob(q))
	if j.GetStartedAt() != nil {
		t.Fatalf("queued job has started_at %v", j.GetStartedAt().AsTime())
	}
	// A job cancelled before any worker took it never started either; a
	// reader must be able to tell "never" from a time (an unset time read
	// back as the Unix epoch shows as "started 20,000 days ago").
	never := enqueue(t, s, newJob(q))
	if _, err := s.Cancel(ctx, never.GetJobId(), "not needed"); err != nil {
		t.Fatal(err)
	}
	listed, _, err := s.List(ctx, store.ListFilter{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Fatalf("listed %d jobs of queue %s, want 2", len(listed), q)
	}
	for _, l := range append(listed, get(t, s, never.GetJobId())) {
		if l.GetStartedAt() != nil {
			t.Fatalf("job %s (%s) never leased, but has started_at %v", l.GetJobId(), l.GetState(), l.GetStartedAt().AsTime())
		}
	}
	before := storekit.Now()
	l := leaseOne(t, s, q, time.Minute)
	after := storekit.Now()
	first := l.Job.GetStartedAt()
	if first == nil || first.AsTime().Before(before) || first.AsTime().After(after) {
		t.Fatalf("lease's started_at %v not within [%v, %v]", first.AsTime(), before, after)
	}
	if got := get(t, s, j.GetJobId()).GetStartedAt(); got == nil || !got.AsTime().Equal(first.AsTime()) {
		t.Fatalf("Get's started_at %v, lease said %v", got.AsTime(), first.AsTime())
	}
	if _, err := s.Release(ctx, l.LeaseRef, false, "stopping"); err != nil {
		t.Fatal(err)
	}
	l2 := leaseOne(t, s, q, time.Minute)
	if !l2.Job.GetStartedAt().AsTime().After(first.AsTime()) && !l2.Job.GetStartedAt().AsTime().Equal(first.AsTime()) {
		t.Fatalf("second attempt's started_at %v before the first's %v", l2.Job.GetStartedAt().AsTime(), first.AsTime())
	}
	done, err := s.Complete(ctx, l2.LeaseRef, &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	if !done.GetStartedAt().AsTime().Equal(l2.Job.GetStartedAt().AsTime()) {
		t.Fatalf("final job's started_at %v, its last lease's %v", done.GetStartedAt().AsTime(), l2.Job.GetStartedAt().AsTime())
	}
	ext := ingest(t, s, newSource(), rawEvents("e", 1)).Job
	if ext.GetStartedAt() == nil || !ext.GetStartedAt().AsTime().Equal(ext.GetCreatedAt().AsTime()) {
		t.Fatalf("external job's started_at %v, created %v", ext.GetStartedAt().AsTime(), ext.GetCreatedAt().AsTime())
	}
}

// testRerunLinks: a rerun names the job it runs again, and that job lists
// its reruns once each, whatever happens to it after.
func testRerunLinks(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	old := enqueue(t, s, newJob(q))
	nj := newJob(q)
	nj.RerunOf = old.GetJobId()
	rerun := enqueue(t, s, nj)
	if rerun.GetRerunOf() != old.GetJobId() || get(t, s, rerun.GetJobId()).GetRerunOf() != old.GetJobId() {
		t.Fatalf("rerun_of %q, want %q", get(t, s, rerun.GetJobId()).GetRerunOf(), old.GetJobId())
	}
	for range 2 {
		j, err := s.AddRerun(ctx, old.GetJobId(), rerun.GetJobId())
		if err != nil {
			t.Fatal(err)
		}
		if len(j.GetReruns()) != 1 || j.GetReruns()[0] != rerun.GetJobId() {
			t.Fatalf("reruns %v, want [%s]", j.GetReruns(), rerun.GetJobId())
		}
	}
	if j := get(t, s, old.GetJobId()); !j.GetUpdatedAt().AsTime().Equal(old.GetUpdatedAt().AsTime()) {
		t.Fatalf("AddRerun moved updated_at from %v to %v", old.GetUpdatedAt().AsTime(), j.GetUpdatedAt().AsTime())
	}
	// The links survive what leases and notes write.
	l := leaseOne(t, s, q, time.Minute)
	if _, err := s.AddNote(ctx, l.JobID, "a note"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	l = leaseOne(t, s, q, time.Minute)
	if _, err := s.Release(ctx, l.LeaseRef, true, "stopping"); err != nil {
		t.Fatal(err)
	}
	if j := get(t, s, old.GetJobId()); len(j.GetReruns()) != 1 || j.GetReruns()[0] != rerun.GetJobId() {
		t.Fatalf("reruns after its leases ended: %v", j.GetReruns())
	}
	if j := get(t, s, rerun.GetJobId()); j.GetRerunOf() != old.GetJobId() {
		t.Fatalf("rerun_of after its leases ended: %q", j.GetRerunOf())
	}
	_, err := s.AddRerun(ctx, "no-such-job", rerun.GetJobId())
	wantErr(t, err, spool.ErrNotFound, "rerun link on a missing job")
	// Past the cap the oldest links go.
	for i := range storekit.MaxReruns + 2 {
		if _, err := s.AddRerun(ctx, rerun.GetJobId(), rerunID(i)); err != nil {
			t.Fatal(err)
		}
	}
	if rs := get(t, s, rerun.GetJobId()).GetReruns(); len(rs) != storekit.MaxReruns || rs[0] != rerunID(2) || rs[len(rs)-1] != rerunID(storekit.MaxReruns+1) {
		t.Fatalf("%d reruns kept, from %q to %q", len(rs), rs[0], rs[len(rs)-1])
	}
}

func rerunID(i int) string { return fmt.Sprintf("rerun-%03d", i) }

// testEndedPerMinute: the jobs that ended since a time, by queue, minute
// of their end and final state; queued and running jobs, and jobs that
// ended before it, are not counted.
func testEndedPerMinute(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	start := storekit.Now()
	q, other := newQueue(), newQueue()
	var ended []string
	for _, code := range []int32{0, 0, 2} {
		enqueue(t, s, newJob(q))
		l := leaseOne(t, s, q, time.Minute)
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: code}); err != nil {
			t.Fatal(err)
		}
		ended = append(ended, l.Job.GetJobId())
	}
	cancelled := enqueue(t, s, newJob(q))
	if _, err := s.Cancel(ctx, cancelled.GetJobId(), "not needed"); err != nil {
		t.Fatal(err)
	}
	ended = append(ended, cancelled.GetJobId())
	enqueue(t, s, newJob(q))     // waits
	enqueue(t, s, newJob(other)) // waits: other has nothing ended
	leaseOne(t, s, other, time.Minute)

	// What each job's end says, minute by minute.
	var want store.EndedTally
	for _, id := range ended {
		j, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		at := j.GetUpdatedAt().AsTime()
		if f := j.GetResult().GetFinishedAt(); f != nil {
			at = f.AsTime()
		}
		want.Add(q, at, j.GetState(), 1)
	}
	endedOf := func(since time.Time) []store.EndedMinute {
		t.Helper()
		all, err := s.EndedPerMinute(ctx, since)
		if err != nil {
			t.Fatalf("EndedPerMinute: %v", err)
		}
		var mine []store.EndedMinute
		for _, m := range all {
			if m.Queue == other {
				t.Fatalf("EndedPerMinute counts %+v for a queue with no job ended", m)
			}
			if m.Queue == q {
				mine = append(mine, m)
			}
		}
		return mine
	}
	got := endedOf(start)
	if !slices.Equal(got, want.Minutes()) {
		t.Fatalf("EndedPerMinute(%s):\n got %+v\nwant %+v", q, got, want.Minutes())
	}
	var total store.EndedMinute
	for _, m := range got {
		if m.Minute.Second() != 0 || m.Minute.Nanosecond() != 0 || m.Minute.Location() != time.UTC {
			t.Errorf("minute %v is not the start of a minute in UTC", m.Minute)
		}
		total.Succeeded, total.Failed, total.Cancelled = total.Succeeded+m.Succeeded, total.Failed+m.Failed, total.Cancelled+m.Cancelled
	}
	if total.Succeeded != 2 || total.Failed != 1 || total.Cancelled != 1 {
		t.Fatalf("EndedPerMinute(%s) totals %d succeeded, %d failed, %d cancelled; want 2, 1, 1", q, total.Succeeded, total.Failed, total.Cancelled)
	}
	if later := endedOf(storekit.Now().Add(time.Second)); len(later) != 0 {
		t.Fatalf("EndedPerMinute since a later time: %+v; want nothing", later)
	}
}
