package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// rowJob is a write of one job's row waiting for its group.
type rowJob struct {
	id string
	fn rowWrite
	n  notes
}

// selectJobsLocked reads and locks the rows of a group's jobs. The locks
// are taken in the order of the ids, so two groups (of this server or
// another) wanting the same rows queue behind each other instead of
// deadlocking.
var selectJobsLocked = `SELECT ` + sqlrows.JobCols + ` FROM jobs WHERE job_id = ANY($1) ORDER BY job_id FOR UPDATE`

// writeRow runs fn on the locked row of job id, in a transaction shared
// with the row writes waiting beside it (see groupcommit.go), and wakes
// what it noted once that commits. size is about what fn sends (an
// append's events), to bound groups. The hot writes of a job's life (its
// output, its completion) take this path.
func (s *Store) writeRow(ctx context.Context, id string, size int, fn rowWrite) error {
	p, err := s.rows.do(ctx, &rowJob{id: id, fn: fn}, []string{id}, size)
	switch {
	case err != nil:
		return err
	case p.alone:
		return s.writeRowAlone(context.WithoutCancel(ctx), id, fn)
	}
	return p.err
}

// publishedSize is about what storing evs sends.
func publishedSize(evs []events.Published) int {
	n := 0
	for _, ev := range evs {
		n += ev.Size
	}
	return n
}

// runRows runs a group of row writes in one transaction. When that fails,
// the writes that had not failed on their own (a decision made from their
// locked row stands) are marked to run alone.
func (s *Store) runRows(group []*pending[*rowJob]) {
	if err := s.rowGroupTx(context.Background(), group); err != nil {
		s.fallbacks.Add(1)
		for _, p := range group {
			if p.err == nil {
				p.alone = true
			}
		}
		return
	}
	var all notes
	for _, p := range group {
		if p.err == nil {
			s.wake(p.item.n)
			all = append(all, p.item.n...)
		}
	}
	s.outbox.add(all)
}

// rowGroupTx is the transaction of a group of row writes, in two round
// trips as a single write's: BEGIN with the locked read of every row, then
// every write's statements with COMMIT. Each write decides from its own
// row; one that fails (its lease is stale, its job is gone) queues nothing
// and gets its own error. An error returned is the transaction's: nothing
// was written.
func (s *Store) rowGroupTx(ctx context.Context, group []*pending[*rowJob]) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	conn := c.Conn()
	defer func() {
		if conn.PgConn().TxStatus() != 'I' {
			// As writeConn: the pool must get the connection back clean.
			_, _ = conn.Exec(ctx, "ROLLBACK")
		}
	}()
	ids := make([]string, len(group))
	for i, p := range group {
		ids[i] = p.item.id
	}
	rows, err := lockRows(ctx, conn, ids)
	if err != nil {
		return err
	}
	w := &rowWrites{}
	for _, p := range group {
		r := rows[p.item.id]
		if r == nil {
			p.err = store.JobNotFound(p.item.id)
			continue
		}
		var own rowWrites
		if err := p.item.fn(ctx, conn, r, &own, &p.item.n); err != nil {
			if conn.IsClosed() || conn.PgConn().TxStatus() != 'T' {
				// What failed is a read fn made: the transaction is
				// lost with it.
				return err
			}
			p.err, p.item.n = err, nil
			continue
		}
		w.add(&own)
	}
	return w.commit(ctx, conn, "write %d jobs", len(group))
}

// lockRows begins a transaction and reads the rows of jobs ids, locked,
// in one round trip.
func lockRows(ctx context.Context, conn *pgx.Conn, ids []string) (map[string]*sqlrows.Row, error) {
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue(selectJobsLocked, ids)
	br := conn.SendBatch(ctx, read)
	_, err := br.Exec()
	var found []*sqlrows.Row
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			found, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*sqlrows.Row, error) { return sqlrows.ScanJob(row) })
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, pgErr(err, "read %d jobs", len(ids))
	}
	out := make(map[string]*sqlrows.Row, len(found))
	for _, r := range found {
		out[r.Job.JobId] = r
	}
	return out, nil
}
