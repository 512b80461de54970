package worker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpareDirs: an empty private directory is kept and renamed into place
// as the next one asked for (the same directory: a descriptor held open
// across keeps its inode from being reused); one with anything in or on
// it, or reached through a link, is not kept; at most one per slot is
// kept; a spare never replaces a directory that is there.
func TestSpareDirs(t *testing.T) {
	t.Parallel()
	spool := t.TempDir()
	w := &Worker{cfg: Config{SpoolDir: spool}, spares: spareDirs{free: make(chan string, 1)}}
	if err := os.Mkdir(w.jobsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := func(name string) string {
		t.Helper()
		d := filepath.Join(w.jobsDir(), name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}

	a := dir("a")
	held, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if !w.keepSpareDir(a) {
		t.Fatal("an empty 0700 directory was not kept")
	}
	if _, err := os.Lstat(a); !os.IsNotExist(err) {
		t.Fatalf("the kept directory is still under its job's name (%v)", err)
	}
	if b := dir("b"); w.keepSpareDir(b) {
		t.Fatal("a second spare was kept for one slot")
	}
	next := filepath.Join(w.jobsDir(), "next")
	if err := w.takeSpareDir(next); err != nil {
		t.Fatal(err)
	}
	was, _ := held.Stat()
	if now, err := os.Stat(next); err != nil || !os.SameFile(was, now) {
		t.Fatalf("the next directory is not the spare (%v)", err)
	}
	if err := w.takeSpareDir(filepath.Join(w.jobsDir(), "none")); err != errNoSpare {
		t.Fatalf("with no spare left: %v", err)
	}

	full := dir("full")
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := dir("open")
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(w.jobsDir(), "link")
	if err := os.Symlink(dir("target"), link); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{full, open, link} {
		if w.keepSpareDir(d) {
			t.Fatalf("%s was kept as a spare", filepath.Base(d))
		}
	}

	// A spare never takes the place of a directory already there.
	if !w.keepSpareDir(dir("c")) {
		t.Fatal("an empty 0700 directory was not kept")
	}
	if err := w.takeSpareDir(full); err == nil {
		t.Fatal("a spare replaced a directory already there")
	}
	if _, err := os.Stat(filepath.Join(full, "x")); err != nil {
		t.Fatalf("the directory there lost its file: %v", err)
	}
	w.dropSpareDirs()
	left, _ := filepath.Glob(filepath.Join(w.jobsDir(), ".spare-*"))
	if len(left) != 0 {
		t.Fatalf("spares left after dropSpareDirs: %v", left)
	}
}
