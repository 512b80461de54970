package sqlitestore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
	"github.com/spool-run/spool/internal/store/conformance"
	"github.com/spool-run/spool/internal/store/storekit"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Backend{
		Open: func(t *testing.T) store.JobStore {
			return open(t, filepath.Join(t.TempDir(), "spool.db"))
		},
		Reopen: func(t *testing.T, s store.JobStore) store.JobStore {
			path := s.(*sqlitestore.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
		Watching: func(s store.JobStore) int { return sqlitestore.Watching(s.(*sqlitestore.Store)) },
	})
}

// TestListReadsAnIndexInOrder: every listing, whatever its filter and from
// any cursor, reads an index in listing order from where the page starts
// and reads only jobs it returns: a search of the filter's index (an
// unfiltered first page scans jobs_newest from its start), never a scan
// that filters, never a sort. Listing by state in all queues searches
// jobs_state_newest, so the only failed job among a million that
// succeeded costs what finding it does.
func TestListReadsAnIndexInOrder(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	cursor := storekit.Cursor{CreatedAt: time.UnixMicro(1_700_000_000_000_000), JobID: "01a2"}.Encode()
	failed := []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}
	failedOrCancelled := []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED}
	for _, tc := range []struct {
		f     store.ListFilter
		index string
	}{
		{store.ListFilter{}, "jobs_newest"},
		{store.ListFilter{Queue: "q"}, "jobs_queue_newest"},
		{store.ListFilter{States: failed}, "jobs_state_newest"},
		{store.ListFilter{States: failedOrCancelled}, "jobs_state_newest"},
		{store.ListFilter{Queue: "q", States: failed}, "jobs_ready"},
		{store.ListFilter{Queue: "q", States: failedOrCancelled}, "jobs_ready"},
	} {
		for _, c := range []string{"", cursor} {
			f := tc.f
			f.Cursor = c
			plan, err := sqlitestore.ListPlan(s, f)
			if err != nil {
				t.Fatal(err)
			}
			want := "SEARCH jobs USING INDEX " + tc.index + " ("
			if f.Queue == "" && len(f.States) == 0 && f.Cursor == "" {
				want = "SCAN jobs USING INDEX " + tc.index
			}
			reads := 0
			for _, step := range strings.Split(plan, "\n") {
				switch {
				case strings.Contains(step, "TEMP B-TREE"):
					t.Errorf("listing %+v sorts:\n%s", f, plan)
				case strings.HasPrefix(step, "SCAN") || strings.HasPrefix(step, "SEARCH"):
					reads++
					if !strings.HasPrefix(step, want) {
						t.Errorf("listing %+v: %q, want %q...:\n%s", f, step, want, plan)
					}
				}
			}
			if reads != max(1, len(f.States)) {
				t.Errorf("listing %+v reads the table %d times, want once per state asked for:\n%s", f, reads, plan)
			}
		}
	}
}
