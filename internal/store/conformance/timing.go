package conformance

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// The suite's cases of when jobs run: delayed and retried jobs waiting
// SCHEDULED, priorities, a queue's limit on running jobs, jobs that run
// after others, schedules and the webhook outbox.

func timingCases() []struct {
	name string
	fn   func(t *testing.T, b Backend)
} {
	return []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"DelayedJobWaitsScheduled", testDelayedJob},
		{"ScheduledJobCancelled", testCancelScheduled},
		{"PromoteRace", testPromoteRace},
		{"PriorityOrder", testPriorityOrder},
		{"MaxRunning", testMaxRunning},
		{"MaxRunningRace", testMaxRunningRace},
		{"AfterSucceeded", testAfterSucceeded},
		{"AfterFailed", testAfterFailed},
		{"AfterUnknownJob", testAfterUnknown},
		{"Schedules", testSchedules},
		{"Notifications", testNotifications},
	}
}

// promote calls PromoteScheduled at now.
func promote(t *testing.T, s store.JobStore, now time.Time) store.Promoted {
	t.Helper()
	p, err := s.PromoteScheduled(context.Background(), now)
	if err != nil {
		t.Fatalf("PromoteScheduled: %v", err)
	}
	return p
}

// noLease checks that queue has nothing to lease now.
func noLease(t *testing.T, s store.JobStore, queue, why string) {
	t.Helper()
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("%s: Dequeue leased %d (%v)", why, len(ls), err)
	}
}

func wantJobState(t *testing.T, s store.JobStore, id string, want spoolv1.JobState) *spoolv1.Job {
	t.Helper()
	j := get(t, s, id)
	wantState(t, j, want)
	return j
}

// testDelayedJob: a job with a time ahead is SCHEDULED with it, listed and
// counted as such, never leased, and QUEUED by the first promotion at or
// after its time, not before.
func testDelayedJob(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	at := storekit.Now().Add(time.Hour)
	nj := newJob(q)
	nj.RunAfter, nj.Priority, nj.Schedule = at, 3, "nightly"
	nj.Notify = []string{"https://example.com/hook"}
	j := enqueue(t, s, nj)
	wantState(t, j, spoolv1.JobState_JOB_STATE_SCHEDULED)
	if !j.GetRunAfter().AsTime().Equal(at) {
		t.Fatalf("run_after %v, want %v", j.GetRunAfter().AsTime(), at)
	}
	got := wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_SCHEDULED)
	if !got.GetRunAfter().AsTime().Equal(at) || got.GetPriority() != 3 || got.GetSchedule() != "nightly" ||
		len(got.GetNotify()) != 1 || got.GetNotifyDue() != nil {
		t.Fatalf("stored as run_after %v, priority %d, schedule %q, notify %q (due %v)",
			got.GetRunAfter(), got.GetPriority(), got.GetSchedule(), got.GetNotify(), got.GetNotifyDue())
	}
	plain := enqueue(t, s, newJob(q))
	if plain.GetPriority() != store.DefaultPriority || get(t, s, plain.JobId).GetPriority() != store.DefaultPriority {
		t.Fatalf("a job without a priority has %d", plain.GetPriority())
	}
	listed, _, err := s.List(ctx, store.ListFilter{Queue: q, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_SCHEDULED}})
	if err != nil || len(listed) != 1 || listed[0].JobId != j.JobId {
		t.Fatalf("List of scheduled jobs: %d jobs (%v)", len(listed), err)
	}
	if st := queueStats(t, s, storekit.Now(), q)[q]; st.Scheduled != 1 || st.Queued != 1 {
		t.Fatalf("queue stats: %d scheduled, %d queued; want 1 and 1", st.Scheduled, st.Queued)
	}
	leaseOne(t, s, q, time.Minute) // the plain job
	noLease(t, s, q, "a job scheduled an hour ahead")
	promote(t, s, at.Add(-time.Second))
	wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_SCHEDULED)
	if p := promote(t, s, at); p.Queued < 1 {
		t.Fatalf("a promotion at the job's time queued %d jobs", p.Queued)
	}
	j = wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_QUEUED)
	if l := leaseOne(t, s, q, time.Minute); l.JobID != j.JobId {
		t.Fatalf("leased %s, want the promoted %s", l.JobID, j.JobId)
	}
}

