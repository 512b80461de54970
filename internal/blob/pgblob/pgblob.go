// Package pgblob keeps blobs in PostgreSQL, in the database of a server on
// PostgreSQL, so several servers share them as they share jobs.
//
// A blob is a row of spool_blobs and its bytes rows of spool_blob_chunks,
// 1 MiB each, so neither a Put nor a Get holds a blob whole. A Put writes
// its chunks under a new id and, in the same transaction, points the key
// at them: until it commits, nobody sees them, and if it fails they are
// gone.
package pgblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-run/spool/internal/blob"
)

// ChunkSize is the bytes of one chunk row.
const ChunkSize = 1 << 20

// listPage is how many blobs one List query reads.
const listPage = 1000

// schemaLock keys the advisory lock under which servers starting at once
// create the tables, one after the other.
const schemaLock = 0x73706f6f6c626c6f // "spoolblo"

const schema = `
CREATE TABLE IF NOT EXISTS spool_blobs (
	key      text COLLATE "C" PRIMARY KEY,
	id       bigint NOT NULL UNIQUE,
	size     bigint NOT NULL,
	sha256   text NOT NULL,
	modified timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS spool_blob_chunks (
	blob_id bigint NOT NULL,
	n       integer NOT NULL,
	data    bytea NOT NULL,
	PRIMARY KEY (blob_id, n)
);
CREATE SEQUENCE IF NOT EXISTS spool_blob_ids;
`

// Store is the blobs of one database.
type Store struct {
	pool *pgxpool.Pool
}

