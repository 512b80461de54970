package worker

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/spool-run/spool/internal/outbox"
)

// Output that could not be delivered (the job had moved on to another
// attempt) is kept in SpoolDir/undelivered for someone to look at, and
// recorded on the job. Kept forever, a worker whose server is often away
// would fill its disk: what is older than UndeliveredMaxAge goes, and the
// oldest goes first while more than UndeliveredMaxBytes is kept. The
// bounds are checked as the worker starts, each time output is kept
// aside, and every hour.

// The bounds of undelivered output when Config leaves them 0.
const (
	DefaultUndeliveredMaxAge         = 7 * 24 * time.Hour
	DefaultUndeliveredMaxBytes int64 = 1 << 30
)

// undeliveredDir is where output that could not be delivered is kept.
func (w *Worker) undeliveredDir() string { return filepath.Join(w.cfg.SpoolDir, "undelivered") }

// pruneUndelivered removes kept output beyond the bounds.
func (w *Worker) pruneUndelivered() {
	w.pruning.Lock()
	defer w.pruning.Unlock()
	paths, err := outbox.List(w.undeliveredDir())
	if err != nil {
		w.log.Warn("cannot list the undelivered output kept", "dir", w.undeliveredDir(), "error", err)
		return
	}
	type kept struct {
		path string
		size int64
		at   time.Time
	}
	var all []kept
	var total int64
	for _, p := range paths {
		size, at, err := outbox.Stat(p)
		if err != nil {
			w.log.Warn("cannot look at undelivered output kept", "outbox", p, "error", err)
			continue
		}
		all = append(all, kept{p, size, at})
		total += size
	}
	slices.SortFunc(all, func(a, b kept) int { return a.at.Compare(b.at) })
	maxAge, maxBytes := w.cfg.UndeliveredMaxAge, w.cfg.UndeliveredMaxBytes
	var removed int
	var freed int64
	for _, k := range all {
		tooOld := maxAge > 0 && time.Since(k.at) > maxAge
		tooMuch := maxBytes > 0 && total > maxBytes
		if !tooOld && !tooMuch {
			break // the rest is newer, and what is kept fits
		}
		if err := outbox.Delete(k.path); err != nil {
			w.log.Warn("cannot remove undelivered output kept", "outbox", k.path, "error", err)
			continue
		}
		total -= k.size
		removed++
		freed += k.size
	}
	if removed > 0 {
		w.log.Info("removed undelivered output kept too long, or beyond the room allowed it, oldest first",
			"outboxes", removed, "bytes", freed, "max_age", maxAge, "max_bytes", maxBytes, "left_bytes", total)
	}
}
