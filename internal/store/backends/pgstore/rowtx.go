package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// rowWrite decides a write from a job's row, locked: it may read more with
// q (inside the transaction, under ctx) and queues its statements in w.
type rowWrite func(ctx context.Context, q querier, r *sqlrows.Row, w *rowWrites, n *notes) error

// rowWrites is what row writes send with their COMMIT: their statements,
// then the leases they settled, all of them in one UPDATE. A completion's
// update of its row is most of what it costs the database, and one
// statement for many rows costs far less than a statement each (about
// 40 against 70 microseconds of the database's CPU a job, measured on
// groups of 50). A write's statements reach rows of its own job only,
// and its settle is the last thing it writes, so sending the settles
// last changes nothing it sees.
type rowWrites struct {
	pgx.Batch
	settled []sqlrows.Settled
}

// add takes on o's statements and settles, after w's.
func (w *rowWrites) add(o *rowWrites) {
	w.QueuedQueries = append(w.QueuedQueries, o.QueuedQueries...)
	w.settled = append(w.settled, o.settled...)
}

// settle applies a lease's outcome to r and queues its write (see
// sqlrows.Settle).
func (w *rowWrites) settle(r *sqlrows.Row, o storekit.Outcome, keepLease bool, now time.Time) {
	w.settled = append(w.settled, sqlrows.Settlement(r, o, keepLease, now))
}

// settleAll writes settled leases' outcomes, as sqlrows.Settle each. The
// arrays are the columns of sqlrows.Settled (settleArgs).
const settleAll = `UPDATE jobs SET state = u.state, result = u.result, book = u.book, run_after = u.run_after,
	updated_at = u.updated_at, ended_at = u.ended_at, notify_due = u.notify_due, lease_expires_at = NULL,
	lease_id = CASE WHEN u.keep_lease THEN jobs.lease_id END
	FROM unnest($1::text[], $2::integer[], $3::bytea[], $4::bytea[], $5::bigint[], $6::bigint[], $7::bigint[], $8::boolean[], $9::bigint[])
		AS u(job_id, state, result, book, run_after, updated_at, ended_at, keep_lease, notify_due)
	WHERE jobs.job_id = u.job_id`

// settleArgs are settleAll's arguments for settled.
func settleArgs(settled []sqlrows.Settled) []any {
	n := len(settled)
	var (
		ids, results, books       = make([]string, n), make([][]byte, n), make([][]byte, n)
		states                    = make([]int32, n)
		runAfter, ended, notifyAt = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		updated                   = make([]int64, n)
		keep                      = make([]bool, n)
	)
	for i, st := range settled {
		ids[i], states[i], results[i], books[i] = st.JobID, st.State, st.Result, st.Book
		runAfter[i], updated[i], ended[i], keep[i], notifyAt[i] = st.RunAfter, st.UpdatedAt, st.EndedAt, st.KeepLease, st.NotifyDue
	}
	return []any{ids, states, results, books, runAfter, updated, ended, keep, notifyAt}
}

// commit sends w's statements, its settles and COMMIT in one round trip.
func (w *rowWrites) commit(ctx context.Context, conn *pgx.Conn, format string, args ...any) error {
	if len(w.settled) > 0 {
		w.Queue(settleAll, settleArgs(w.settled)...)
	}
	return commitBatch(ctx, conn, &w.Batch, format, args...)
}

// writeRowAlone runs fn in a transaction of its own on the row of job id,
// in two round trips instead of four or more: BEGIN goes with the locked
// read of the row, and the statements fn queues go with COMMIT.
func (s *Store) writeRowAlone(ctx context.Context, id string, fn rowWrite) error {
	return s.writeConn(ctx, "write job "+id, func(conn *pgx.Conn, n *notes) error {
		return rowTx(ctx, conn, id, n, fn)
	})
}

// writeConn runs tx, a transaction that sends its own BEGIN and COMMIT
// (with other statements, to save round trips), on a connection of the
// pool, as commit runs writes. what says what it does, for errors.
func (s *Store) writeConn(ctx context.Context, what string, tx func(conn *pgx.Conn, n *notes) error) error {
	return s.commit(func(n *notes) error {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return pgErr(err, "%s", what)
		}
		defer c.Release()
		conn := c.Conn()
		err = tx(conn, n)
		if conn.PgConn().TxStatus() != 'I' {
			// Failed inside the transaction: end it, so the connection
			// goes back to the pool clean (the pool drops one that is
			// still in a transaction).
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return err
	})
}

func rowTx(ctx context.Context, conn *pgx.Conn, id string, n *notes, fn rowWrite) error {
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue(selectJobLocked, id)
	br := conn.SendBatch(ctx, read)
	_, err := br.Exec()
	var r *sqlrows.Row
	if err == nil {
		r, err = sqlrows.ScanJob(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rowErr(err, id)
	}
	var w rowWrites
	if err := fn(ctx, conn, r, &w, n); err != nil {
		return err
	}
	return w.commit(ctx, conn, "write job %s", id)
}

// commitBatch sends w's statements and COMMIT in one round trip. A
// statement that fails leaves the transaction failed, for the caller to
// roll back.
func commitBatch(ctx context.Context, conn *pgx.Conn, w *pgx.Batch, format string, args ...any) error {
	w.Queue("COMMIT")
	if err := conn.SendBatch(ctx, w).Close(); err != nil {
		return pgErr(err, format, args...)
	}
	return nil
}
