package sqlrowstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Rows of a database from before the timing migration, which added
// priorities, SCHEDULED jobs and queues' limits (? placeholders).
const (
	// InsertOldPause pauses the queue "paused" at 1000 µs.
	InsertOldPause = `INSERT INTO queues (name, paused_at) VALUES ('paused', 1000)`
	// InsertOldRetry writes a job of queue "old" queued for a retry, as
	// an older spool did (its time in the column and in the bookkeeping):
	// job_id, run_after, then params, execution and bookkeeping.
	InsertOldRetry = `INSERT INTO jobs (job_id, queue, state, created_at, updated_at, max_attempts, retries, run_after, params, execution, book)
		VALUES (?, 'old', 1, 1, 1, 2, 1, ?, ?, ?, ?)`
)

// OldRetryID is the job InsertOldRetry writes.
const OldRetryID = "old-retry"

// OldRetryArgs are InsertOldRetry's arguments: a retry whose time has
// passed.
func OldRetryArgs() []any {
	at := time.UnixMicro(2000)
	book := sqlrows.Marshal(&spoolv1.Job{RetriedAttempts: 1, RunAfter: timestamppb.New(at)})
	return []any{OldRetryID, sqlrows.Micros(at), sqlrows.Marshal(&spoolv1.JobParams{Argv: []string{"true"}}),
		sqlrows.Marshal(&spoolv1.ExecutionConfig{}), book}
}

