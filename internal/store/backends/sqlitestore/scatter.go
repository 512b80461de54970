package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// CreateScatter implements store.ScatterStore. The record and its batches
// go in one transaction, so a reader finds either none of them or all.
// The batches are inserted with one prepared statement: a scatter of
// thousands of batches costs one commit (one sync of the log), not one
// each.
func (s *Store) CreateScatter(ctx context.Context, rec *store.ScatterRecord, batches [][]byte) error {
	id := rec.Scatter.GetScatterId()
	blob, err := storekit.EncodeScatter(rec)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		// The record first: an id in use is found before any batch is
		// written.
		res, err := tx.ExecContext(ctx, sqlrows.InsertScatter, id, rec.Active, blob)
		if err != nil {
			return sqliteErr(err, "create scatter %s", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ScatterExists(id)
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO scatter_batches (scatter_id, batch_index, items) VALUES (?, ?, ?)`)
		if err != nil {
			return sqliteErr(err, "create scatter %s", id)
		}
		defer ins.Close()
		for i, b := range batches {
			if _, err := ins.ExecContext(ctx, id, i, b); err != nil {
				return sqliteErr(err, "create scatter %s: batch %d", id, i)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rec.Version = 1
	return nil
}

// GetScatter implements store.ScatterStore.
func (s *Store) GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error) {
	rec, err := sqlrows.ScanScatter(s.r.QueryRowContext(ctx, `SELECT `+sqlrows.ScatterCols+` FROM scatters WHERE scatter_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ScatterNotFound(id)
	}
	if err != nil {
		return nil, sqliteErr(err, "read scatter %s", id)
	}
	return rec, nil
}

// ListScatters implements store.ScatterStore (sqlrows.ListScattersQuery
// says how a page is read).
func (s *Store) ListScatters(ctx context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error) {
	limit := store.ListLimit(f.Limit)
	q, args := sqlrows.ListScattersQuery(f, limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", sqliteErr(err, "list scatters")
	}
	defer rows.Close()
	var out []*store.ScatterRecord
	for rows.Next() {
		rec, err := sqlrows.ScanScatter(rows)
		if err != nil {
			return nil, "", sqliteErr(err, "list scatters")
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, "", sqliteErr(err, "list scatters")
	}
	out, next := sqlrows.NextScatters(out, limit)
	return out, next, nil
}

// UpdateScatter implements store.ScatterStore: a compare-and-set on the
// version, in the statement itself, so no other write can come between
// the check and the change.
func (s *Store) UpdateScatter(ctx context.Context, rec *store.ScatterRecord) error {
	id := rec.Scatter.GetScatterId()
	blob, err := storekit.EncodeScatter(rec)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, sqlrows.UpdateScatter, rec.Active, blob, id, rec.Version)
		if err != nil {
			return sqliteErr(err, "update scatter %s", id)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
		// Nothing matched: the scatter is not there, or it is at another
		// version. Which one decides what the caller does next.
		var one int
		switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM scatters WHERE scatter_id = ?`, id).Scan(&one); {
		case errors.Is(err, sql.ErrNoRows):
			return store.ScatterNotFound(id)
		case err != nil:
			return sqliteErr(err, "update scatter %s", id)
		}
		return store.ErrScatterMoved
	})
	if err != nil {
		return err
	}
	// Only once committed: a failed write leaves the caller's version as
	// stored.
	rec.Version++
	return nil
}

// ScatterBatch implements store.ScatterStore.
func (s *Store) ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error) {
	var items []byte
	err := s.r.QueryRowContext(ctx, `SELECT items FROM scatter_batches WHERE scatter_id = ? AND batch_index = ?`, id, index).Scan(&items)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ScatterNotFound(id)
	}
	if err != nil {
		return nil, sqliteErr(err, "read batch %d of scatter %s", index, id)
	}
	return items, nil
}
