package worker_test

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/worker"
)

// TestSpoolDirIsTheWorkersOnly: a spool directory made before with a mode
// that lets others in is narrowed to 0700 (and that is said), and what the
// worker writes in it while a job runs (its outbox, its lock) is 0600, in
// directories that are 0700.
func TestSpoolDirIsTheWorkersOnly(t *testing.T) {
	t.Parallel()
	spoolDir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(spoolDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(spoolDir, 0o755)
	var logs safebuf.Buffer
	e := newEnv(t, 1, func(c *worker.Config) {
		c.SpoolDir, c.Logger = spoolDir, slog.New(slog.NewTextHandler(&logs, nil))
	})
	if !strings.Contains(logs.String(), "a directory of the worker had another mode; changed") || !strings.Contains(logs.String(), "was=0755") {
		t.Errorf("the worker did not say it narrowed its spool directory:\n%s", logs.String())
	}
	id := e.submit(t, sh("echo started; sleep 30"))
	waitForLines(t, e, id, 1)
	var files int
	err := filepath.WalkDir(spoolDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 {
		t.Fatalf("found %d files in the spool directory while a job runs; want its outbox and the lock at least", files)
	}
	if _, err := e.c.Cancel(t.Context(), id, "done"); err != nil {
		t.Fatal(err)
	}
	e.wait(t, id)
}

// TestUndeliveredIsBounded: output kept in undelivered/ longer than the
// age allowed is removed, then the oldest while more than the bytes
// allowed is kept; the newest that fits stays.
func TestUndeliveredIsBounded(t *testing.T) {
	t.Parallel()
	spoolDir := t.TempDir()
	kept := filepath.Join(spoolDir, "undelivered")
	if err := os.MkdirAll(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	outboxes := []struct {
		name string
		age  time.Duration
		size int
	}{
		{"stale-a1", 8 * 24 * time.Hour, 10}, // older than the 7 days allowed
		{"older-a2", 2 * time.Hour, 600},     // the oldest of what is too much
		{"newer-a1", time.Hour, 300},         // these two fit in 1000 bytes
		{"newest-a3", time.Minute, 300},
	}
	for _, o := range outboxes {
		for seg := 1; seg <= 2; seg++ {
			p := filepath.Join(kept, fmt.Sprintf("%s.%08d.seg", o.name, seg))
			if err := os.WriteFile(p, make([]byte, o.size/2), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, now.Add(-o.age), now.Add(-o.age)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var logs safebuf.Buffer
	newEnv(t, 1, func(c *worker.Config) {
		c.SpoolDir, c.UndeliveredMaxBytes = spoolDir, 1000
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	want := "newer-a1.00000001.seg newer-a1.00000002.seg newest-a3.00000001.seg newest-a3.00000002.seg"
	said := `msg="removed undelivered output kept too long, or beyond the room allowed it, oldest first" outboxes=2 bytes=610`
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, err := os.ReadDir(kept)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if got = strings.Join(names, " "); got == want && strings.Contains(logs.String(), said) {
			return
		}
	}
	t.Fatalf("undelivered/ holds %s; want %s, and the worker to say %q:\n%s", got, want, said, logs.String())
}
