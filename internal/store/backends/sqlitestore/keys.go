package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.KeyRecord) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, sqlrows.InsertKey, sqlrows.InsertKeyArgs(k)...)
		if err != nil {
			return sqliteErr(err, "create key")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apierr.Errorf(spool.ErrAlreadyExists, "a key named %q exists already", k.Key.GetName())
		}
		return nil
	})
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	k, err := sqlrows.ScanKey(s.r.QueryRowContext(ctx, `SELECT `+sqlrows.KeyCols+` FROM keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.KeyRecord{}, apierr.Errorf(spool.ErrNotFound, "no such key")
	}
	if err != nil {
		return store.KeyRecord{}, sqliteErr(err, "read key")
	}
	return k, nil
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]*spoolv1.Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrows.KeyCols+` FROM keys ORDER BY created_at, name`)
	if err != nil {
		return nil, sqliteErr(err, "list keys")
	}
	defer rows.Close()
	var out []*spoolv1.Key
	for rows.Next() {
		k, err := sqlrows.ScanKey(rows)
		if err != nil {
			return nil, sqliteErr(err, "list keys")
		}
		out = append(out, k.Key)
	}
	return out, rows.Err()
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	var out *spoolv1.Key
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		k, err := sqlrows.ScanKey(tx.QueryRowContext(ctx, `UPDATE keys SET revoked_at = coalesce(revoked_at, ?) WHERE name = ? RETURNING `+sqlrows.KeyCols,
			at.UnixMicro(), name))
		if errors.Is(err, sql.ErrNoRows) {
			return apierr.Errorf(spool.ErrNotFound, "no key named %q", name)
		}
		if err != nil {
			return sqliteErr(err, "revoke key %s", name)
		}
		out = k.Key
		return nil
	})
	return out, err
}

// TouchKey implements store.KeyStore.
func (s *Store) TouchKey(ctx context.Context, hash string, at time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ *notes) error {
		if _, err := tx.ExecContext(ctx, `UPDATE keys SET last_used_at = ? WHERE hash = ?`, at.UnixMicro(), hash); err != nil {
			return sqliteErr(err, "record the use of a key")
		}
		return nil
	})
}
