package pgstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store/storekit"
)

// SharePollers implements store.PollerSharer on this server's row of the
// servers table (made here if the server was not seen yet).
func (s *Store) SharePollers(ctx context.Context, polls map[string][]string) error {
	b, err := json.Marshal(polls)
	if err != nil {
		return err
	}
	now := storekit.Now().UnixMicro()
	_, err = s.pool.Exec(ctx, `INSERT INTO servers (id, started_at, seen_at, pollers, pollers_at) VALUES ($1, $2, $2, $3, $2)
		ON CONFLICT (id) DO UPDATE SET pollers = excluded.pollers, pollers_at = excluded.pollers_at`, s.watches.id, now, b)
	if err != nil {
		return pgErr(err, "record the workers polling this server")
	}
	return nil
}

// SharedPollers implements store.PollerSharer.
func (s *Store) SharedPollers(ctx context.Context, since time.Time) (map[string][]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT pollers FROM servers WHERE pollers_at >= $1`, since.UnixMicro())
	if err != nil {
		return nil, pgErr(err, "read the workers polling the servers")
	}
	recs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, pgErr(err, "read the workers polling the servers")
	}
	out := map[string][]string{}
	for _, b := range recs {
		var polls map[string][]string
		if err := json.Unmarshal(b, &polls); err != nil {
			// One server's record is unreadable: the others still count.
			s.log.Warn("a server's record of its workers is unreadable", "error", err)
			continue
		}
		for q, ws := range polls {
			out[q] = append(out[q], ws...)
		}
	}
	return out, nil
}
