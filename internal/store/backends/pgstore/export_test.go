package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Watching is how many keys the store's hub keeps for waiters.
func Watching(s *Store) int { return s.hub.Len() }

// NoticeStopped runs one look for stopped servers, as the heartbeat does,
// given the servers running at the last look, and returns those running now.
func NoticeStopped(s *Store, before []string) []string {
	was := map[string]bool{}
	for _, id := range before {
		was[id] = true
	}
	var out []string
	for id := range s.noticeStopped(context.Background(), was) {
		out = append(out, id)
	}
	return out
}

// Migrations is how many migrations the store applies to a new database.
func Migrations() int {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		panic(err) // only a malformed pattern fails
	}
	return len(files)
}

// ScatterListPlan is PostgreSQL's plan for the query ListScatters makes for
// f (see Plan).
func ScatterListPlan(s *Store, f store.ScatterFilter) (string, error) {
	q, args := listScattersQuery(f, store.ListLimit(f.Limit)+1)
	return Plan(s, q, args...)
}

// ListPlan is PostgreSQL's plan for the query List makes for f (see Plan).
func ListPlan(s *Store, f store.ListFilter) (string, error) {
	q, args, err := sqlrows.ListQuery(f, store.ListLimit(f.Limit)+1)
	if err != nil {
		return "", err
	}
	return Plan(s, sqlrows.Dollar(q), args...)
}

// SelectSeen is the query of which of a call's event ids a source has
// accepted.
const SelectSeen = selectSeen

// Plan is PostgreSQL's plan for q, one node a line, with sequential scans
// and sorts priced out: on the tests' tiny tables the planner would rather
// read everything, and what is checked is that an index can serve the
// query at all.
func Plan(s *Store, q string, args ...any) (string, error) {
	var steps []string
	err := pgx.BeginFunc(context.Background(), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off`); err != nil {
			return err
		}
		rows, err := tx.Query(context.Background(), "EXPLAIN (COSTS OFF) "+q, args...)
		if err != nil {
			return err
		}
		steps, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return strings.Join(steps, "\n"), err
}

// EndedAt reads a job's ended_at column; ok is false when it is NULL.
func EndedAt(s *Store, id string) (micros int64, ok bool, err error) {
	var v sql.NullInt64
	err = s.pool.QueryRow(context.Background(), `SELECT ended_at FROM jobs WHERE job_id = $1`, id).Scan(&v)
	return v.Int64, v.Valid, err
}

// HOTUpdates runs q (an UPDATE of jobs) in a transaction it then rolls
// back, and returns how many of the rows it updated were heap-only (HOT):
// changed in place, with no new entry in any index.
func HOTUpdates(s *Store, q string, args ...any) (int64, error) {
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return 0, err
	}
	var n int64
	err = tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('jobs'::regclass)`).Scan(&n)
	return n, err
}

// MigrateTo applies the store's migrations to the database at url up to
// version, as an older spool left it.
func MigrateTo(url string, version int64) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub)
	if err != nil {
		return err
	}
	_, err = p.UpTo(context.Background(), version)
	return err
}

