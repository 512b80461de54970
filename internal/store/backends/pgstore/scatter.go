package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// CreateScatter implements store.ScatterStore. The record and its batches
// go in one transaction, so a reader finds either none of them or all.
// The batches are sent with COPY: a scatter of thousands of batches is
// one stream, not a round trip each. Nobody waits on a scatter through the
// hub (its drivers read it again), so scatter writes note nothing.
func (s *Store) CreateScatter(ctx context.Context, rec *store.ScatterRecord, batches [][]byte) error {
	id := rec.Scatter.GetScatterId()
	blob, err := storekit.EncodeScatter(rec)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(tx pgx.Tx, _ *notes) error {
		// The record first: an id in use is found before any batch is
		// sent. A concurrent creation of the same id waits here for the
		// first to commit, then finds it.
		tag, err := tx.Exec(ctx, insertScatter, id, rec.Active, blob)
		if err != nil {
			return pgErr(err, "create scatter %s", id)
		}
		if tag.RowsAffected() == 0 {
			return store.ScatterExists(id)
		}
		if len(batches) == 0 {
			return nil
		}
		rows := pgx.CopyFromSlice(len(batches), func(i int) ([]any, error) {
			return []any{id, int32(i), batches[i]}, nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"scatter_batches"}, []string{"scatter_id", "batch_index", "items"}, rows); err != nil {
			return pgErr(err, "create scatter %s: write its batches", id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rec.Version = 1
	return nil
}

// The shared statements, in PostgreSQL's placeholders.
var (
	insertScatter = sqlrows.Dollar(sqlrows.InsertScatter)
	updateScatter = sqlrows.Dollar(sqlrows.UpdateScatter)
)

// GetScatter implements store.ScatterStore.
func (s *Store) GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error) {
	rec, err := sqlrows.ScanScatter(s.pool.QueryRow(ctx, `SELECT `+sqlrows.ScatterCols+` FROM scatters WHERE scatter_id = $1`, id))
	if notFound(err) {
		return nil, store.ScatterNotFound(id)
	}
	if err != nil {
		return nil, pgErr(err, "read scatter %s", id)
	}
	return rec, nil
}

// ListScatters implements store.ScatterStore (sqlrows.ListScattersQuery
// says how a page is read).
func (s *Store) ListScatters(ctx context.Context, f store.ScatterFilter) ([]*store.ScatterRecord, string, error) {
	limit := store.ListLimit(f.Limit)
	q, args := listScattersQuery(f, limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", pgErr(err, "list scatters")
	}
	defer rows.Close()
	var out []*store.ScatterRecord
	for rows.Next() {
		rec, err := sqlrows.ScanScatter(rows)
		if err != nil {
			return nil, "", pgErr(err, "list scatters")
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, "", pgErr(err, "list scatters")
	}
	out, next := sqlrows.NextScatters(out, limit)
	return out, next, nil
}

// listScattersQuery is sqlrows.ListScattersQuery in PostgreSQL's
// placeholders.
func listScattersQuery(f store.ScatterFilter, n int) (string, []any) {
	q, args := sqlrows.ListScattersQuery(f, n)
	return sqlrows.Dollar(q), args
}

// UpdateScatter implements store.ScatterStore: a compare-and-set on the
// version, in the statement itself. Of two servers updating from the same
// version, the second waits for the first's row lock, then finds the
// version moved on and changes nothing.
func (s *Store) UpdateScatter(ctx context.Context, rec *store.ScatterRecord) error {
	id := rec.Scatter.GetScatterId()
	blob, err := storekit.EncodeScatter(rec)
	if err != nil {
		return err
	}
	err = s.writeOne(func(q querier, _ *notes) error {
		tag, err := q.Exec(ctx, updateScatter, rec.Active, blob, id, rec.Version)
		if err != nil {
			return pgErr(err, "update scatter %s", id)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		// Nothing matched: the scatter is not there, or it is at another
		// version. Which one decides what the caller does next. Scatters
		// are never deleted, so this separate read cannot be misled.
		var exists bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM scatters WHERE scatter_id = $1)`, id).Scan(&exists); err != nil {
			return pgErr(err, "update scatter %s", id)
		}
		if !exists {
			return store.ScatterNotFound(id)
		}
		return store.ErrScatterMoved
	})
	if err != nil {
		return err
	}
	rec.Version++
	return nil
}

// ScatterBatch implements store.ScatterStore.
func (s *Store) ScatterBatch(ctx context.Context, id string, index int32) ([]byte, error) {
	var items []byte
	err := s.pool.QueryRow(ctx, `SELECT items FROM scatter_batches WHERE scatter_id = $1 AND batch_index = $2`, id, index).Scan(&items)
	if notFound(err) {
		return nil, store.ScatterNotFound(id)
	}
	if err != nil {
		return nil, pgErr(err, "read batch %d of scatter %s", index, id)
	}
	return items, nil
}
