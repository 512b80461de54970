package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lockSpoolDir takes the spool directory for this worker alone: two workers
// on one directory would each resume the other's live outboxes as left
// behind and corrupt them. The lock file names the holder, so a second
// worker can say who it is.
func lockSpoolDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "worker.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid := strings.TrimSpace(string(holder)); pid != "" {
				who = "another worker (pid " + pid + ")"
			}
			return nil, fmt.Errorf("spool directory %s is in use by %s; give each worker its own --spool-dir", dir, who)
		}
		return nil, fmt.Errorf("lock spool directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// spoolHealth remembers whether the spool directory can be written. After a
// write fails (a full or failing disk), the worker takes no work until a
// probe write succeeds again: every job it took would end the same way.
type spoolHealth struct {
	dir string
	mu  sync.Mutex
	err error // the last failure, nil while healthy
}

// broke records a failed write.
func (h *spoolHealth) broke(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

// check returns nil when the directory is known to be writable, probing it
// again after a failure.
func (h *spoolHealth) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	if err := probe(h.dir); err != nil {
		h.err = err
		return err
	}
	h.err = nil
	return nil
}

// probeBytes is written by a probe: a few blocks, so a disk that has room
// for a file name but not for output is seen as full.
const probeBytes = 16 << 10

// probe writes a small file in dir and empties it again (the file stays, so
// a probe never depends on creating a directory entry).
func probe(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, ".probe"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(bytes.Repeat([]byte{'.'}, probeBytes))
	_ = f.Truncate(0)
	return errors.Join(err, f.Close())
}
