package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// QueueStats implements store.QueueStore with one grouped read of the jobs
// and one of the paused queues (sqlrows.QueueCounts, PausedQueues), from
// the reader pool.
func (s *Store) QueueStats(ctx context.Context, since time.Time) ([]store.QueueStats, error) {
	var t sqlrows.QueueTally
	if err := s.query(ctx, "count the jobs of each queue", t.AddCounts, sqlrows.QueueCounts, sqlrows.Micros(since)); err != nil {
		return nil, err
	}
	if err := s.query(ctx, "read the paused queues", t.AddPaused, sqlrows.PausedQueues); err != nil {
		return nil, err
	}
	return t.Stats(), nil
}

// query runs q on the reader pool and hands its rows to collect.
func (s *Store) query(ctx context.Context, what string, collect func(sqlrows.Rows) error, q string, args ...any) error {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return sqliteErr(err, "%s", what)
	}
	defer rows.Close()
	if err := collect(rows); err != nil {
		return sqliteErr(err, "%s", what)
	}
	return nil
}

// SetQueuePaused implements store.QueueStore.
func (s *Store) SetQueuePaused(ctx context.Context, name string, paused bool, at time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		q, args := sqlrows.SetQueuePaused(name, paused, at)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return sqliteErr(err, "pause or resume queue %q", name)
		}
		return nil
	})
}

// QueuePaused implements store.QueueStore.
func (s *Store) QueuePaused(ctx context.Context, name string) (bool, error) {
	var paused bool
	if err := s.r.QueryRowContext(ctx, sqlrows.SelectQueuePaused, name).Scan(&paused); err != nil {
		return false, sqliteErr(err, "is queue %q paused", name)
	}
	return paused, nil
}
