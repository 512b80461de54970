package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store"
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
		tag, err := tx.Exec(ctx, `INSERT INTO scatters (scatter_id, version, active, record) VALUES ($1, 1, $2, $3)
			ON CONFLICT (scatter_id) DO NOTHING`, id, rec.Active, blob)
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

// scatterCols are the columns scanScatter reads, in order.
const scatterCols = `version, active, record`

// scanScatter reads one row of scatterCols.
func scanScatter(row pgx.Row) (*store.ScatterRecord, error) {
	var (
		version int64
		active  bool
		blob    []byte
	)
	if err := row.Scan(&version, &active, &blob); err != nil {
		return nil, err
	}
	return storekit.DecodeScatter(blob, version, active)
}

// GetScatter implements store.ScatterStore.
func (s *Store) GetScatter(ctx context.Context, id string) (*store.ScatterRecord, error) {
	rec, err := scanScatter(s.pool.QueryRow(ctx, `SELECT `+scatterCols+` FROM scatters WHERE scatter_id = $1`, id))
	if notFound(err) {
		return nil, store.ScatterNotFound(id)
	}
	if err != nil {
		return nil, pgErr(err, "read scatter %s", id)
	}
	return rec, nil
}

// ListScatters implements store.ScatterStore. Scatter ids are time
// ordered, so newest first is descending id, and a page starts below the
// last id of the one before: each page is a range of an index (see
// listScattersQuery), whatever the number of scatters before it.
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
		rec, err := scanScatter(rows)
		if err != nil {
			return nil, "", pgErr(err, "list scatters")
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, "", pgErr(err, "list scatters")
	}
	// One more than a page was asked for: if it came, there is a next
	// page, which starts after this page's last record.
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].Scatter.GetScatterId()
	}
	return out, next, nil
}

// listScattersQuery is ListScatters' query for f, reading n rows. The
// conditions are written out only when they apply: one condition that
// also held with no cursor ("the cursor is empty or scatter_id is below
// it") would keep the planner from bounding the index range. With
// f.Active, the "active" condition implies the predicate of the partial
// index scatters_active, so it can be read.
func listScattersQuery(f store.ScatterFilter, n int) (string, []any) {
	q := `SELECT ` + scatterCols + ` FROM scatters WHERE true`
	var args []any
	if f.Active {
		q += ` AND active`
	}
	if f.Cursor != "" {
		args = append(args, f.Cursor)
		q += fmt.Sprintf(` AND scatter_id < $%d`, len(args))
	}
	args = append(args, n)
	return q + fmt.Sprintf(` ORDER BY scatter_id DESC LIMIT $%d`, len(args)), args
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
		tag, err := q.Exec(ctx, `UPDATE scatters SET version = version + 1, active = $1, record = $2
			WHERE scatter_id = $3 AND version = $4`, rec.Active, blob, id, rec.Version)
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
