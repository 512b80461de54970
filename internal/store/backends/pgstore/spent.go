package pgstore

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

var (
	spendOnce   = sqlrows.Dollar(sqlrows.SpendOnce)
	forgetSpent = sqlrows.Dollar(sqlrows.ForgetSpent)
	spentSQL    = sqlrows.Dollar(sqlrows.Spent)
)

// SpendOnce implements store.SpentStore. The conflict on the id decides,
// so of servers spending one id at once exactly one is first.
func (s *Store) SpendOnce(ctx context.Context, id string, until time.Time) (bool, error) {
	now := sqlrows.Micros(time.Now())
	var got string
	err := s.pool.QueryRow(ctx, spendOnce, id, sqlrows.Micros(until), now).Scan(&got)
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, pgErr(err, "spend %s", id)
	}
	// Forgetting old ids is housekeeping: the spend is recorded whatever
	// happens to it, and the next spend tries again.
	_, _ = s.pool.Exec(ctx, forgetSpent, now)
	return true, nil
}

// Spent implements store.SpentStore.
func (s *Store) Spent(ctx context.Context, id string) (bool, error) {
	var until int64
	err := s.pool.QueryRow(ctx, spentSQL, id).Scan(&until)
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, pgErr(err, "read spent %s", id)
	}
	return until > sqlrows.Micros(time.Now()), nil
}