// RawJob is every byte the store keeps in a job's row, column after column
// as the database sends it (nil: no row).
func RawJob(s *Store, id string) ([]byte, error) {
	rows, err := s.pool.Query(context.Background(), `SELECT * FROM jobs WHERE job_id = $1`, pgx.QueryResultFormats{pgx.BinaryFormatCode}, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []byte
	for rows.Next() {
		for _, v := range rows.RawValues() {
			out = append(out, v...)
		}
	}
	return out, rows.Err()
}

// SetPollInterval sets how often the store's waiting dequeues look again
// unprompted. Call it before any Dequeue.
func SetPollInterval(s *Store, d time.Duration) { s.polls.Interval = d }

// PauseLockClass is the class of the queues' pause locks.
const PauseLockClass = pauseLockClass

// Polling is how many dequeues of queue wait for a wake-up.
func Polling(s *Store, queue string) int { return s.polls.Sleeping(queue) }

// GroupStats is what a store's group commits did so far: the groups of row
// writes and of enqueues taken (Started) and run to the end (Done), the
// writes waiting for one (Queued), and the groups whose transaction failed
// so that their writes ran alone (Fallbacks).
type GroupStats struct {
	RowsStarted, RowsDone, RowsQueued int64
	JobsStarted, JobsDone, JobsQueued int64
	Fallbacks                         int64
}

// Groups is s's GroupStats.
func Groups(s *Store) GroupStats {
	return GroupStats{
		RowsStarted: s.rows.started.Load(), RowsDone: s.rows.groups.Load(), RowsQueued: int64(s.rows.queued()),
		JobsStarted: s.jobs.started.Load(), JobsDone: s.jobs.groups.Load(), JobsQueued: int64(s.jobs.queued()),
		Fallbacks: s.fallbacks.Load(),
	}
}

// Hold runs q in a transaction of its own and keeps what it locks until
// release (which rolls it back) is called.
func Hold(s *Store, q string, args ...any) (release func(), err error) {
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return func() { _ = tx.Rollback(ctx) }, nil
}

// BadWrite is a write of job id's row, grouped as Complete is, whose
// statement fails when it is sent with the COMMIT.
func BadWrite(ctx context.Context, s *Store, id string) error {
	return s.writeRow(ctx, id, 0, func(_ context.Context, _ querier, _ *sqlrows.Row, w *rowWrites, _ *notes) error {
		w.Queue(`UPDATE jobs SET attempt = attempt / 0 WHERE job_id = $1`, id)
		return nil
	})
}

// Plans returns PostgreSQL's plans, without sequential scans, of the
// statements that search by state or by a partial index's column: the
// lease, the sweep of expired leases, the grace of running leases, the
// promotion of due jobs, the next time due and the claim of webhooks.
func Plans(ctx context.Context, s *Store) ([]string, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	// A generic plan is what a prepared statement comes to, and the one
	// that cannot see an argument's value.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		return nil, err
	}
	defer func() { _, _ = conn.Exec(context.Background(), "RESET ALL") }()
	var out []string
	for i, q := range []struct {
		sql, args string
	}{
		{leaseReady, "'q', 1, 10, 2"},
		{leaseUnpaused, "'q', 1, 10, 2"},
		{`SELECT job_id FROM jobs WHERE ` + running + ` AND lease_expires_at <= $1`, "1"},
		{`UPDATE jobs SET lease_expires_at = $1 WHERE ` + running + ` AND lease_expires_at < $1`, "1"},
		{promoteDue, "1, 10"},
		{nextScheduled, "1"},
		{claimNotifications, "1, 10, 2"},
	} {
		name := fmt.Sprintf("plan_%d", i)
		script := fmt.Sprintf("PREPARE %s AS %s; EXPLAIN EXECUTE %s(%s); DEALLOCATE %s", name, q.sql, name, q.args, name)
		results, err := conn.Conn().PgConn().Exec(ctx, script).ReadAll()
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, r := range results {
			for _, row := range r.Rows {
				lines = append(lines, string(row[0]))
			}
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return out, nil
}

// LeaseAnalysis runs the lease statement on queue, in a transaction it
// then rolls back, under EXPLAIN ANALYZE, and returns what it did, one
// node a line.
func LeaseAnalysis(s *Store, queue string) (string, error) {
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+leaseReady, queue, storekit.Now().UnixMicro(), 10, storekit.Now().Add(time.Minute).UnixMicro())
	if err != nil {
		return "", err
	}
	steps, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(steps, "\n"), err
}

// AfterRows counts the rows of job_after.
func AfterRows(s *Store) (int, error) {
	var n int
	err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM job_after`).Scan(&n)
	return n, err
}
