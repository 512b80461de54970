package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
)

// QueueStats and EndedBefore can be served by indexes, so neither reads
// every job: the ended jobs through jobs_ended (state, ended_at) (its
// predicate proved from the query's terms), from the time asked for;
// EndedBefore's in its order of end, at most the limit of each state.
func TestQueueAndRetentionReadIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	plan, err := pgstore.Plan(s, sqlrows.Dollar(sqlrows.QueueCounts), int64(0))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index Scan on jobs_ended") {
		t.Errorf("QueueCounts:\n%s\nwant jobs_ended among its indexes, no scan of the table", plan)
	}
	if !strings.Contains(plan, "ended_at >=") {
		t.Errorf("QueueCounts:\n%s\nwant the ended jobs found by ended_at", plan)
	}
	q, args := sqlrows.EndedBefore(time.Now(), 10)
	plan, err = pgstore.Plan(s, sqlrows.Dollar(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Seq Scan") || strings.Count(plan, "Index Scan using jobs_ended on jobs") != 3 ||
		strings.Count(plan, "Limit") != 4 || strings.Count(plan, "ended_at <") != 3 {
		t.Errorf("EndedBefore:\n%s\nwant 3 ordered scans of jobs_ended by ended_at, each limited", plan)
	}
}

// TestEndedAt: ended_at is written by the writes that end a job, and only
// by those (sqlrowstest.CheckEndedAt).
func TestEndedAt(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	sqlrowstest.CheckEndedAt(t, s, func(id string) (int64, bool, error) { return pgstore.EndedAt(s, id) })
}

// TestLogAppendIsHOT: moving a running job's log head, as every append
// does, changes no indexed column (updated_at is in no index), so
// PostgreSQL updates the row in place and adds nothing to its indexes.
func TestLogAppendIsHOT(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	nj := store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 256 << 10}}, MaxAttempts: 1}
	if _, _, err := s.Enqueue(ctx, nj); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d leases, %v", len(ls), err)
	}
	l := ls[0]
	hot, err := pgstore.HOTUpdates(s, sqlrows.Dollar(sqlrows.MoveHead),
		l.Head.NextSequence+1, l.Head.NextLine+1, time.Now().Add(time.Second).UnixMicro(), l.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if hot != 1 {
		t.Fatalf("moving a running job's log head: %d heap-only updates, want 1", hot)
	}
}

// TestMigrationEndsFinalJobs: the jobs of a database from before ended_at
// get their last change as their end if they are final, and none if not,
// and EndedBefore finds them by it.
func TestMigrationEndsFinalJobs(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	if err := pgstore.MigrateTo(url, 3); err != nil {
		t.Fatal(err)
	}
	updated := map[string]int64{"succeeded": 1000, "failed": 2000, "cancelled": 3000, "queued": 500, "running": 600}
	state := map[string]spoolv1.JobState{"succeeded": spoolv1.JobState_JOB_STATE_SUCCEEDED, "failed": spoolv1.JobState_JOB_STATE_FAILED,
		"cancelled": spoolv1.JobState_JOB_STATE_CANCELLED, "queued": spoolv1.JobState_JOB_STATE_QUEUED, "running": spoolv1.JobState_JOB_STATE_RUNNING}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for id, at := range updated {
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (job_id, queue, state, created_at, updated_at, max_attempts, params, execution)
			VALUES ($1, 'q', $2, 1, $3, 1, '\x'::bytea, '\x'::bytea)`, id, int32(state[id]), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := open(t, url)
	for id, at := range updated {
		ended, ok, err := pgstore.EndedAt(s, id)
		switch final := id != "queued" && id != "running"; {
		case err != nil:
			t.Fatal(err)
		case final && (!ok || ended != at):
			t.Errorf("job %s after the migration: ended_at %d (set: %v), want %d", id, ended, ok, at)
		case !final && ok:
			t.Errorf("job %s after the migration: ended_at %d, want NULL", id, ended)
		}
	}
	ids, err := s.EndedBefore(ctx, time.UnixMicro(2500), 10)
	if err != nil || strings.Join(ids, " ") != "succeeded failed" {
		t.Fatalf("EndedBefore after the migration: %v, %v; want succeeded failed", ids, err)
	}
}
