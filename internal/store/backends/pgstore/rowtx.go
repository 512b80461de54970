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
type rowWrite func(ctx context.Context, q querier, r *sqlrows.Row, w *pgx.Batch, n *notes) error

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
	var w pgx.Batch
	if err := fn(ctx, conn, r, &w, n); err != nil {
		return err
	}
	return commitBatch(ctx, conn, &w, "write job %s", id)
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

// queueSettle queues the statement that applies a lease's outcome to r
// (see sqlrows.Settle).
func queueSettle(w *pgx.Batch, r *sqlrows.Row, o storekit.Outcome, keepLease bool, now time.Time) {
	q, args := sqlrows.Settle(r, o, keepLease, now)
	w.Queue(sqlrows.Dollar(q), args...)
}