// testCancelScheduled: a scheduled job is cancelled at once, and a
// promotion does not bring it back.
func testCancelScheduled(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.RunAfter = storekit.Now().Add(time.Hour)
	j := enqueue(t, s, nj)
	c, err := s.Cancel(context.Background(), j.JobId, "not needed")
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, c, spoolv1.JobState_JOB_STATE_CANCELLED)
	if !strings.Contains(c.GetResult().GetError(), "not needed") {
		t.Fatalf("result %v", c.GetResult())
	}
	promote(t, s, storekit.Now().Add(2*time.Hour))
	wantJobState(t, s, j.JobId, spoolv1.JobState_JOB_STATE_CANCELLED)
	noLease(t, s, q, "a cancelled scheduled job")
}

// testPromoteRace: servers promoting at once queue each job once, and
// every one of them.
func testPromoteRace(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	at := storekit.Now().Add(time.Hour)
	const n = 30
	ids := make([]string, n)
	for i := range ids {
		nj := newJob(q)
		nj.RunAfter = at
		ids[i] = enqueue(t, s, nj).JobId
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _, _ = s.PromoteScheduled(context.Background(), at) })
	}
	wg.Wait()
	promote(t, s, at)
	for _, id := range ids {
		j := wantJobState(t, s, id, spoolv1.JobState_JOB_STATE_QUEUED)
		if j.GetAttempt() != 0 {
			t.Fatalf("job %s on attempt %d after promotion", id, j.GetAttempt())
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: n, LeaseDuration: time.Minute, Wait: 5 * time.Second})
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

// testPriorityOrder: a worker is handed the highest priority first, the
// oldest first within one.
func testPriorityOrder(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	var want [4][]string
	for _, p := range []int32{3, 1, 0, 4, 1, 2, 3} {
		nj := newJob(q)
		nj.Priority = p
		j := enqueue(t, s, nj)
		eff := cmp.Or(p, store.DefaultPriority)
		want[eff-1] = append(want[eff-1], j.JobId)
		time.Sleep(2 * time.Millisecond) // distinct created_at
	}
	var order []string
	for _, ids := range want {
		order = append(order, ids...)
	}
	for i, id := range order {
		l := leaseOne(t, s, q, time.Minute)
		if l.JobID != id {
			t.Fatalf("lease %d: job %s (priority %d), want %s", i+1, l.JobID, l.Job.GetPriority(), id)
		}
	}
}

