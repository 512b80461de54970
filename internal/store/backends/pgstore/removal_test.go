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
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range sqlrowstest.OldJobs {
		if _, err := conn.Exec(ctx, sqlrows.Dollar(sqlrowstest.InsertOldJob), j.Args()...); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := open(t, url)
	sqlrowstest.CheckMigratedEnds(t, s, func(id string) (int64, bool, error) { return pgstore.EndedAt(s, id) })
}

// TestMigrationKeepsPausesAndRetries: a queue paused before the timing
// migration stays paused and takes a limit; a job queued for a retry by
// an older spool is leased as before, with the default priority.
func TestMigrationKeepsPausesAndRetries(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	if err := pgstore.MigrateTo(url, 9); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, sqlrowstest.InsertOldPause); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, sqlrows.Dollar(sqlrowstest.InsertOldRetry), sqlrowstest.OldRetryArgs()...); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sqlrowstest.CheckMigratedTiming(t, open(t, url))
}

// TestDeletedParent: see sqlrowstest.CheckDeletedParent.
func TestDeletedParent(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	sqlrowstest.CheckDeletedParent(t, s, func() (int, error) { return pgstore.AfterRows(s) })
}
