package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"

	"modernc.org/sqlite"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Group commit. Every change to the database is a small transaction, and
// what a transaction costs is its commit: the WAL write and, with
// synchronous=full, the fsync. So the writes that arrive while one commit
// is on its way are gathered and made in the next transaction together,
// one commit for all of them, and each caller is answered when that commit
// is on disk. Durability is unchanged; the cost of a call falls as more
// calls wait together, which is when it matters. With one caller at a time
// nothing waits: its write starts at once, alone.
//
// A write that fails (a stale lease, a name in use) undoes only itself, as
// its own transaction would have, and the others commit. Most writes run
// inside a savepoint of their own for that. A savepoint is not free (two
// statements, and a copy of every page the write changes the first time
// it does), so the hot writes are spared it: the new jobs of a group are
// inserted together (insertJobs), and a bare write (Complete, a lease)
// makes its checks before it changes anything, so a refusal has nothing
// to undo. Should a bare write fail in SQLite itself, after it may have
// changed something, the group's transaction is rolled back and the group
// made again with a savepoint for every write.

const (
	// maxGroup bounds the writes of one transaction. A service enqueues a
	// call's jobs, and completes a worker's, a hundred or more at a time:
	// they all fit in one.
	maxGroup = 1024
	// maxGroupBytes bounds what a group stores beyond its first write, so
	// that a burst of large appends or enqueues does not grow one commit
	// (and the WAL, and every caller's wait for it) without end.
	maxGroupBytes = 4 << 20
)

// writeFunc is one write: it runs in the group's transaction, with a
// context that carries its caller's values but never cancels (a cancel in
// the middle of a statement would abort the whole group's transaction),
// and notes whom to wake once it is committed. It may be run again, from
// the start, when its group is made again: it sets what it returns, never
// adds to it.
type writeFunc func(ctx context.Context, tx *sql.Tx, n *notes) error

// pendingWrite is a write waiting for its group's commit.
type pendingWrite struct {
	ctx context.Context
	fn  writeFunc
	// size is about what the write stores, in bytes, for maxGroupBytes.
	size int
	// bare says fn needs no savepoint: an error of its is a refusal made
	// before it changed anything, unless it is SQLite's or marked
	// afterWrite.
	bare bool
	// job, when set, is the new job the write inserts, with the group's
	// other new jobs; fn runs only when that insert left it out.
	job *jobInsert
	// inserted says insertJobs stored job: fn is not run.
	inserted bool
	// completion, when set, is the completion fn makes: those that meet
	// in a group are made together instead (completeRun).
	completion *completion

	n    notes
	err  error
	done chan struct{}
}

// jobInsert is a new job's row (sqlrows.InsertJobArgs), and what its write
// does once the row is in.
type jobInsert struct {
	id, requestID string
	args          []any
	stored        func(n *notes)
}

// errClosed answers writes that arrive after Close.
var errClosed = apierr.Errorf(spool.ErrUnavailable, "sqlite: the store is closed")

// write runs fn in a write transaction, shared with the writes that wait
// beside it, and wakes the noted watchers after it commits. A caller whose
// ctx ends before its write is taken up gets ctx's error and nothing is
// written; once taken up, the write finishes and its outcome is returned.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	return s.submit(ctx, &pendingWrite{fn: fn})
}

// writeBare is write for a fn that makes its checks before it changes
// anything (pendingWrite.bare), storing about size bytes.
func (s *Store) writeBare(ctx context.Context, size int, fn writeFunc) error {
	return s.submit(ctx, &pendingWrite{fn: fn, bare: true, size: size})
}

// submit hands w to the writer and waits for its outcome.
func (s *Store) submit(ctx context.Context, w *pendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.ctx, w.done = context.WithoutCancel(ctx), make(chan struct{})
	select {
	case s.writes <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return errClosed
	}
	<-w.done
	if w.err != nil {
		return w.err
	}
	for _, k := range w.n {
		storekit.Wake(&s.hub, &s.polls, k)
	}
	return nil
}

// writer takes writes as they come, a group at a time, until Close.
func (s *Store) writer() {
	defer close(s.writerDone)
	var (
		next *pendingWrite
		// last is the size of the recent groups: the last one's, or
		// half the one before if that is more, so that a small group
		// between two bursts (a lease between two workers' batches of
		// completions) does not make the next burst's first group
		// small too; after a burst it falls back to one in a few groups.
		last int
	)
	for {
		if next == nil {
			select {
			case next = <-s.writes:
			case <-s.quit:
				return
			}
		}
		g := gathering{group: []*pendingWrite{next}}
		// The callers of a large group, just answered, often have their
		// next write at hand (a service enqueues a call's jobs a hundred
		// at a time). Taking the first of them to arrive would make a
		// group of one or two, and a commit for it, while the rest wait
		// for the next: so while the group is smaller than the recent
		// ones and writes keep arriving, the writer lets their callers
		// run and looks again. A lone caller's group, when nothing else
		// has been written for a few groups, goes at once.
		for yielded := false; ; yielded = true {
			added := s.gather(&g)
			if g.full() || len(g.group) >= last || (yielded && added == 0) {
				break
			}
			runtime.Gosched()
		}
		next, last = g.next, max(len(g.group), last/2)
		s.commit(g.group)
		s.commits.Add(1)
		for _, w := range g.group {
			close(w.done)
		}
	}
}

