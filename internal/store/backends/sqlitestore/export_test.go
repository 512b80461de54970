package sqlitestore

import (
	"strings"

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
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var step string
		if err := rows.Scan(&id, &parent, &unused, &step); err != nil {
			return "", err
		}
		plan = append(plan, step)
	}
	return strings.Join(plan, "\n"), rows.Err()
}
