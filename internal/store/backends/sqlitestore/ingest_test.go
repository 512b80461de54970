package sqlitestore_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

// The reads of an ingest and of Accepted are searches of an index: the
// source's open job (not its ended ones), the ids seen before (the primary
// key of accepted, which answers alone), a page of a job's accepted events
// in line order (no sort).
func TestIngestReadsIndexes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	for _, tc := range []struct {
		q    string
		args []any
		want string
	}{
		{sqlrows.SelectOpenJob, []any{"s"}, "SEARCH jobs USING INDEX jobs_source_state_newest (source=? AND state=?)"},
		{sqlitestore.SeenQuery(2), []any{"s", "1", "2"},
			"SEARCH accepted USING COVERING INDEX sqlite_autoindex_accepted_1 (source=? AND event_id=?)"},
		{sqlrows.AcceptedPage, []any{"j", 0, 1000}, "SEARCH accepted USING INDEX accepted_job_line (job_id=? AND line>?)"},
	} {
		plan, err := sqlitestore.Plan(s, tc.q, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if plan != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", strings.Join(strings.Fields(tc.q), " "), plan, tc.want)
		}
	}
}
