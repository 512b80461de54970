package sqlitestore_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
	"github.com/spool-run/spool/internal/store/backends/sqlrows/sqlrowstest"
)

// The lease, the promotion of due jobs, the next time due and the claim
// of webhooks each read their partial index, in order where they stop at
// a limit (no sort): their terms are the indexes' predicates.
func TestTimingReadsIndexes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	for _, tc := range []struct {
		what string
		q    string
		args []any
		want string
	}{
		{"lease", sqlitestore.SelectReady, []any{"q", 1, 10}, "SEARCH jobs USING INDEX jobs_queued (queue=?)"},
		{"promotion", sqlitestore.PromoteDue, []any{1}, "SEARCH jobs USING INDEX jobs_scheduled (state=? AND run_after<?)"},
		{"next time", sqlrows.NextScheduled, []any{1}, "SEARCH jobs USING INDEX jobs_scheduled (state=? AND run_after>?)"},
		{"claim", sqlrows.DueNotifications, []any{1, 10}, "SEARCH jobs USING INDEX jobs_notify_due (notify_due>? AND notify_due<?)"},
	} {
		plan, err := sqlitestore.Plan(s, tc.q, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, tc.want) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s:\n%s\nwant %s, and no sort", tc.what, plan, tc.want)
		}
	}
}

// A promotion wakes the polls of the job's queue at once.
func TestPromotionWakesPolls(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	sqlrowstest.CheckPromotionWakes(t, s, s, func(d time.Duration) { sqlitestore.SetPollInterval(s, d) },
		func(q string) int { return sqlitestore.Polling(s, q) })
}
