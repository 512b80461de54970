// Package pgstore is the JobStore on PostgreSQL, for several spool servers
// sharing one database. Every write is one transaction whose row locks keep
// servers apart (a job's row is locked while its lease is checked and its
// log grows; Dequeue skips rows another server holds), followed, once it
// commits, by a notification naming what changed. Each server listens on one
// connection and wakes its own waiters (log followers, long-polling
// dequeues, heartbeats waiting for a cancel), which then read the tables:
// the notification says "look again", the data is only ever read from the
// database, so a lost notification costs time, never an event.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/notify"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// MaxItemBytes is the largest event item stored. PostgreSQL takes up to
// 1 GB in a bytea; 4 MiB keeps a single read page bounded.
const MaxItemBytes = 4 << 20

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the PostgreSQL JobStore.
type Store struct {
	pool    *pgxpool.Pool
	hub     notify.Hub
	polls   storekit.Polls
	log     *slog.Logger
	watches *watches
	outbox  *outbox
	// rows and jobs gather row writes and new jobs into shared
	// transactions (groupcommit.go).
	rows *grouper[*rowJob]
	jobs *grouper[*newJob]
	// fallbacks counts the groups whose transaction failed, so that their
	// writes ran alone, for tests.
	fallbacks atomic.Int64
	// retries tells the metrics of transactions run again (health.go).
	retries storekit.Retries
	// stop ends the listener, whose end closes done.
	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

var _ store.JobStore = (*Store)(nil)

// Open connects to the database, brings its schema up to date (servers
// starting together take turns, under an advisory lock) and starts
// listening for changes made through other servers. log receives the
// listener's warnings (nil: slog.Default()).
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	pc, err := cfg.poolConfig()
	if err != nil {
		return nil, err
	}
	where := describe(pc.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool for %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: cannot reach %s (is the server running, and store.postgres.url right?): %w", where, err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: prepare the schema in %s: %w", where, err)
	}
	s := &Store{pool: pool, log: log.With("store", "postgres"), done: make(chan struct{})}
	s.outbox = newOutbox(pool, s.log)
	s.rows = newGrouper(maxGroup, s.runRows)
	s.jobs = newGrouper(maxEnqueueGroup, s.runEnqueues)
	s.watches = newWatches(s)
	fail := func(err error) (*Store, error) {
		s.rows.close()
		s.jobs.close()
		s.watches.close()
		s.outbox.close()
		pool.Close()
		return nil, err
	}
	if err := s.seen(ctx); err != nil {
		return fail(err)
	}
	// The first LISTEN is in place before Open returns, so no change made
	// after it is missed.
	conn, err := s.listenConn(ctx)
	if err != nil {
		return fail(fmt.Errorf("postgres: listen for changes on %s: %w", where, err))
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.listen(lctx, conn)
	s.watches.resync()
	return s, nil
}

// describe names a database for messages, without its password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s@%s/%s", c.User, net.JoinHostPort(c.Host, fmt.Sprint(c.Port)), c.Database)
}

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err // the directory is embedded at build time
	}
	// The session lock (pg_advisory_lock) makes servers that start at the
	// same moment apply the migrations one after the other; the later ones
	// find nothing left to do.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Close implements store.JobStore: it finishes the writes waiting for
// their group, tells the other servers this one no longer follows
// anything, sends the notes not yet sent, stops listening and closes the
// pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.rows.close()
		s.jobs.close()
		s.watches.close()
		s.outbox.close()
		s.stop()
		<-s.done
		s.pool.Close()
	})
	return nil
}

// Limits implements store.JobStore.
func (s *Store) Limits() store.Limits { return store.Limits{MaxItemBytes: MaxItemBytes} }

// Capabilities implements store.JobStore: a completion's events and result
// in one transaction, grace for leases after every server was down,
// followers and polling workers shared between servers (LISTEN/NOTIFY,
// the servers table), a ping for the
// readiness probe, and the count of transactions run again. PostgreSQL
// gives the space of deleted rows back by itself (autovacuum).
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{Finisher: s, LeaseGracer: s, WatchSharer: s, PausedLeaser: s, Pinger: s, RetryReporter: s, PollerSharer: s}
}

// Watch implements store.JobStore.
func (s *Store) Watch(ctx context.Context, jobID string) <-chan struct{} {
	return s.hub.Watch(ctx, jobKey(jobID))
}

// write runs fn in a transaction. Once it commits, its notes wake this
// server's waiters at once and go to the outbox for the other servers.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx, n *notes) error) error {
	return s.commit(func(n *notes) error {
		var fnErr error
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			fnErr = fn(tx, n)
			return fnErr
		})
		if err != nil && fnErr == nil {
			return pgErr(err, "write")
		}
		return err
	})
}

// writeOne is write for fn that makes its change in one statement, atomic
// by itself: without BEGIN and COMMIT, it costs one round trip, not three.
func (s *Store) writeOne(fn func(q querier, n *notes) error) error {
	return s.commit(func(n *notes) error { return fn(s.pool, n) })
}

// commit runs a write until it did not lose a deadlock or serialization
// race (at most five times), then wakes what it noted.
func (s *Store) commit(run func(n *notes) error) error {
	for try := 1; ; try++ {
		var n notes
		err := run(&n)
		if err == nil {
			s.wake(n)
			s.outbox.add(n)
			return nil
		}
		why := retryable(err)
		if why == "" || try == 5 {
			return err
		}
		s.retries.Retried("transaction", why)
	}
}

// retryable says why a transaction failed only because another ran at the
// same time, so running it again will do: "serialization" or "deadlock";
// "" for any other failure.
func retryable(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001":
			return "serialization"
		case "40P01":
			return "deadlock"
		}
	}
	return ""
}

// pgErr explains a failed database call: what spool was doing, then the
// driver's error. A lost or refused connection is spool.ErrUnavailable,
// so callers retry instead of failing the work.
func pgErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	if unreachable(err) {
		return apierr.Errorf(spool.ErrUnavailable, "postgres: %s: the database cannot be reached now; retry: %v", what, err)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// unreachable reports whether err says the database could not be talked to,
// as opposed to refusing what was asked.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) >= 2 && pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutting down, starting up
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || dropped(err)
}

// dropped reports whether err says the connection went away under a call:
// a database that stops or restarts closes it, and the driver reports the
// end of what it was reading (an unexpected EOF, or EOF) as it is, or that
// the connection is closed. A corrupt stored value whose decoder ran out of
// bytes wraps an unexpected EOF too and is taken for an outage: its caller
// retries and fails again, which costs less than calling every dropped
// connection an internal error.
func dropped(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, pgconn.ErrConnClosed)
}

// notFound reports whether a single-row read found nothing.
func notFound(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
