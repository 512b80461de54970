package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// SpendOnce implements store.SpentStore.
func (s *Store) SpendOnce(ctx context.Context, id string, until time.Time) (first bool, err error) {
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		now := sqlrows.Micros(time.Now())
		var got string
		switch err := tx.QueryRowContext(ctx, sqlrows.SpendOnce, id, sqlrows.Micros(until), now).Scan(&got); {
		case errors.Is(err, sql.ErrNoRows):
			first = false
		case err != nil:
			return sqliteErr(err, "spend %s", id)
		default:
			first = true
		}
		if _, err := tx.ExecContext(ctx, sqlrows.ForgetSpent, now); err != nil {
			return sqliteErr(err, "forget spent ids")
		}
		return nil
	})
	return first, err
}

// Spent implements store.SpentStore.
func (s *Store) Spent(ctx context.Context, id string) (bool, error) {
	var until int64
	err := s.r.QueryRowContext(ctx, sqlrows.Spent, id).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, sqliteErr(err, "read spent %s", id)
	}
	return until > sqlrows.Micros(time.Now()), nil
}
