// Package sqlitestore is the embedded JobStore: one SQLite file (pure-Go
// driver, WAL journal) that `spool server` uses by default. All writes go
// through one connection, so they never contend for SQLite's write lock;
// reads use a pool and run beside them (WAL lets readers and the writer
// proceed together).
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/datadir"
	"github.com/spool-run/spool/internal/notify"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// MaxItemBytes is the largest event item stored. SQLite's own limit is far
// higher (1 GB); 4 MiB keeps a single read page bounded.
const MaxItemBytes = 4 << 20

//go:embed migrations/*.sql
var migrations embed.FS

// Options tune the store.
type Options struct {
	// Synchronous is SQLite's synchronous pragma: "full" (the default: a
	// write is on disk before it is acknowledged) or "normal" (faster; the
	// last writes may be lost on power failure, never on a crash).
	Synchronous string
	// Log, when set, hears of the long work Open may do: the one-time
	// conversion of a database made before ReclaimSpace (see
	// incrementalVacuum).
	Log *slog.Logger
	// BusyTimeout is how long a call waits for a lock that another
	// connection to the file holds (another program writing it, a backup)
	// before it fails with spool.ErrUnavailable (0: DefaultBusyTimeout).
	BusyTimeout time.Duration
}

// DefaultBusyTimeout is how long a call waits for another connection's
// lock unless Options say otherwise: longer than any write of spool's
// own takes, short enough that a caller hears of a file held elsewhere.
const DefaultBusyTimeout = 10 * time.Second

// Store is the SQLite JobStore.
type Store struct {
	path  string
	w     *sql.DB // the one writer connection
	r     *sql.DB // readers
	hub   notify.Hub
	polls storekit.Polls
	// swept is when leases were last swept (store.Sweep).
	swept storekit.SweepClock
	// queues are the paused queues and the queues' limits (queues.go).
	queues queueSettings

	// The writer (groupcommit.go): writes go to it, and it makes them a
	// group at a time until quit is closed.
	writes     chan *pendingWrite
	quit       chan struct{}
	closeOnce  sync.Once
	writerDone chan struct{}
	commits    atomic.Int64 // transactions the writer made, for tests
}

var _ store.JobStore = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its
// schema up to date, and its vacuum mode (see incrementalVacuum).
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	sync := opt.Synchronous
	switch sync {
	case "":
		sync = "full"
	case "full", "normal":
	default:
		return nil, fmt.Errorf("sqlite synchronous must be full or normal, got %q", sync)
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create directory for the database: %w", err)
	}
	if err := ownFiles(path, opt.Log); err != nil {
		return nil, err
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+sync+")")
		// A write's savepoint keeps the pages it changes in a statement
		// journal; in memory, that costs no system calls.
		q.Add("_pragma", "temp_store(MEMORY)")
		for _, p := range extra {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate")
		return "file:" + path + "?" + q.Encode()
	}
	if err := prepare(ctx, dsn(), path, opt.Log); err != nil {
		return nil, fmt.Errorf("prepare database %s: %w", path, err)
	}
	w, err := sql.Open(driverName, dsn())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// Each of the readers keeps a page cache of its own (2 MB by default):
	// what they read again and again (a job's row, a key) is small, and a
	// page the cache misses is in the system's. 512 KB each keeps the
	// server's memory down without a measurable cost.
	r, err := sql.Open(driverName, dsn("query_only(1)", "cache_size(-512)"))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	s := &Store{path: path, w: w, r: r, writes: make(chan *pendingWrite), quit: make(chan struct{}), writerDone: make(chan struct{})}
	if err := s.queues.load(ctx, r); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	go s.writer()
	return s, nil
}

// prepare brings the database's schema and vacuum mode up to date, on a
// connection of its own, closed after: the writer's connection keeps every
// statement it runs compiled (stmtcache.go), and the migrations' statements,
// run once, would hold a good part of its cache for the server's life.
func prepare(ctx context.Context, dsn, path string, log *slog.Logger) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := incrementalVacuum(ctx, db, path, log); err != nil {
		return err
	}
	return migrate(ctx, db)
}