var _ blob.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a libpq
// key=value string) and creates the blob tables if they are missing.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, errors.New("the blob store's PostgreSQL URL (store.postgres.url) cannot be parsed")
	}
	// Each reader of a blob holds a connection until it is closed.
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL for blobs: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating the blob tables in PostgreSQL: %w", err)
	}
	return nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	d := blob.NewDigest()
	src := d.Reader(ctx, r)
	var modified time.Time
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, "SELECT nextval('spool_blob_ids')").Scan(&id); err != nil {
			return err
		}
		buf := make([]byte, ChunkSize)
		for n := 0; ; n++ {
			k, err := io.ReadFull(src, buf)
			if k > 0 {
				if _, err := tx.Exec(ctx, "INSERT INTO spool_blob_chunks (blob_id, n, data) VALUES ($1, $2, $3)", id, n, buf[:k]); err != nil {
					return err
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return err
			}
		}
		// Puts of one key take turns from here, so each sees the chunks
		// the one before it left, and removes them.
		if err := lockKey(ctx, tx, key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM spool_blob_chunks WHERE blob_id = (SELECT id FROM spool_blobs WHERE key = $1)", key); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO spool_blobs (key, id, size, sha256, modified) VALUES ($1, $2, $3, $4, clock_timestamp())
			ON CONFLICT (key) DO UPDATE SET id = excluded.id, size = excluded.size, sha256 = excluded.sha256, modified = excluded.modified
			RETURNING modified`, key, id, d.Size(), d.Sum()).Scan(&modified)
	})
	if err != nil {
		return blob.Info{}, fmt.Errorf("storing blob %q in PostgreSQL: %w", key, err)
	}
	return blob.Info{Key: key, Size: d.Size(), SHA256: d.Sum(), Modified: modified}, nil
}

func lockKey(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)
	return err
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func stat(ctx context.Context, q querier, key string) (blob.Info, int64, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, 0, err
	}
	info := blob.Info{Key: key}
	var id int64
	err := q.QueryRow(ctx, "SELECT id, size, sha256, modified FROM spool_blobs WHERE key = $1", key).Scan(&id, &info.Size, &info.SHA256, &info.Modified)
	if errors.Is(err, pgx.ErrNoRows) {
		return blob.Info{}, 0, blob.NotFound(key)
	}
	if err != nil {
		return blob.Info{}, 0, fmt.Errorf("reading blob %q from PostgreSQL: %w", key, err)
	}
	return info, id, nil
}

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	info, _, err := stat(ctx, s.pool, key)
	return info, err
}

// Get implements blob.Store. The blob's row and its chunks are read in one
// snapshot, so a Put or Delete of the key meanwhile does not cut the read
// short: the reader holds a transaction, and a connection, until closed.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("reading blob %q from PostgreSQL: %w", key, err)
	}
	info, id, err := stat(ctx, tx, key)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, blob.Info{}, err
	}
	start, count, err := blob.Clip(info.Size, offset, length)
	if err != nil || count == 0 {
		_ = tx.Rollback(ctx)
		if err != nil {
			return nil, blob.Info{}, err
		}
		return blob.Empty(), info, nil
	}
	first, last := start/ChunkSize, (start+count-1)/ChunkSize
	rows, err := tx.Query(ctx, "SELECT data FROM spool_blob_chunks WHERE blob_id = $1 AND n BETWEEN $2 AND $3 ORDER BY n", id, first, last)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, blob.Info{}, fmt.Errorf("reading blob %q from PostgreSQL: %w", key, err)
	}
	return &reader{ctx: ctx, key: key, tx: tx, rows: rows, skip: start - first*ChunkSize, left: count}, info, nil
}

// reader reads chunk rows as they arrive, without copying them whole.
type reader struct {
	ctx  context.Context
	key  string
	tx   pgx.Tx
	rows pgx.Rows
	cur  []byte // what is left of the current row
	skip int64  // bytes of the first row before the range
	left int64  // bytes of the range not yet read
	err  error
}

func (r *reader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.left == 0 {
			return 0, io.EOF
		}
		if !r.rows.Next() {
			r.err = r.rows.Err()
			if r.err == nil {
				r.err = fmt.Errorf("reading blob %q from PostgreSQL: %d bytes of its chunks are missing", r.key, r.left)
			}
			return 0, r.err
		}
		// The row's raw bytes (bytea comes in binary) are valid until the
		// next call of Next.
		raw := r.rows.RawValues()[0]
		raw = raw[min(int64(len(raw)), r.skip):]
		r.skip = 0
		r.cur = raw[:min(int64(len(raw)), r.left)]
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.left -= int64(n)
	return n, nil
}

func (r *reader) Close() error {
	r.rows.Close()
	// A context already ended still lets the transaction go with its
	// connection.
	return r.tx.Rollback(context.WithoutCancel(r.ctx))
}

// List implements blob.Store, a page of keys at a time.
func (s *Store) List(ctx context.Context, prefix string) iter.Seq2[blob.Info, error] {
	return func(yield func(blob.Info, error) bool) {
		if err := blob.CheckPrefix(prefix); err != nil {
			yield(blob.Info{}, err)
			return
		}
		after := ""
		for {
			page, err := s.page(ctx, prefix, after)
			if err != nil {
				yield(blob.Info{}, fmt.Errorf("listing blobs under %q in PostgreSQL: %w", prefix, err))
				return
			}
			for _, info := range page {
				if !yield(info, nil) {
					return
				}
			}
			if len(page) < listPage {
				return
			}
			after = page[len(page)-1].Key
		}
	}
}

func (s *Store) page(ctx context.Context, prefix, after string) ([]blob.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, size, sha256, modified FROM spool_blobs
		WHERE key >= $1 AND starts_with(key, $1) AND key > $2 ORDER BY key LIMIT $3`, prefix, after, listPage)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (blob.Info, error) {
		var in blob.Info
		err := row.Scan(&in.Key, &in.Size, &in.SHA256, &in.Modified)
		return in, err
	})
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockKey(ctx, tx, key); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM spool_blobs WHERE key = $1 RETURNING id)
			DELETE FROM spool_blob_chunks WHERE blob_id IN (SELECT id FROM gone)`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting blob %q from PostgreSQL: %w", key, err)
	}
	return nil
}

// DeletePrefix implements blob.Store.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := blob.CheckDeletePrefix(prefix); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH gone AS (DELETE FROM spool_blobs WHERE key >= $1 AND starts_with(key, $1) RETURNING id),
		chunks AS (DELETE FROM spool_blob_chunks WHERE blob_id IN (SELECT id FROM gone))
		SELECT count(*) FROM gone`, prefix).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("deleting blobs under %q from PostgreSQL: %w", prefix, err)
	}
	return n, nil
}
