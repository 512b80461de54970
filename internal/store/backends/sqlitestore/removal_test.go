package sqlitestore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
)

// The reads of QueueStats and EndedBefore are searches of indexes, so
// neither reads every job: the jobs waiting or running through an index
// leading with state, the ended ones through jobs_ended (state, ended_at)
// from the time asked for, and EndedBefore's in its order of end, the
// limit of each state.
func TestQueueAndRetentionReadsIndexes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	plan, err := sqlitestore.Plan(s, sqlrows.QueueCounts, int64(0))
	if err != nil {
		t.Fatal(err)
	}
	var ended, open bool
	for _, step := range strings.Split(plan, "\n") {
		switch {
		case strings.HasPrefix(step, "SCAN"):
			t.Errorf("QueueCounts scans a table:\n%s", plan)
		case step == "SEARCH jobs USING INDEX jobs_ended (state=? AND ended_at>?)":
			ended = true
		case strings.HasPrefix(step, "SEARCH jobs USING") && strings.Contains(step, "(state=?)"):
			open = true
		}
	}
	if !ended || !open {
		t.Errorf("QueueCounts:\n%s\nwant a search of jobs_ended and one by state", plan)
	}
	q, args := sqlrows.EndedBefore(time.Now(), 10)
	plan, err = sqlitestore.Plan(s, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	// Each arm reads its range in order, no sort of its own, stopping at
	// the limit; only what the arms read is sorted.
	arms := 0
	steps := strings.Split(plan, "\n")
	for i, step := range steps {
		switch {
		case strings.HasPrefix(step, "SCAN jobs"):
			t.Errorf("EndedBefore scans the jobs:\n%s", plan)
		case step == "SEARCH jobs USING INDEX jobs_ended (state=? AND ended_at<?)":
			arms++
			if i+1 < len(steps) && strings.Contains(steps[i+1], "TEMP B-TREE") {
				t.Errorf("EndedBefore sorts the range it searches:\n%s", plan)
			}
		}
	}
	if arms != 3 {
		t.Errorf("EndedBefore:\n%s\nwant 3 searches of jobs_ended", plan)
	}
}

// TestEndedAt: ended_at is written by the writes that end a job, and only
// by those (sqlrowstest.CheckEndedAt).
func TestEndedAt(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	sqlrowstest.CheckEndedAt(t, s, func(id string) (int64, bool, error) { return sqlitestore.EndedAt(s, id) })
}

// TestMigrationEndsFinalJobs: the jobs of a database from before ended_at
// get their last change as their end if they are final, and none if not,
// and EndedBefore finds them by it.
func TestMigrationEndsFinalJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitestore.MigrateTo(db, 6); err != nil {
		t.Fatal(err)
	}
	for _, j := range sqlrowstest.OldJobs {
		if _, err := db.Exec(sqlrowstest.InsertOldJob, j.Args()...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	defer s.Close()
	sqlrowstest.CheckMigratedEnds(t, s, func(id string) (int64, bool, error) { return sqlitestore.EndedAt(s, id) })
}

// fill stores n finished jobs of q, each with a log of about size bytes
// that does not compress, and returns their ids.
func fill(t *testing.T, s *sqlitestore.Store, q string, n, size int) []string {
	t.Helper()
	ctx := context.Background()
	exec := &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 100, MaxBatchBytes: 256 << 10}}
	line := make([]byte, 500)
	var ids []string
	for range n {
		if _, _, err := s.Enqueue(ctx, store.NewJob{Queue: q, Params: &spoolv1.JobParams{Argv: []string{"true"}}, Execution: exec, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Dequeue: %d leases, %v", len(ls), err)
		}
		l := ls[0]
		seq := l.Head.NextSequence
		for written := 0; written < size; {
			texts := make([]string, 100)
			for i := range texts {
				_, _ = rand.Read(line)
				texts[i] = hex.EncodeToString(line)
				written += len(texts[i])
			}
			ev := events.Batch{Sequence: seq, Lines: events.TextLines(time.Now(), texts...)}.Event()
			h, err := s.Append(ctx, l.LeaseRef, events.Messages(ev))
			if err != nil {
				t.Fatal(err)
			}
			seq = h.NextSequence
		}
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.JobID)
	}
	return ids
}

