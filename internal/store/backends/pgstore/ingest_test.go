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
	"github.com/spool-run/spool/internal/store/storekit"
)

func externalJob(src string) store.NewJob {
	return store.NewJob{Queue: "external", Params: &spoolv1.JobParams{External: &spoolv1.External{Source: src}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}
}

// An ingest that loses a race to another server starts over and sees what
// the winner stored. The other server is played by a transaction held
// open here, which stores the source's job (and an event) as Ingest does;
// the ingest, which cannot see it yet, waits on the unique index that
// transaction's rows hold, and is refused once it commits:
//   - by jobs_open_source, when the other job is still open: the ingest
//     then adds its event to that job;
//   - by accepted_pkey, when the other job ended before committing (so the
//     ingest's own job could be created) and holds the same event: the
//     ingest then finds it a duplicate, and creates nothing.
func TestIngestLosesTheRaceToCreate(t *testing.T) {
	t.Parallel()
	for _, ended := range []bool{false, true} {
		t.Run(map[bool]string{false: "OpenJob", true: "EndedJob"}[ended], func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabase(t)
			s := open(t, url)
			ctx := context.Background()
			const src = "group:stream"
			ev := store.RawEvent{ID: "e-1", Time: time.UnixMilli(1_700_000_000_000), Message: "hello"}

			other := pgtest.Connect(t, url)
			tx, err := other.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			j := storekit.NewJobRecord(externalJob(src), storekit.Now())
			exec(t, tx, sqlrows.InsertNewJob, sqlrows.InsertJobArgs(j, nil)...)
			exec(t, tx, sqlrows.InsertAccepted, sqlrows.AcceptedArgs(src, j.JobId, store.Accepted{RawEvent: ev, Line: 1, Lines: 1, Group: 1})...)
			if ended {
				exec(t, tx, `UPDATE jobs SET state = ? WHERE job_id = ?`, int32(spoolv1.JobState_JOB_STATE_SUCCEEDED), j.JobId)
			}

			type result struct {
				res store.IngestResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				evs := []store.RawEvent{ev}
				if !ended {
					evs[0].ID = "e-2"
				}
				res, err := s.Ingest(ctx, store.IngestRequest{Source: src, Events: evs, Job: externalJob(src)})
				done <- result{res, err}
			}()
			waitForLockWait(t, url)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			switch {
			case r.err != nil:
				t.Fatalf("the ingest that lost the race failed: %v", r.err)
			case ended && (r.res.Job != nil || r.res.Accepted != 0):
				t.Fatalf("an event the other server stored was stored again: %+v", r.res)
			case !ended && (r.res.Created || r.res.Accepted != 1 || r.res.Job.GetJobId() != j.JobId || r.res.Job.GetLineCount() != 1):
				t.Fatalf("the ingest did not add its event to the other server's job %s: %+v", j.JobId, r.res)
			}
		})
	}
}

// exec runs a shared statement in tx.
func exec(t *testing.T, tx pgx.Tx, q string, args ...any) {
	t.Helper()
	if _, err := tx.Exec(context.Background(), sqlrows.Dollar(q), args...); err != nil {
		t.Fatal(err)
	}
}

// waitForLockWait waits until a session of the database waits for a lock.
func waitForLockWait(t *testing.T, url string) {
	t.Helper()
	admin := pgtest.Connect(t, url)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var waiting bool
		if err := admin.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
	t.Fatal("the ingest never waited for the other server's transaction")
}

// The reads of an ingest, of Accepted and of a listing of a source's jobs
// can each be served by an index, in order, without a sort: the source's
// open job (not its ended ones), the ids seen before (the primary key of
// accepted, which answers alone), a page of a job's accepted events in
// line order, a source's jobs newest first (in one state, too).
func TestIngestReadsIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	running := []spoolv1.JobState{spoolv1.JobState_JOB_STATE_RUNNING}
	for _, tc := range []struct {
		what string
		plan func() (string, error)
		want string
	}{
		{"open job", func() (string, error) { return pgstore.Plan(s, sqlrows.Dollar(sqlrows.SelectOpenJob), "s") }, "Index Scan using jobs_"},
		{"ids seen", func() (string, error) { return pgstore.Plan(s, pgstore.SelectSeen, "s", []string{"1", "2"}) }, "Index Only Scan using accepted_pkey"},
		{"accepted page", func() (string, error) { return pgstore.Plan(s, sqlrows.Dollar(sqlrows.AcceptedPage), "j", 0, 1000) }, "Index Scan using accepted_job_line"},
		{"source's jobs", func() (string, error) { return pgstore.ListPlan(s, store.ListFilter{Source: "s"}) }, "Index Scan using jobs_source_newest"},
		{"source's running jobs", func() (string, error) { return pgstore.ListPlan(s, store.ListFilter{Source: "s", States: running}) }, "Index Scan using jobs_source_state_newest"},
	} {
		plan, err := tc.plan()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, tc.want) ||
			(tc.what == "open job" && !strings.Contains(plan, "Index Cond: (source =")) {
			t.Errorf("%s:\n%s\nwant %s…, no sort", tc.what, plan, tc.want)
		}
	}
}