// ownFiles makes the database and its journals readable by their owner
// only: they hold every job's parameters and output. SQLite creates its
// journals (-wal, -shm) with the mode of the database file, so a database
// that is created here first, with that mode, never has a journal anyone
// else may read, whatever the process's umask; files an older spool or
// another program made are narrowed, and the change logged.
func ownFiles(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, datadir.FileMode)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	f.Close()
	paths := []string{path}
	for _, j := range datadir.Journals {
		paths = append(paths, path+j)
	}
	narrowed, err := datadir.Restrict(paths...)
	for p, was := range narrowed {
		if log != nil {
			log.Info("a database file was readable by others; it is now its owner's only", "file", p, "was", fmt.Sprintf("%#o", was), "now", fmt.Sprintf("%#o", datadir.FileMode))
		}
	}
	if err != nil {
		return fmt.Errorf("make the database %s its owner's only: %w", path, err)
	}
	return nil
}

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// incrementalVacuum puts the database in auto_vacuum=INCREMENTAL mode, in
// which it keeps what ReclaimSpace needs to give free pages back a few at
// a time; in the default mode (NONE) deleted rows leave free pages that
// only a VACUUM of the whole file returns. The pragma alone sets the mode
// only on a file with no page written yet, and the journal_mode(WAL) of
// every connection has already written the first page of a new one; on
// any other file it says what the next VACUUM is to apply. So the file is
// rewritten by VACUUM: at no cost while it holds no table, and once for a
// database made by an older spool, which takes about as long as copying
// the file and needs as much free disk again, so it is logged.
func incrementalVacuum(ctx context.Context, db *sql.DB, path string, log *slog.Logger) error {
	mode := func() (int, error) {
		var m int
		err := db.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&m)
		return m, err
	}
	m, err := mode()
	if err != nil || m == autoVacuumIncremental {
		return err
	}
	if _, err := db.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	if m, err = mode(); err != nil || m == autoVacuumIncremental {
		return err
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
		return err
	}
	start := time.Now()
	if log != nil && tables > 0 {
		log.Info("converting the SQLite database to incremental vacuum, once: it is rewritten whole, which may take a while", "path", path)
	}
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("convert to auto_vacuum=INCREMENTAL (VACUUM; it needs as much free disk as the database takes): %w", err)
	}
	if m, err = mode(); err != nil {
		return err
	}
	if m != autoVacuumIncremental {
		return fmt.Errorf("auto_vacuum is %d after VACUUM, want %d (INCREMENTAL)", m, autoVacuumIncremental)
	}
	if log != nil && tables > 0 {
		log.Info("converted the SQLite database to incremental vacuum", "path", path, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, mustSub(migrations, "migrations"))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Close implements store.JobStore.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.quit) })
	<-s.writerDone
	return errors.Join(s.r.Close(), s.w.Close())
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Limits implements store.JobStore.
func (s *Store) Limits() store.Limits { return store.Limits{MaxItemBytes: MaxItemBytes} }

// Capabilities implements store.JobStore: a completion's events and result
// in one write, grace for leases after the server was down, and the space
// of deleted jobs given back to the file system, and a ping for the
// readiness probe. One server uses the file, so there are no followers of
// other servers to share.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{Finisher: s, LeaseGracer: s, SpaceReclaimer: s, Pinger: s}
}

// Watch implements store.JobStore.
func (s *Store) Watch(ctx context.Context, jobID string) <-chan struct{} {
	return s.hub.Watch(ctx, jobKey(jobID))
}

func jobKey(id string) string { return "job:" + id }

// notes collects the hub keys to wake once a transaction has committed:
// waking watchers before the commit would have them read the old state.
type notes []string

func (n *notes) job(id string)  { *n = append(*n, jobKey(id)) }
func (n *notes) queue(q string) { *n = append(*n, storekit.QueueKey(q)) }

// created notes a new job: its queue's, when it can be leased now (a
// SCHEDULED one waits for its promotion, which wakes the queue then).
func (n *notes) created(j *spoolv1.Job) {
	if j.GetState() == spoolv1.JobState_JOB_STATE_QUEUED {
		n.queue(j.GetQueue())
	}
}

// settled notes a job whose lease ended: its watchers, and its queue's when
// it is queued again.
func (n *notes) settled(j *spoolv1.Job, o storekit.Outcome) {
	n.job(j.GetJobId())
	if o.State == spoolv1.JobState_JOB_STATE_QUEUED {
		n.queue(j.GetQueue())
	}
}

func mustSub(fsys embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
