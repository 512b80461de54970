package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
)

// TestLockedDatabaseIsUnavailable: while another connection to the file
// holds its write lock, a write waits the busy timeout and then fails as
// spool.ErrUnavailable, saying the database is locked; once the lock is
// let go, the same write goes through.
func TestLockedDatabaseIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	// Another program's connection, which takes the lock at once or not
	// at all.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if _, err := other.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatalf("the other connection could not take the write lock: %v", err)
	}

	nj := store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}}, MaxAttempts: 1,
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 16}}}
	_, _, err = s.Enqueue(ctx, nj)
	if !errors.Is(err, spool.ErrUnavailable) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("enqueue while another connection holds the lock: %v; want spool.ErrUnavailable saying the database is locked", err)
	}

	if _, err := other.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Enqueue(ctx, nj); err != nil || !created {
		t.Fatalf("enqueue once the lock was let go: created %v, %v", created, err)
	}
}
