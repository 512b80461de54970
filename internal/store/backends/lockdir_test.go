package backends

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A lock held elsewhere for a moment (a child between fork and exec keeps
// a copy of it) is waited out; one held for good makes the directory in
// use, with an error that says so.
func TestLockDirWaitsOutAMomentaryHolder(t *testing.T) {
	dir := t.TempDir()
	holder := func() *os.File {
		f, err := os.OpenFile(filepath.Join(dir, "spool.lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return f
	}

	brief := holder()
	go func() {
		time.Sleep(100 * time.Millisecond)
		brief.Close()
	}()
	lock, err := lockDirWithin(dir, 10*time.Second)
	if err != nil {
		t.Fatalf("a lock released after 100ms: %v", err)
	}
	lock.Close()

	held := holder()
	defer held.Close()
	if _, err := lockDirWithin(dir, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "is in use by another spool server") {
		t.Fatalf("a lock held throughout: %v, want the directory in use", err)
	}
}
