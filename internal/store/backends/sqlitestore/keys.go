package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

const keyCols = `name, hash, role, queues, created_at, last_used_at, revoked_at`

func scanKey(sc scanner) (store.KeyRecord, error) {
	var (
		k                 spoolv1.Key
		hash, queues      string
		role              int32
		created           int64
		lastUsed, revoked sql.NullInt64
	)
	if err := sc.Scan(&k.Name, &hash, &role, &queues, &created, &lastUsed, &revoked); err != nil {
		return store.KeyRecord{}, err
	}
	k.Role = spoolv1.KeyRole(role)
	if err := json.Unmarshal([]byte(queues), &k.Queues); err != nil {
		return store.KeyRecord{}, fmt.Errorf("key %s: corrupt queues: %w", k.Name, err)
	}
	k.CreatedAt = timestamppb.New(time.UnixMicro(created))
	if lastUsed.Valid {
		k.LastUsedAt = timestamppb.New(time.UnixMicro(lastUsed.Int64))
	}
	if revoked.Valid {
		k.RevokedAt = timestamppb.New(time.UnixMicro(revoked.Int64))
	}
	return store.KeyRecord{Key: &k, Hash: hash}, nil
}

// CreateKey implements store.KeyStore.
func (s *Store) CreateKey(ctx context.Context, k store.KeyRecord) error {
	queues, _ := json.Marshal(append([]string{}, k.Key.GetQueues()...))
	return s.write(ctx, func(tx *sql.Tx, _ *notes) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO keys (name, hash, role, queues, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			k.Key.GetName(), k.Hash, int32(k.Key.GetRole()), string(queues), k.Key.GetCreatedAt().AsTime().UnixMicro())
		if err != nil {
			return fmt.Errorf("sqlite: create key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apierr.Errorf(spool.ErrAlreadyExists, "a key named %q exists already", k.Key.GetName())
		}
		return nil
	})
}

// KeyByHash implements store.KeyStore.
func (s *Store) KeyByHash(ctx context.Context, hash string) (store.KeyRecord, error) {
	k, err := scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyCols+` FROM keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.KeyRecord{}, apierr.Errorf(spool.ErrNotFound, "no such key")
	}
	if err != nil {
		return store.KeyRecord{}, fmt.Errorf("sqlite: read key: %w", err)
	}
	return k, nil
}

// ListKeys implements store.KeyStore.
func (s *Store) ListKeys(ctx context.Context) ([]*spoolv1.Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyCols+` FROM keys ORDER BY created_at, name`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var out []*spoolv1.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list keys: %w", err)
		}
		out = append(out, k.Key)
	}
	return out, rows.Err()
}

// RevokeKey implements store.KeyStore.
func (s *Store) RevokeKey(ctx context.Context, name string, at time.Time) (*spoolv1.Key, error) {
	var out *spoolv1.Key
	err := s.write(ctx, func(tx *sql.Tx, _ *notes) error {
		k, err := scanKey(tx.QueryRowContext(ctx, `UPDATE keys SET revoked_at = coalesce(revoked_at, ?) WHERE name = ? RETURNING `+keyCols,
			at.UnixMicro(), name))
		if errors.Is(err, sql.ErrNoRows) {
			return apierr.Errorf(spool.ErrNotFound, "no key named %q", name)
		}
		if err != nil {
			return fmt.Errorf("sqlite: revoke key %s: %w", name, err)
		}
		out = k.Key
		return nil
	})
	return out, err
}

// TouchKey implements store.KeyStore.
func (s *Store) TouchKey(ctx context.Context, hash string, at time.Time) error {
	return s.write(ctx, func(tx *sql.Tx, _ *notes) error {
		_, err := tx.ExecContext(ctx, `UPDATE keys SET last_used_at = ? WHERE hash = ?`, at.UnixMicro(), hash)
		return err
	})
}