func pragma(t *testing.T, s *sqlitestore.Store, name string) int64 {
	t.Helper()
	v, err := sqlitestore.Pragma(s, name)
	if err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

// TestReclaimSpace: the pages of deleted jobs go back to the file system,
// at most sqlitestore.ReclaimPages a call, and the file shrinks.
func TestReclaimSpace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if m := pragma(t, s, "auto_vacuum"); m != 2 {
		t.Fatalf("a new database has auto_vacuum %d, want 2 (INCREMENTAL)", m)
	}
	// Jobs of two queues in turn, one queue's deleted: the free pages lie
	// between pages in use, and the vacuum must move those.
	var gone []string
	for range 8 {
		gone = append(gone, fill(t, s, "gone", 2, 1<<20)...)
		fill(t, s, "kept", 1, 1<<20)
	}
	pageSize := pragma(t, s, "page_size")
	full := pragma(t, s, "page_count")
	for _, id := range gone {
		if err := s.DeleteJob(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	free := pragma(t, s, "freelist_count")
	if free < full/2 {
		t.Fatalf("after deleting 2/3 of the logs, %d of %d pages are free", free, full)
	}
	calls := 0
	for ; calls < 20 && pragma(t, s, "freelist_count") > 0; calls++ {
		before := pragma(t, s, "freelist_count")
		if err := s.ReclaimSpace(ctx); err != nil {
			t.Fatal(err)
		}
		if after := pragma(t, s, "freelist_count"); before-after > sqlitestore.ReclaimPages || after >= before {
			t.Fatalf("a call of ReclaimSpace took the free pages from %d to %d; want fewer, by at most %d", before, after, sqlitestore.ReclaimPages)
		}
	}
	if left := pragma(t, s, "freelist_count"); left > 0 {
		t.Fatalf("%d free pages left after %d calls", left, calls)
	}
	if min := int((free + sqlitestore.ReclaimPages - 1) / sqlitestore.ReclaimPages); calls < min {
		t.Fatalf("%d free pages reclaimed in %d calls; want at least %d", free, calls, min)
	}
	now := pragma(t, s, "page_count")
	if now > full-free {
		t.Fatalf("the database has %d pages, from %d with %d free", now, full, free)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > now*pageSize {
		t.Fatalf("the file is %d bytes, its pages %d", st.Size(), now*pageSize)
	}
	t.Logf("%d pages of %d bytes, %d free after the deletes, reclaimed in %d calls: %d pages, %d bytes on disk",
		full, pageSize, free, calls, now, st.Size())
	if err := s.ReclaimSpace(ctx); err != nil {
		t.Fatalf("ReclaimSpace with nothing to do: %v", err)
	}
}

// TestOpenConvertsToIncrementalVacuum: a database made without auto_vacuum
// (by a spool before ReclaimSpace) is rewritten once at Open, with a note
// in the log, and keeps its jobs; its space can then be reclaimed. Open
// again does nothing more.
func TestOpenConvertsToIncrementalVacuum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s := open(t, path)
	ids := fill(t, s, "q", 4, 256<<10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to auto_vacuum NONE, as the older spool made it.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA auto_vacuum = NONE`, `VACUUM`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var mode int
	if err := db.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("auto_vacuum = %d, %v; want 0 (NONE) to start from", mode, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	s, err = sqlitestore.Open(context.Background(), path, sqlitestore.Options{Log: logger})
	if err != nil {
		t.Fatal(err)
	}
	if m := pragma(t, s, "auto_vacuum"); m != 2 {
		t.Fatalf("after Open, auto_vacuum is %d, want 2 (INCREMENTAL)", m)
	}
	if !strings.Contains(log.String(), "converted the SQLite database to incremental vacuum") {
		t.Fatalf("the conversion was not logged: %q", log.String())
	}
	for _, id := range ids {
		if j, err := s.Get(context.Background(), id); err != nil || j.GetLineCount() == 0 {
			t.Fatalf("job %s after the conversion: %d lines, %v", id, j.GetLineCount(), err)
		}
	}
	for _, id := range ids {
		if err := s.DeleteJob(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if err := s.ReclaimSpace(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if free := pragma(t, s, "freelist_count"); free > 0 {
		t.Fatalf("%d pages still free after reclaiming", free)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	s, err = sqlitestore.Open(context.Background(), path, sqlitestore.Options{Log: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if log.Len() > 0 {
		t.Fatalf("opening a converted database logs: %q", log.String())
	}
}

// A new database is made incremental from the start: Open logs nothing.
func TestNewDatabaseNeedsNoConversion(t *testing.T) {
	var log bytes.Buffer
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "spool.db"),
		sqlitestore.Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := pragma(t, s, "auto_vacuum"); m != 2 || log.Len() > 0 {
		t.Fatalf("auto_vacuum %d, log %q; want 2 and nothing logged", m, log.String())
	}
}

// TestMigrationKeepsPausesAndRetries: a queue paused before the timing
// migration stays paused and takes a limit; a job queued for a retry by
// an older spool is leased as before, with the default priority.
func TestMigrationKeepsPausesAndRetries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlitestore.MigrateTo(db, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(sqlrowstest.InsertOldPause); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(sqlrowstest.InsertOldRetry, sqlrowstest.OldRetryArgs()...); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	defer s.Close()
	sqlrowstest.CheckMigratedTiming(t, s)
}

// TestDeletedParent: see sqlrowstest.CheckDeletedParent.
func TestDeletedParent(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	sqlrowstest.CheckDeletedParent(t, s, func() (int, error) { return sqlitestore.AfterRows(s) })
}
