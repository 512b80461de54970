package worker

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spool-run/spool/internal/credfile"
	"github.com/spool-run/spool/internal/datadir"
)

// warnExposed says, once as the worker starts, which secrets its jobs
// could read. Without RunAs a job runs as the worker's user, so whatever
// the worker may read, a job may: on one machine, the server's data
// directory (its admin key) beside the worker, or the command line's
// saved keys.
func (w *Worker) warnExposed() {
	if w.user != nil {
		return
	}
	if found := exposedSecrets(w.cfg.WorkDir); len(found) > 0 {
		w.log.Warn("jobs run as this worker's user and can read a spool server's keys or data, or saved API keys: run the worker as root with --run-as USER (see docs/security.md)",
			"readable", strings.Join(found, " "))
	}
}

// exposedSecrets returns the secrets this process can read where a spool
// server or the command line keeps them: a data directory where a server
// started here, or under workDir, or at $SPOOL_SERVER_DATA_DIR, would keep
// it, and the command line's credentials file.
func exposedSecrets(workDir string) []string {
	var dirs []string
	if d := os.Getenv(datadir.EnvVar); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, datadir.Default)
	if workDir != "" {
		dirs = append(dirs, filepath.Join(workDir, datadir.Default))
	}
	var files []string
	for _, d := range dirs {
		for _, name := range datadir.Keys {
			files = append(files, filepath.Join(d, name))
		}
	}
	if p, err := credfile.Path(); err == nil {
		files = append(files, p)
	}
	var found []string
	seen := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		if readable(abs) {
			found = append(found, abs)
		}
	}
	return found
}

// readable reports whether path can be opened for reading (without
// waiting, should it be a pipe).
func readable(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
