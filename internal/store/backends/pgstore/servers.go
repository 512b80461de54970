package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

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
	others, err := s.running(ctx)
	return len(others) > 0, err
}

// running returns the other servers seen running lately (within
// forgetAfter).
func (s *Store) running(ctx context.Context) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM servers WHERE id <> $1 AND seen_at >= $2`,
		s.watches.id, storekit.Now().Add(-forgetAfter).UnixMicro())
	if err != nil {
		return nil, pgErr(err, "look for other servers")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pgErr(err, "look for other servers")
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// noticeStopped compares the servers running now with those running at the
// last look. A server that stopped may have committed changes whose notes
// it never sent (they wait in its outbox for a moment after each commit),
// so every waiter here looks again.
func (s *Store) noticeStopped(ctx context.Context, before map[string]bool) map[string]bool {
	now, err := s.running(ctx)
	if err != nil {
		s.log.Warn("could not look for other servers", "error", err)
		return before
	}
	var gone []string
	for id := range before {
		if !now[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		s.log.Info("other servers stopped; looking again at everything waited for here", "servers", gone)
		s.wakeAll()
	}
	return now
}