// testMaxRunning: no more than a queue's max_running run at once; a lower
// limit leaves running jobs alone; 0 lifts it.
func testMaxRunning(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	if err := s.SetQueueMaxRunning(ctx, q, 2); err != nil {
		t.Fatal(err)
	}
	if st, ok := queueStats(t, s, storekit.Now(), q)[q]; !ok || st.MaxRunning != 2 {
		t.Fatalf("a queue with only a limit: listed %v, max_running %d", ok, st.MaxRunning)
	}
	enqueueMany(t, s, q, 6)
	lease := func(want int, why string) []store.Lease {
		t.Helper()
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
		if err != nil || len(ls) != want {
			t.Fatalf("%s: leased %d, want %d (%v)", why, len(ls), want, err)
		}
		return ls
	}
	first := lease(2, "limit 2")
	lease(0, "limit 2, two running")
	if _, err := s.Complete(ctx, first[0].LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	second := lease(1, "limit 2, one ended")
	if err := s.SetQueueMaxRunning(ctx, q, 1); err != nil {
		t.Fatal(err)
	}
	if st := queueStats(t, s, storekit.Now(), q)[q]; st.MaxRunning != 1 || st.Running != 2 {
		t.Fatalf("lowered to 1: max_running %d, running %d (want 1, 2: running jobs stay)", st.MaxRunning, st.Running)
	}
	lease(0, "lowered to 1 with two running")
	for _, l := range []store.Lease{first[1], second[0]} {
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
	}
	lease(1, "limit 1, none running")
	if err := s.SetQueueMaxRunning(ctx, q, 0); err != nil {
		t.Fatal(err)
	}
	lease(2, "no limit")
	if st := queueStats(t, s, storekit.Now(), q)[q]; st.MaxRunning != 0 {
		t.Fatalf("limit lifted, max_running %d", st.MaxRunning)
	}
}

// testMaxRunningRace: dequeues at once, from as many clients as a store
// allows, never run more than the limit.
func testMaxRunningRace(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	const limit = 3
	if err := s.SetQueueMaxRunning(ctx, q, limit); err != nil {
		t.Fatal(err)
	}
	enqueueMany(t, s, q, 20)
	var leased atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 5, LeaseDuration: time.Minute})
			if err != nil {
				t.Error(err)
			}
			leased.Add(int64(len(ls)))
		})
	}
	wg.Wait()
	if n := leased.Load(); n != limit {
		t.Fatalf("8 dequeues at once under a limit of %d leased %d", limit, n)
	}
}

