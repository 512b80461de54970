package worker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Every attempt has a directory of its own, SpoolDir/jobs/JOB-aN, made
// empty as it starts: a command runs there unless its job names a
// directory, a repository, or the worker has a WorkDir. So what a command
// reaches by relative paths is its own, never the worker's working
// directory, where on one machine the server's data may be. Under RunAs
// the directory is the user's, and its HOME when the user has no home.
// It is removed when the attempt ends, unless Config.KeepJobDirs (or, if
// empty, kept under another name for the next job: jobdir_spares.go).

// jobsDir holds the attempts' own directories.
func (w *Worker) jobsDir() string { return filepath.Join(w.cfg.SpoolDir, "jobs") }

// makeJobDir makes the attempt's own directory (a.ownDir); cleanup removes
// it, or keeps it with KeepJobDirs.
func (a *attempt) makeJobDir() (string, func(), error) {
	dir := filepath.Join(a.w.jobsDir(), fmt.Sprintf("%s-a%d", a.job.GetJobId(), a.job.GetAttempt()))
	err := a.w.takeSpareDir(dir)
	if err != nil {
		err = os.Mkdir(dir, 0o700)
	}
	if errors.Is(err, fs.ErrExist) {
		// Whatever is there (an attempt of the same number, handed back
		// before and kept) is not this attempt's.
		if err = os.RemoveAll(dir); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	if err != nil {
		return "", func() {}, err
	}
	cleanup := func() {
		if a.w.cfg.KeepJobDirs {
			a.log.Info("the job's directory is kept", "dir", dir)
			return
		}
		if a.w.keepSpareDir(dir) {
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			a.log.Warn("cannot remove the job's directory", "dir", dir, "error", err)
		}
	}
	if err := a.w.user.own(dir); err != nil {
		return "", cleanup, err
	}
	a.ownDir = dir
	return dir, cleanup, nil
}

// clearJobDirs removes the directories a worker that died on this spool
// directory left behind (unless they are to be kept).
func (w *Worker) clearJobDirs() {
	if w.cfg.KeepJobDirs {
		return
	}
	entries, err := os.ReadDir(w.jobsDir())
	if err != nil {
		w.log.Warn("cannot list the jobs' directories left behind", "dir", w.jobsDir(), "error", err)
		return
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(w.jobsDir(), e.Name())); err != nil {
			w.log.Warn("cannot remove a job's directory left behind", "dir", filepath.Join(w.jobsDir(), e.Name()), "error", err)
		}
	}
	if len(entries) > 0 {
		w.log.Info("removed the directories of jobs a previous worker left", "count", len(entries))
	}
}
