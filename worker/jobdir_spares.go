package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// A job's own directory, once its job has ended with it empty, is kept as
// a spare and renamed into place as the next job's, instead of being
// removed and another made: on a file system such as ext4, making and
// removing a directory costs about six times as much as two renames, and
// for jobs that end in milliseconds it was the worker's largest cost after
// starting the process. A spare is only ever an empty directory of mode
// 0700 that the worker's own user owns, renamed without replacing
// anything, and with no extended attributes; anything else is removed as
// before. Workers with RunAs keep no spares: a directory its job's user
// owned goes.

// spareDirs holds the empty job directories kept for the next jobs.
type spareDirs struct {
	free chan string
	seq  atomic.Uint64
}

// takeSpareDir renames a spare into place as dir. It fails when there is none, or
// when dir exists (the caller then makes dir as it would without spares).
func (w *Worker) takeSpareDir(dir string) error {
	select {
	case spare := <-w.spares.free:
		err := renameNoReplace(spare, dir)
		if err != nil {
			_ = syscall.Rmdir(spare)
		}
		return err
	default:
		return errNoSpare
	}
}

var errNoSpare = errors.New("no spare job directory")

// keepSpareDir keeps dir as a spare if it is one (see above) and there is
// room for it, and reports whether it did.
func (w *Worker) keepSpareDir(dir string) bool {
	if w.user != nil || len(w.spares.free) == cap(w.spares.free) || !emptyPrivateDir(dir) {
		return false
	}
	spare := filepath.Join(w.jobsDir(), fmt.Sprintf(".spare-%d", w.spares.seq.Add(1)))
	if renameNoReplace(dir, spare) != nil {
		return false
	}
	select {
	case w.spares.free <- spare:
		return true
	default:
		_ = syscall.Rmdir(spare)
		return true
	}
}

// dropSpareDirs removes the spares as the worker stops.
func (w *Worker) dropSpareDirs() {
	for {
		select {
		case spare := <-w.spares.free:
			_ = syscall.Rmdir(spare)
		default:
			return
		}
	}
}

// emptyPrivateDir reports whether path is, itself and not through a
// link, an empty directory of mode 0700 owned by the worker's user, with
// nothing else set on it.
func emptyPrivateDir(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || fi.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0o700 {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	// Nor extended attributes (a default ACL would reach the next job's
	// files): a file system that labels every file keeps no spares.
	if n, err := listxattr(f); err != nil || n > 0 {
		return false
	}
	_, err = f.Readdirnames(1)
	return err == io.EOF
}
