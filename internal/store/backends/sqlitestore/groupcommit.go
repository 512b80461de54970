package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

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
// Each write runs inside its own savepoint, so a write that fails (a stale
// lease, a name in use) undoes only itself, as its own transaction would
// have, and the others commit.

// maxGroup bounds one transaction, so a burst of large appends does not
// grow one commit (and the WAL) without end.
const maxGroup = 64

// writeFunc is one write: it runs in the group's transaction, with a
// context that carries its caller's values but never cancels (a cancel in
// the middle of a statement would abort the whole group's transaction),
// and notes whom to wake once it is committed.
type writeFunc func(ctx context.Context, tx *sql.Tx, n *notes) error

// pendingWrite is a write waiting for its group's commit.
type pendingWrite struct {
	ctx  context.Context
	fn   writeFunc
	n    notes
	err  error
	done chan struct{}
}

// errClosed answers writes that arrive after Close.
var errClosed = apierr.Errorf(spool.ErrUnavailable, "sqlite: the store is closed")

// write runs fn in a write transaction, shared with the writes that wait
// beside it, and wakes the noted watchers after it commits. A caller whose
// ctx ends before its write is taken up gets ctx's error and nothing is
// written; once taken up, the write finishes and its outcome is returned.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &pendingWrite{ctx: context.WithoutCancel(ctx), fn: fn, done: make(chan struct{})}
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
	for {
		var group []*pendingWrite
		select {
		case w := <-s.writes:
			group = append(group, w)
		case <-s.quit:
			return
		}
	gather:
		for len(group) < maxGroup {
			select {
			case w := <-s.writes:
				group = append(group, w)
			default:
				break gather
			}
		}
		s.commit(group)
		s.commits.Add(1)
		for _, w := range group {
			close(w.done)
		}
	}
}

// commit makes a group's writes in one transaction. A write's own failure
// is its alone; a failure of the transaction (begin, a savepoint, the
// commit) is every write's that had not failed on its own.
func (s *Store) commit(group []*pendingWrite) {
	fail := func(err error) {
		for _, w := range group {
			if w.err == nil {
				w.err = err
			}
		}
	}
	tx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		fail(sqliteErr(err, "begin"))
		return
	}
	for _, w := range group {
		if err := s.runOne(tx, w); err != nil {
			_ = tx.Rollback()
			fail(err)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(sqliteErr(err, "commit"))
	}
}

// runOne runs one write in a savepoint, undoing it if it fails. Only an
// error of the savepoint itself (the transaction is gone) is returned.
func (s *Store) runOne(tx *sql.Tx, w *pendingWrite) error {
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
