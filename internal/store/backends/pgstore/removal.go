package pgstore

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// deleteJob is sqlrows.DeleteJob in PostgreSQL's placeholders.
var deleteJob = func() []string {
	out := make([]string, len(sqlrows.DeleteJob))
	for i, q := range sqlrows.DeleteJob {
		out[i] = sqlrows.Dollar(q)
	}
	return out
}()

// DeleteJob implements store.RemovalStore: with the job's row locked, so
// no lease, append or ingest changes it meanwhile, its state is checked;
// its log, accepted events and row are deleted with the COMMIT. Its
// followers, on every server, are woken to find it gone. It runs in a
// transaction of its own, not in a group: a long log takes a while to
// delete, and the writes grouped with it would all wait for that.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	return s.writeRowAlone(ctx, id, func(_ context.Context, _ querier, r *sqlrows.Row, w *rowWrites, n *notes) error {
		if err := sqlrows.Deletable(r.Job); err != nil {
			return err
		}
		for _, q := range deleteJob {
			w.Queue(q, id)
		}
		n.job(id)
		return nil
	})
}

// EndedBefore implements store.RemovalStore with sqlrows.EndedBefore.
func (s *Store) EndedBefore(ctx context.Context, t time.Time, limit int) ([]string, error) {
	q, args := sqlrows.EndedBefore(t, limit)
	rows, err := s.pool.Query(ctx, sqlrows.Dollar(q), args...)
	if err != nil {
		return nil, pgErr(err, "find jobs that ended before %v", t)
	}
	defer rows.Close()
	ids, err := sqlrows.CollectEndedBefore(rows)
	if err != nil {
		return nil, pgErr(err, "find jobs that ended before %v", t)
	}
	return ids, nil
}
