package worker

import (
	"fmt"
	"io/fs"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/setting"
)

// prepareDirs checks the directories the worker is given and makes its
// own. The spool directory holds output not yet sent and the tokens of
// running leases: it is its owner's only, also when it was made
// otherwise before (that is said). With RunAs, the directories jobs'
// own directories are in may be passed through (0711), never listed, so
// that the job's user reaches its own directory and nothing else.
func (w *Worker) prepareDirs() error {
	if w.cfg.RunAs != "" {
		u, err := lookupJobUser(w.cfg.RunAs)
		if err != nil {
			return err
		}
		w.user = u
	}
	if w.cfg.WorkDir != "" {
		if found := datadir.Holds(w.cfg.WorkDir); found != "" {
			return setting.Unsafe("WorkDir", w.cfg.WorkDir, fmt.Sprintf("holds a spool server's data (%s): every job would run beside its keys; "+
				"give jobs a directory of their own, or none (each job then runs in an empty directory of its own)", found), spool.ErrInvalidArgument)
		}
	}
	perm := fs.FileMode(0o700)
	if w.user != nil {
		perm = 0o711
	}
	for _, d := range []struct{ setting, dir string }{{"SpoolDir", w.cfg.SpoolDir}, {"CheckoutDir", w.cfg.CheckoutDir}, {"SpoolDir", w.jobsDir()}} {
		was, err := setting.MakePrivateDir(d.setting, d.dir, perm)
		if err != nil {
			return err
		}
		if was != 0 {
			w.log.Info("a directory of the worker had another mode; changed", "dir", d.dir, "was", fmt.Sprintf("%#o", was), "now", fmt.Sprintf("%#o", perm))
		}
		if blocked := w.user.cannotEnter(d.dir); blocked != "" {
			return setting.Unsafe(d.setting, d.dir, fmt.Sprintf("cannot be reached by user %s, who runs the jobs: %s; choose a directory that user may pass through (such as /var/lib/spool/worker)",
				w.user.name, blocked), spool.ErrInvalidArgument)
		}
	}
	return nil
}