// CheckMigratedTiming checks a store opened on InsertOldPause and
// InsertOldRetry after the migration: the queue is still paused, since
// its time, and takes a limit without losing its pause; the old retry is
// queued with the default priority and is leased as it was before.
func CheckMigratedTiming(t *testing.T, s store.JobStore) {
	t.Helper()
	ctx := context.Background()
	if paused, err := s.QueuePaused(ctx, "paused"); err != nil || !paused {
		t.Fatalf("the queue paused before the migration: paused %v (%v)", paused, err)
	}
	if err := s.SetQueueMaxRunning(ctx, "paused", 3); err != nil {
		t.Fatal(err)
	}
	stats, err := s.QueueStats(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]store.QueueStats{}
	for _, q := range stats {
		byName[q.Name] = q
	}
	if q := byName["paused"]; !q.Paused || !q.PausedAt.Equal(time.UnixMicro(1000)) || q.MaxRunning != 3 {
		t.Fatalf("the queue paused before the migration, given a limit: %+v", q)
	}
	if q := byName["old"]; q.Queued != 1 || q.Scheduled != 0 {
		t.Fatalf("the queue of the old retry: %+v", q)
	}
	j, err := s.Get(ctx, OldRetryID)
	if err != nil {
		t.Fatal(err)
	}
	if j.GetPriority() != store.DefaultPriority || j.GetState() != spoolv1.JobState_JOB_STATE_QUEUED || j.GetRetriedAttempts() != 1 {
		t.Fatalf("the old retry: priority %d, state %v, retried %d", j.GetPriority(), j.GetState(), j.GetRetriedAttempts())
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "old", Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 || ls[0].JobID != OldRetryID || ls[0].Attempt != 1 {
		t.Fatalf("leasing the old retry: %v (%v)", ls, err)
	}
	if err := s.SetQueuePaused(ctx, "paused", false, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if paused, err := s.QueuePaused(ctx, "paused"); err != nil || paused {
		t.Fatalf("resumed: paused %v (%v)", paused, err)
	}
}

// PromoteBurst measures PromoteScheduled on n jobs due in the same
// second, b.N times: each round enqueues them (not timed), then times one
// promotion, which must queue them all.
func PromoteBurst(b *testing.B, s store.JobStore, n int) {
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		at := storekit.Now().Add(time.Hour).Truncate(time.Second)
		q := "burst-" + time.Now().Format("150405.000000")
		jobs := make(chan store.NewJob)
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				var first error
				for nj := range jobs {
					if _, _, err := s.Enqueue(ctx, nj); err != nil && first == nil {
						first = err
					}
				}
				errs <- first
			}()
		}
		for k := range n {
			jobs <- store.NewJob{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"true"}}, Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 100}}, MaxAttempts: 1,
				RunAfter: at.Add(time.Duration(k%1000) * time.Millisecond)}
		}
		close(jobs)
		for range 8 {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		p, err := s.PromoteScheduled(ctx, at.Add(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if p.Queued != n {
			b.Fatalf("one promotion queued %d of %d jobs due", p.Queued, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/promotion")
}

// CheckDeletedParent checks the rows of job_after (afterRows counts them):
// a follower cancelled by hand leaves none; a follower of a job deleted
// after it succeeded, before a promotion saw it, is cancelled saying so,
// and leaves none either.
func CheckDeletedParent(t *testing.T, s store.JobStore, afterRows func() (int, error)) {
	t.Helper()
	ctx := context.Background()
	q := fmt.Sprintf("deleted-parent-%d", time.Now().UnixNano())
	nj := store.NewJob{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 100}}, MaxAttempts: 1}
	enqueue := func(after ...string) *spoolv1.Job {
		t.Helper()
		nj.After = after
		j, _, err := s.Enqueue(ctx, nj)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	rows := func(want int, why string) {
		t.Helper()
		if n, err := afterRows(); err != nil || n != want {
			t.Fatalf("%s: %d rows of job_after (%v), want %d", why, n, err, want)
		}
	}
	p := enqueue()
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("lease: %v (%v)", ls, err)
	}
	f, g := enqueue(p.JobId), enqueue(p.JobId, p.JobId)
	rows(2, "two followers, one naming its parent twice")
	if _, err := s.Cancel(ctx, g.JobId, "not needed"); err != nil {
		t.Fatal(err)
	}
	rows(1, "a follower cancelled")
	if _, err := s.Complete(ctx, ls[0].LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteJob(ctx, p.JobId); err != nil {
		t.Fatal(err)
	}
	if pr, err := s.PromoteScheduled(ctx, storekit.Now()); err != nil || pr.Cancelled < 1 {
		t.Fatalf("promotion after the parent was deleted: %+v (%v)", pr, err)
	}
	j, err := s.Get(ctx, f.JobId)
	if err != nil {
		t.Fatal(err)
	}
	if e := j.GetResult().GetError(); j.GetState() != spoolv1.JobState_JOB_STATE_CANCELLED || !strings.Contains(e, p.JobId) || !strings.Contains(e, "deleted") {
		t.Fatalf("the follower of a deleted job: %v, %q", j.GetState(), e)
	}
	rows(0, "the follower of a deleted job cancelled")
}

// CheckPromotionWakes checks that a promotion by promoter wakes a Dequeue
// of the job's queue waiting on poller (the same store, or another server
// of it) at once: poller's polls look again only after an hour by
// themselves (setInterval), and polling says how many wait.
func CheckPromotionWakes(t *testing.T, poller, promoter store.JobStore, setInterval func(time.Duration), polling func(queue string) int) {
	t.Helper()
	ctx := context.Background()
	setInterval(time.Hour)
	q := fmt.Sprintf("woken-%d", time.Now().UnixNano())
	at := storekit.Now().Add(time.Hour)
	j, _, err := promoter.Enqueue(ctx, store.NewJob{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 100}}, MaxAttempts: 1, RunAfter: at})
	if err != nil {
		t.Fatal(err)
	}
	type leased struct {
		ls  []store.Lease
		err error
	}
	got := make(chan leased, 1)
	go func() {
		ls, err := poller.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: 30 * time.Second})
		got <- leased{ls, err}
	}()
	for polling(q) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if p, err := promoter.PromoteScheduled(ctx, at); err != nil || p.Queued != 1 {
		t.Fatalf("promotion: %+v (%v)", p, err)
	}
	select {
	case r := <-got:
		if r.err != nil || len(r.ls) != 1 || r.ls[0].JobID != j.JobId {
			t.Fatalf("the woken poll leased %v (%v), want job %s", r.ls, r.err, j.JobId)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a promotion did not wake the queue's waiting poll")
	}
}
