package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store/backends/pgstore"
	"github.com/spool-run/spool/internal/store/backends/pgstore/pgtest"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// QueueStats and EndedBefore can be served by indexes, so neither reads
// every job: the ended jobs through jobs_ended (its predicate proved from
// the query's terms), from the time asked for; EndedBefore's in its order,
// at most the limit of each state.
func TestQueueAndRetentionReadIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewDatabase(t))
	plan, err := pgstore.Plan(s, sqlrows.Dollar(sqlrows.QueueCounts), int64(0))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Index Scan on jobs_ended") {
		t.Errorf("QueueCounts:\n%s\nwant jobs_ended among its indexes, no scan of the table", plan)
	}
	q, args := sqlrows.EndedBefore(time.Now(), 10)
	plan, err = pgstore.Plan(s, sqlrows.Dollar(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "Seq Scan") || strings.Count(plan, "Index Scan using jobs_ended on jobs") != 3 ||
		strings.Count(plan, "Limit") != 4 {
		t.Errorf("EndedBefore:\n%s\nwant 3 ordered scans of jobs_ended, each limited", plan)
	}
}
