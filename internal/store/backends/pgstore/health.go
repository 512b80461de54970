package pgstore

import (
	"context"

	"github.com/spool-run/spool/internal/store"
)

// Ping implements store.Pinger: one round trip on a pooled connection
// (an empty statement), which also says whether a new connection can be
// made when none is idle.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return pgErr(err, "ping the database")
	}
	return nil
}

// ReportRetries implements store.RetryReporter: transactions that lost a
// serialization race or a deadlock and were run again (commit), as
// operation "transaction".
func (s *Store) ReportRetries(o store.RetryObserver) { s.retries.ReportRetries(o) }
