package sqlitestore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// Watching is how many keys the store's hub keeps for waiters.
func Watching(s *Store) int { return s.hub.Len() }

// ListPlan is SQLite's plan for the query List makes for f, one step a
// line.
func ListPlan(s *Store, f store.ListFilter) (string, error) {
	q, args, err := sqlrows.ListQuery(f, store.ListLimit(f.Limit)+1)
	if err != nil {
		return "", err
	}
	return plan(s, q, args)
}

// ScatterListPlan is SQLite's plan for the query ListScatters makes for f.
func ScatterListPlan(s *Store, f store.ScatterFilter) (string, error) {
	q, args := sqlrows.ListScattersQuery(f, store.ListLimit(f.Limit)+1)
	return plan(s, q, args)
}

// plan is SQLite's plan for q, one step a line.
func plan(s *Store, q string, args []any) (string, error) {
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var step string
		if err := rows.Scan(&id, &parent, &unused, &step); err != nil {
			return "", err
		}
		steps = append(steps, step)
	}
	return strings.Join(steps, "\n"), rows.Err()
}

// Plan is SQLite's plan for q, one step a line.
func Plan(s *Store, q string, args ...any) (string, error) { return plan(s, q, args) }

// SeenQuery is the query of which of n event ids a source has accepted.
func SeenQuery(n int) string { return seenQuery(n) }

// Pragma reads an integer pragma (page_count, freelist_count, auto_vacuum)
// of the store's database.
func Pragma(s *Store, name string) (int64, error) {
	var v int64
	err := s.r.QueryRow("PRAGMA " + name).Scan(&v)
	return v, err
}

// EndedAt reads a job's ended_at column; ok is false when it is NULL.
func EndedAt(s *Store, id string) (micros int64, ok bool, err error) {
	var v sql.NullInt64
	err = s.r.QueryRow(`SELECT ended_at FROM jobs WHERE job_id = ?`, id).Scan(&v)
	return v.Int64, v.Valid, err
}

// MigrateTo applies the store's migrations to db up to version, as an
// older spool left its database.
func MigrateTo(db *sql.DB, version int64) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, mustSub(migrations, "migrations"))
	if err != nil {
		return err
	}
	_, err = p.UpTo(context.Background(), version)
	return err
}

// RawJob is every byte the store keeps in a job's row, column after column
// as stored (nil: no row).
func RawJob(s *Store, id string) ([]byte, error) {
	rows, err := s.r.Query(`SELECT * FROM jobs WHERE job_id = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []byte
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for _, v := range vals {
			out = append(out, v...)
		}
	}
	return out, rows.Err()
}

// WriterCache reads the writer connection's statement cache: statements
// compiled so far and statements held.
func WriterCache(s *Store) (compiled, held int, err error) {
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		c.mu.Lock()
		defer c.mu.Unlock()
		compiled, held = c.compiled, len(c.stmts)
		return nil
	})
	return compiled, held, err
}

// SetPollInterval sets how often the store's waiting dequeues look again
// unprompted. Call it before any Dequeue.
func SetPollInterval(s *Store, d time.Duration) { s.polls.Interval = d }

// Polling is how many dequeues of queue wait for a wake-up.
func Polling(s *Store, queue string) int { return s.polls.Sleeping(queue) }

// Commits is how many transactions the store's writer has made.
func Commits(s *Store) int64 { return s.commits.Load() }

// Statements of leases and promotion, for their plans.
var (
	SelectReady = selectReady
	PromoteDue  = promoteDue
)

// AfterRows counts the rows of job_after.
func AfterRows(s *Store) (int, error) {
	var n int
	err := s.r.QueryRow(`SELECT count(*) FROM job_after`).Scan(&n)
	return n, err
}
