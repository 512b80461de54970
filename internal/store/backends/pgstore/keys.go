package pgstore

import (
	"context"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

var insertKey = sqlrows.Dollar(sqlrows.InsertKey)

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.KeyRecord) error {
	tag, err := s.pool.Exec(ctx, insertKey, sqlrows.InsertKeyArgs(k)...)
	if err != nil {
		return pgErr(err, "create key")
	}
	if tag.RowsAffected() == 0 {
		return apierr.Errorf(spool.ErrAlreadyExists, "a key named %q exists already", k.Key.GetName())
	}
	return nil
}

// KeyByHash implements store.KeyStore. It reads the table on every call, so
// a key revoked through any server stops working on all of them at once.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	k, err := sqlrows.ScanKey(s.pool.QueryRow(ctx, `SELECT `+sqlrows.KeyCols+` FROM keys WHERE hash = $1`, hash))
	if notFound(err) {
		return store.KeyRecord{}, apierr.Errorf(spool.ErrNotFound, "no such key")
	}
	if err != nil {
		return store.KeyRecord{}, pgErr(err, "read key")
	}
	return k, nil
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]*spoolv1.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlrows.KeyCols+` FROM keys ORDER BY created_at, name`)
	if err != nil {
		return nil, pgErr(err, "list keys")
	}
	defer rows.Close()
	var out []*spoolv1.Key
	for rows.Next() {
		k, err := sqlrows.ScanKey(rows)
		if err != nil {
			return nil, pgErr(err, "list keys")
		}
		out = append(out, k.Key)
	}
	if err := rows.Err(); err != nil {
		return nil, pgErr(err, "list keys")
	}
	return out, nil
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	k, err := sqlrows.ScanKey(s.pool.QueryRow(ctx, `UPDATE keys SET revoked_at = coalesce(revoked_at, $1) WHERE name = $2 RETURNING `+sqlrows.KeyCols,
		at.UnixMicro(), name))
	if notFound(err) {
		return nil, apierr.Errorf(spool.ErrNotFound, "no key named %q", name)
	}
	if err != nil {
		return nil, pgErr(err, "revoke key %s", name)
	}
	return k.Key, nil
}

// TouchKey implements store.KeyStore.
func (s *Store) TouchKey(ctx context.Context, hash string, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE keys SET last_used_at = $1 WHERE hash = $2`, at.UnixMicro(), hash); err != nil {
		return pgErr(err, "record the use of a key")
	}
	return nil
}
