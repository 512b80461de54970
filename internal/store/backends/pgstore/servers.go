package pgstore

import (
	"context"
	"time"

	"github.com/spool-run/spool/internal/store/storekit"
)

// seen records that this server is running (every announceEvery, from the
// watches loop), and forgets servers gone for a day.
func (s *Store) seen(ctx context.Context) error {
	now := storekit.Now().UnixMicro()
	_, err := s.pool.Exec(ctx, `INSERT INTO servers (id, started_at, seen_at) VALUES ($1, $2, $2)
		ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, s.watches.id, now)
	if err != nil {
		return pgErr(err, "record this server")
	}
	_, err = s.pool.Exec(ctx, `DELETE FROM servers WHERE seen_at < $1`, now-int64(24*time.Hour/time.Microsecond))
	if err != nil {
		return pgErr(err, "forget old servers")
	}
	return nil
}

// othersRunning reports whether another server was seen running lately:
// then its reaper kept the leases' time, and nothing needs grace.
func (s *Store) othersRunning(ctx context.Context) (bool, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM servers WHERE id <> $1 AND seen_at >= $2`,
		s.watches.id, storekit.Now().Add(-forgetAfter).UnixMicro()).Scan(&n)
	if err != nil {
		return false, pgErr(err, "look for other servers")
	}
	return n > 0, nil
}
