package pgstore

import (
	"context"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
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
