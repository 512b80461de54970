// Package backends holds the JobStore implementations, one package each
// (memstore for tests, sqlitestore the embedded default, pgstore for several
// servers on PostgreSQL, awsstore on SQS and DynamoDB), and Open, which opens the one a configuration names and checks
// that the configured batching fits what that store can hold.
package backends

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
)

// Open opens the configured store; log receives the store's own warnings
// (nil: slog.Default()). Close the returned store when done; for
// SQLite that also releases the data directory's lock.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (store.JobStore, error) {
	var (
		st  store.JobStore
		err error
	)
	switch cfg.Store.Type {
	case "memory":
		st = memstore.New()
	case "sqlite":
		st, err = openSQLite(ctx, cfg, log)
	case "postgres":
		st, err = pgstore.Open(ctx, cfg.Store.Postgres, log)
	case "aws":
		aws := cfg.Store.AWS
		// Finished jobs expire by DynamoDB's TTL too, so a table no
		// server sweeps any more still sheds them.
		aws.JobTTL = cfg.Jobs.Retention()
		st, err = awsstore.Open(ctx, aws)
	default:
		return nil, fmt.Errorf("store.type %q is not supported", cfg.Store.Type)
	}
	if err != nil {
		return nil, err
	}
	if err := CheckLimits(cfg, st.Limits(), cfg.Store.Type); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Per-line and per-batch bytes an encoded batch may add to its output in the
// worst case (incompressible output): field tags and lengths, the stream,
// the partial flag and a timestamp for each line.
const (
	perLineOverhead  = 24
	perBatchOverhead = 256
)

// CheckLimits refuses a batching config whose largest batch could not be
// stored as one item: the store's item limit decides what a batch may be,
// and a config that cannot fit is refused at start, not at the first big
// batch.
func CheckLimits(cfg *config.Config, lim store.Limits, name string) error {
	b := cfg.Execution.Batching
	worst := b.MaxBatchBytes + int64(b.MaxBatchSize)*perLineOverhead + perBatchOverhead
	if lim.MaxItemBytes > 0 && worst > int64(lim.MaxItemBytes) {
		fit := int64(lim.MaxItemBytes) - int64(b.MaxBatchSize)*perLineOverhead - perBatchOverhead
		return fmt.Errorf("execution.batching.max_batch_bytes %d cannot fit the %s store: a full batch of %d lines may take %d bytes, "+
			"and the store holds at most %d per item; set max_batch_bytes to %d or less", b.MaxBatchBytes, name, b.MaxBatchSize, worst, lim.MaxItemBytes, max(fit, 0))
	}
	return nil
}

// sqliteStore closes the lock with the store.
type sqliteStore struct {
	*sqlitestore.Store
	lock *os.File
}

func (s sqliteStore) Close() error {
	return errors.Join(s.Store.Close(), s.lock.Close())
}

func openSQLite(ctx context.Context, cfg *config.Config, log *slog.Logger) (store.JobStore, error) {
	path := cfg.Store.SQLite.Path
	if path == "" {
		path = filepath.Join(cfg.Server.DataDir, datadir.Database)
	}
	lock, err := lockDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Synchronous: cfg.Store.SQLite.Synchronous, Log: log})
	if err != nil {
		lock.Close()
		return nil, err
	}
	return sqliteStore{Store: st, lock: lock}, nil
}

// lockWait is how long lockDir waits for a lock held elsewhere before it
// calls the directory in use. A server that has just stopped can still be
// named by a process this one is starting: a child between fork and exec
// holds a copy of every open file, the lock's too, for a moment.
const lockWait = time.Second

// lockDir takes an exclusive lock on dir/spool.lock, so two servers never
// share one SQLite database (each would think its leases are the truth).
func lockDir(dir string) (*os.File, error) {
	return lockDirWithin(dir, lockWait)
}

func lockDirWithin(dir string, wait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, "spool.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	for errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another spool server; stop it or use another --data-dir", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
