package sqlitestore_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// TestFilesAreTheOwnersOnly: the database and the journals SQLite makes
// beside it (where a job's parameters land first) are 0600 under a umask
// that would leave them readable by everyone, and a database an older
// spool left readable is narrowed, with its leftover journal.
func TestFilesAreTheOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for name, before := range map[string]func(path string){
		"new": func(string) {},
		"left readable": func(path string) {
			for _, p := range []string{path, path + "-wal"} {
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spool.db")
			before(path)
			s := open(t, path)
			defer s.Close()
			if _, _, err := s.Enqueue(context.Background(), store.NewJob{Queue: "q", MaxAttempts: 1,
				Params:    &spoolv1.JobParams{Script: "true", Env: map[string]string{"SECRET": "hunter2"}},
				Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50}}}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("%s: %v (an open WAL database has it)", p, err)
				}
				if got := fi.Mode().Perm(); got != fs.FileMode(0o600) {
					t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), got)
				}
			}
		})
	}
}