// testAfterSucceeded: a job after two others waits SCHEDULED, listed as
// a follower of each, until both succeeded.
func testAfterSucceeded(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	la := runningJob(t, s, newJob(q))
	jb := enqueue(t, s, newJob(q))
	nj := newJob(q)
	nj.After = []string{la.JobID, jb.JobId}
	c := enqueue(t, s, nj)
	wantState(t, c, spoolv1.JobState_JOB_STATE_SCHEDULED)
	if got := get(t, s, c.JobId).GetAfter(); !slices.Equal(got, nj.After) {
		t.Fatalf("after %q, want %q", got, nj.After)
	}
	for _, id := range nj.After {
		if f := get(t, s, id).GetFollowers(); !slices.Equal(f, []string{c.JobId}) {
			t.Fatalf("job %s has followers %q, want [%s]", id, f, c.JobId)
		}
	}
	if _, err := s.Complete(ctx, la.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	promote(t, s, storekit.Now())
	wantJobState(t, s, c.JobId, spoolv1.JobState_JOB_STATE_SCHEDULED)
	lb := leaseOne(t, s, q, time.Minute)
	if lb.JobID != jb.JobId {
		t.Fatalf("leased %s, want %s: a job waiting for others was leased", lb.JobID, jb.JobId)
	}
	if _, err := s.Complete(ctx, lb.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	promote(t, s, storekit.Now())
	wantJobState(t, s, c.JobId, spoolv1.JobState_JOB_STATE_QUEUED)
	if l := leaseOne(t, s, q, time.Minute); l.JobID != c.JobId {
		t.Fatalf("leased %s, want %s", l.JobID, c.JobId)
	}
}

// testAfterFailed: when a job it runs after fails, the job is cancelled
// saying which; a chain after a job cancelled before it ran too.
func testAfterFailed(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	l := runningJob(t, s, newJob(q))
	nj := newJob(q)
	nj.After = []string{l.JobID}
	c := enqueue(t, s, nj)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	promote(t, s, storekit.Now())
	j := wantJobState(t, s, c.JobId, spoolv1.JobState_JOB_STATE_CANCELLED)
	if e := j.GetResult().GetError(); !strings.Contains(e, l.JobID) || !strings.Contains(e, "failed") {
		t.Fatalf("cancelled with %q, want the failed job named", e)
	}
	// A job cancelled before it ran cancels its follower.
	p := enqueue(t, s, newJob(q))
	nj.After = []string{p.JobId}
	f := enqueue(t, s, nj)
	if _, err := s.Cancel(ctx, p.JobId, ""); err != nil {
		t.Fatal(err)
	}
	promote(t, s, storekit.Now())
	j = wantJobState(t, s, f.JobId, spoolv1.JobState_JOB_STATE_CANCELLED)
	if e := j.GetResult().GetError(); !strings.Contains(e, p.JobId) || !strings.Contains(e, "cancelled") {
		t.Fatalf("cancelled with %q", e)
	}
}

// testAfterUnknown: a job after one that does not exist is refused, and
// nothing is created.
func testAfterUnknown(t *testing.T, b Backend) {
	s := open(t, b)
	q := newQueue()
	nj := newJob(q)
	nj.After = []string{"01900000-0000-7000-8000-000000000000"}
	if _, _, err := s.Enqueue(context.Background(), nj); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("after an unknown job: %v, want invalid argument", err)
	}
	if js, _, err := s.List(context.Background(), store.ListFilter{Queue: q}); err != nil || len(js) != 0 {
		t.Fatalf("a refused job was stored: %d (%v)", len(js), err)
	}
}

// testSchedules: schedules are created once by name, read back whole,
// listed by name, changed by compare-and-set and deleted.
func testSchedules(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	prefix := newQueue()
	mk := func(name string) *spoolv1.Schedule {
		return &spoolv1.Schedule{Name: prefix + name, Cron: "*/5 * * * *", Timezone: "Europe/Paris",
			Job:       &spoolv1.EnqueueJobRequest{Queue: "nightly", Params: &spoolv1.JobParams{Argv: []string{"make", "backup"}}, Priority: 1},
			Overlap:   spoolv1.Overlap_OVERLAP_SKIP,
			CreatedAt: timestamppb.New(storekit.Now())}
	}
	b1, a1 := mk("-b"), mk("-a")
	for _, sc := range []*spoolv1.Schedule{b1, a1} {
		if err := s.CreateSchedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
		if sc.Revision != 1 {
			t.Fatalf("created at revision %d", sc.Revision)
		}
	}
	if err := s.CreateSchedule(ctx, mk("-a")); !errors.Is(err, spool.ErrAlreadyExists) {
		t.Fatalf("a second schedule of one name: %v", err)
	}
	got, err := s.GetSchedule(ctx, a1.Name)
	if err != nil || !proto.Equal(got, a1) {
		t.Fatalf("GetSchedule: %v (%v), want %v", got, err, a1)
	}
	all, err := s.ListSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, sc := range all {
		if strings.HasPrefix(sc.Name, prefix) {
			mine = append(mine, sc.Name)
		}
	}
	if !slices.Equal(mine, []string{a1.Name, b1.Name}) {
		t.Fatalf("listed %q", mine)
	}
	// Two servers record the same tick: the first wins.
	tick := timestamppb.New(storekit.Now().Truncate(time.Minute))
	first, second := proto.CloneOf(got), proto.CloneOf(got)
	first.LastTickAt, first.LastJobId = tick, "job-1"
	second.LastTickAt, second.LastJobId = tick, "job-2"
	if err := s.UpdateSchedule(ctx, first); err != nil || first.Revision != 2 {
		t.Fatalf("UpdateSchedule: %v, revision %d", err, first.Revision)
	}
	if err := s.UpdateSchedule(ctx, second); !errors.Is(err, spool.ErrConflict) {
		t.Fatalf("a stale UpdateSchedule: %v, want conflict", err)
	}
	if got, _ := s.GetSchedule(ctx, a1.Name); got.GetLastJobId() != "job-1" || got.GetRevision() != 2 {
		t.Fatalf("after the race: %v", got)
	}
	if err := s.UpdateSchedule(ctx, mk("-none")); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("UpdateSchedule of an unknown one: %v", err)
	}
	if err := s.DeleteSchedule(ctx, a1.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSchedule(ctx, a1.Name); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("a deleted schedule: %v", err)
	}
	if err := s.DeleteSchedule(ctx, a1.Name); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
}

