package dirblob_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/spool-run/spool/internal/blob"
	"github.com/spool-run/spool/internal/blob/blobtest"
	"github.com/spool-run/spool/internal/blob/dirblob"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string) *dirblob.Store {
	t.Helper()
	s, err := dirblob.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return open(t, t.TempDir()) })
}

// TestStaysInside puts blobs with awkward keys and checks every file the
// store wrote is under its directory, and that deleting them leaves no
// directories behind.
func TestStaysInside(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "blobs")
	s := open(t, root)
	ctx := context.Background()
	for _, k := range blobtest.BadKeys {
		_, _ = s.Put(ctx, k, strings.NewReader("x"))
	}
	for _, k := range []string{"a.d/b", "a/b.b", "tmp/x", "tmp", "..x/y..", ".hidden/.x"} {
		if _, err := s.Put(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "blobs" {
		t.Fatalf("the store wrote beside its directory: %v", entries)
	}
	if n, err := s.DeletePrefix(ctx, "a"); err != nil || n != 2 {
		t.Fatalf("DeletePrefix(a) = %d, %v", n, err)
	}
	for _, k := range []string{"tmp/x", "tmp", "..x/y..", ".hidden/.x"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := os.ReadDir(root)
	if len(left) != 1 || left[0].Name() != "tmp" {
		t.Errorf("after deleting every blob the directory holds %v, want only tmp", left)
	}
}

// TestUnfinishedPutsCleared checks a Put a crash cut short long ago is
// removed when the store opens again, and one that may still be running
// (in another process sharing the directory) is not.
func TestUnfinishedPutsCleared(t *testing.T) {
	root := t.TempDir()
	open(t, root)
	stale, running := filepath.Join(root, "tmp", "put-1"), filepath.Join(root, "tmp", "put-2")
	for _, f := range []string{stale, running} {
		if err := os.WriteFile(f, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	open(t, root)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an unfinished Put of two hours ago survived reopening: %v", err)
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("a Put that may still be running was removed: %v", err)
	}
}