// gathering is a group being gathered: its writes, the size of all but
// the first, and the write that would have taken it past maxGroupBytes,
// which starts the next one.
type gathering struct {
	group []*pendingWrite
	size  int
	next  *pendingWrite
}

func (g *gathering) full() bool { return g.next != nil || len(g.group) >= maxGroup }

// gather adds the writes waiting to g until it is full, and says how many
// it added.
func (s *Store) gather(g *gathering) int {
	added := 0
	for !g.full() {
		select {
		case w := <-s.writes:
			if g.size += w.size; g.size > maxGroupBytes {
				g.next = w
				return added
			}
			g.group = append(g.group, w)
			added++
		default:
			return added
		}
	}
	return added
}

// errRedo is what makeGroup returns when a bare write failed in SQLite:
// the transaction is rolled back, and the group is to be made again with
// a savepoint for every write.
var errRedo = errors.New("sqlite: a write without a savepoint failed; the group is made again")

// commit makes a group's writes in one transaction. A write's own failure
// is its alone; a failure of the transaction (begin, a savepoint, the
// commit) is every write's that had not failed on its own.
func (s *Store) commit(group []*pendingWrite) {
	err := s.makeGroup(group, false)
	if errors.Is(err, errRedo) {
		for _, w := range group {
			w.err, w.n, w.inserted = nil, nil, false
		}
		err = s.makeGroup(group, true)
	}
	if err != nil {
		for _, w := range group {
			if w.err == nil {
				w.err = err
			}
		}
	}
}

// makeGroup runs the group's writes in a transaction and commits it;
// careful puts every write in a savepoint of its own. It returns the
// failure of the transaction, or errRedo.
func (s *Store) makeGroup(group []*pendingWrite, careful bool) error {
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		return sqliteErr(err, "begin")
	}
	if !careful {
		if err := insertJobs(tx, group); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	for i := 0; i < len(group); i++ {
		w := group[i]
		if w.inserted {
			continue
		}
		switch run := completionRun(group[i:]); {
		case careful:
			err = runOne(tx, w)
		case len(run) > 1:
			err = completeRun(tx, run)
			i += len(run) - 1
		case w.bare:
			err = runBare(tx, w)
		default:
			err = runOne(tx, w)
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return sqliteErr(err, "commit")
	}
	return nil
}

// runOne runs one write in a savepoint, undoing it if it fails. Only an
// error of the savepoint itself (the transaction is gone) is returned.
func runOne(tx *sql.Tx, w *pendingWrite) error {
	if _, err := tx.Exec(`SAVEPOINT write`); err != nil {
		return sqliteErr(err, "savepoint")
	}
	if w.err = w.fn(w.ctx, tx, &w.n); w.err != nil {
		w.n = nil
		if _, err := tx.Exec(`ROLLBACK TO write`); err != nil {
			return errors.Join(w.err, sqliteErr(err, "roll back a failed write"))
		}
	}
	if _, err := tx.Exec(`RELEASE write`); err != nil {
		return sqliteErr(err, "release savepoint")
	}
	return nil
}

// runBare runs a bare write. A refusal is its own; a failure in SQLite,
// or after the write changed something, may have left part of the write
// behind, and returns errRedo.
func runBare(tx *sql.Tx, w *pendingWrite) error {
	if w.err = w.fn(w.ctx, tx, &w.n); w.err != nil {
		w.n = nil
		var (
			se *sqlite.Error
			aw afterWriteErr
		)
		if errors.As(w.err, &se) || errors.As(w.err, &aw) {
			return errRedo
		}
	}
	return nil
}

// afterWriteErr is an error of a bare write that has changed something:
// the write is to be undone.
type afterWriteErr struct{ err error }

func (e afterWriteErr) Error() string { return e.err.Error() }
func (e afterWriteErr) Unwrap() error { return e.err }

// afterWrite marks err, if any, as an error of a bare write that has
// changed something.
func afterWrite(err error) error {
	if err == nil {
		return nil
	}
	return afterWriteErr{err}
}