// testNotifications: a job with notify URLs owes its webhooks from the
// moment it ends, however it ends; a claim holds them from other claims;
// recorded deliveries are kept and settle what is owed. A job without
// URLs owes nothing.
func testNotifications(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	hooks := []string{"https://a.example/hook", "https://b.example/hook"}
	with := func() store.NewJob { nj := newJob(q); nj.Notify = hooks; return nj }
	done := runningJob(t, s, with())
	quiet := runningJob(t, s, newJob(q))
	cancelled := enqueue(t, s, with())
	if j := get(t, s, done.JobID); j.GetNotifyDue() != nil || !slices.Equal(j.GetNotify(), hooks) {
		t.Fatalf("a running job: notify %q, due %v", j.GetNotify(), j.GetNotifyDue())
	}
	if _, err := s.Complete(ctx, done.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, cancelled.JobId, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, quiet.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if get(t, s, quiet.JobID).GetNotifyDue() != nil {
		t.Fatal("a job without notify URLs owes a webhook")
	}
	now := storekit.Now().Add(time.Second)
	claim := func(at time.Time) map[string]*spoolv1.Job {
		t.Helper()
		js, err := s.ClaimNotifications(ctx, at, time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*spoolv1.Job{}
		for _, j := range js {
			if j.Queue == q {
				out[j.JobId] = j
			}
		}
		return out
	}
	got := claim(now)
	if len(got) != 2 || got[done.JobID] == nil || got[cancelled.JobId] == nil {
		t.Fatalf("claimed %d of the two ended jobs", len(got))
	}
	if d := got[done.JobID].GetNotifyDue().AsTime(); !d.Equal(now.Add(time.Minute)) {
		t.Fatalf("claimed job due again at %v, want %v", d, now.Add(time.Minute))
	}
	if again := claim(now.Add(30 * time.Second)); len(again) != 0 {
		t.Fatalf("a claim within the hold got %d jobs", len(again))
	}
	if late := claim(now.Add(61 * time.Second)); len(late) != 2 {
		t.Fatalf("after the hold, a claim got %d jobs, want 2", len(late))
	}
	d1 := &spoolv1.Delivery{DeliveryId: "d1", Url: hooks[0], Try: 1, At: timestamppb.New(now), Status: 200, Delivered: true}
	d2 := &spoolv1.Delivery{DeliveryId: "d2", Url: hooks[1], Try: 1, At: timestamppb.New(now), Status: 500, Error: "500 Internal Server Error"}
	retry := now.Add(10 * time.Second)
	if err := s.RecordDeliveries(ctx, done.JobID, []*spoolv1.Delivery{d1, d2}, retry); err != nil {
		t.Fatal(err)
	}
	j := get(t, s, done.JobID)
	if len(j.GetDeliveries()) != 2 || !proto.Equal(j.GetDeliveries()[1], d2) || !j.GetNotifyDue().AsTime().Equal(retry) {
		t.Fatalf("after recording: %d deliveries, due %v", len(j.GetDeliveries()), j.GetNotifyDue())
	}
	if err := s.RecordDeliveries(ctx, done.JobID, []*spoolv1.Delivery{{DeliveryId: "d2", Url: hooks[1], Try: 2, Status: 204, Delivered: true}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if j := get(t, s, done.JobID); len(j.GetDeliveries()) != 3 || j.GetNotifyDue() != nil {
		t.Fatalf("all delivered: %d deliveries, due %v", len(j.GetDeliveries()), j.GetNotifyDue())
	}
	if got := claim(now.Add(time.Hour)); got[done.JobID] != nil {
		t.Fatal("a job whose webhooks were all delivered was claimed")
	}
	if err := s.RecordDeliveries(ctx, "01900000-0000-7000-8000-000000000000", nil, time.Time{}); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("RecordDeliveries of an unknown job: %v", err)
	}
}
