package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/spool-run/spool"
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
		RawJob: func(t *testing.T, s store.JobStore, id string) []byte {
			raw, err := sqlitestore.RawJob(s.(*sqlitestore.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		},
		Reopen: func(t *testing.T, s store.JobStore) store.JobStore {
			path := s.(*sqlitestore.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
		Watching: func(s store.JobStore) int { return sqlitestore.Watching(s.(*sqlitestore.Store)) },
		Polling: conformance.Polling{
			SetInterval: func(s store.JobStore, d time.Duration) { sqlitestore.SetPollInterval(s.(*sqlitestore.Store), d) },
			Waiting:     func(s store.JobStore, q string) int { return sqlitestore.Polling(s.(*sqlitestore.Store), q) },
		},
	})
}

// TestListReadsAnIndexInOrder: every listing, whatever its filter and from
// any cursor, reads an index in listing order from where the page starts
// and reads only jobs it returns: a search of the filter's index (an
// unfiltered first page scans jobs_newest from its start), never a scan
// that filters, never a sort. Listing by state in all queues searches
// jobs_state_newest, so the only failed job among a million that
// succeeded costs what finding it does; listing a source's jobs reads the
// indexes of external jobs alone.
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
		{store.ListFilter{Source: "s"}, "jobs_source_newest"},
		{store.ListFilter{Source: "s", States: failed}, "jobs_source_state_newest"},
		{store.ListFilter{Source: "s", States: failedOrCancelled}, "jobs_source_state_newest"},
	} {
		for _, c := range []string{"", cursor} {
			f := tc.f
			f.Cursor = c
			plan, err := sqlitestore.ListPlan(s, f)
			if err != nil {
				t.Fatal(err)
			}
			want := "SEARCH jobs USING INDEX " + tc.index + " ("
			if f.Queue == "" && f.Source == "" && len(f.States) == 0 && f.Cursor == "" {
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

// TestListScattersReadsAnIndexInOrder: a page of scatters is a range of an
// index read in listing order, never a sort, and a listing of the active
// ones reads the partial index of the active ones alone, so the finished
// scatters before them cost nothing.
func TestListScattersReadsAnIndexInOrder(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	for _, active := range []bool{false, true} {
		for _, cursor := range []string{"", "019a0000-0000-7000-8000-000000000000"} {
			f := store.ScatterFilter{Active: active, Cursor: cursor}
			plan, err := sqlitestore.ScatterListPlan(s, f)
			if err != nil {
				t.Fatal(err)
			}
			index := "sqlite_autoindex_scatters_1"
			if active {
				index = "scatters_active"
			}
			want := "SEARCH scatters USING INDEX " + index + " (scatter_id<?)"
			if cursor == "" {
				want = "SCAN scatters USING INDEX " + index
			}
			if plan != want {
				t.Errorf("listing %+v:\n%s\nwant\n%s", f, plan, want)
			}
		}
	}
}

// TestCreateScatterOfManyBatches: a scatter of a thousand batches of 10 KB
// is written in one transaction and read back whole.
func TestCreateScatterOfManyBatches(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	rec, batches := bigScatter(1000, 10<<10)
	start := time.Now()
	if err := s.CreateScatter(context.Background(), rec, batches); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d batches of %d bytes in %v", len(batches), len(batches[0]), time.Since(start))
	for _, i := range []int32{0, 499, 999} {
		b, err := s.ScatterBatch(context.Background(), rec.Scatter.GetScatterId(), i)
		if err != nil || !bytes.Equal(b, batches[i]) {
			t.Fatalf("batch %d: %d bytes, %v", i, len(b), err)
		}
	}
}

// bigScatter is a scatter of n batches of about size bytes each.
func bigScatter(n int32, size int) (*store.ScatterRecord, [][]byte) {
	sc := &spoolv1.Scatter{
		ScatterId: uuid.Must(uuid.NewV7()).String(),
		Progress:  &spoolv1.ScatterProgress{BatchCount: n, Waiting: n},
	}
	batches := make([][]byte, n)
	for i := range batches {
		batches[i] = fmt.Appendf(nil, `["%d%s"]`, i, strings.Repeat("x", size))
	}
	return &store.ScatterRecord{Scatter: sc, Active: true, Ended: store.NewBits(n), Failed: store.NewBits(n)}, batches
}

// A caller-named job's id cannot be taken by another request; a repeat
// of its own request returns it.
func TestNamedJobIDInUse(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	ctx := context.Background()
	nj := store.NewJob{ID: uuid.Must(uuid.NewV7()).String() + ".0", RequestID: "first", Queue: "q",
		Params:    &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}
	if _, created, err := s.Enqueue(ctx, nj); err != nil || !created {
		t.Fatalf("first: created=%v %v", created, err)
	}
	for _, req := range []string{"second", ""} {
		other := nj
		other.RequestID = req
		if _, _, err := s.Enqueue(ctx, other); !errors.Is(err, spool.ErrAlreadyExists) {
			t.Fatalf("the id again, request %q: %v, want ErrAlreadyExists", req, err)
		}
	}
	if j, created, err := s.Enqueue(ctx, nj); err != nil || created || j.GetJobId() != nj.ID {
		t.Fatalf("repeat: %s created=%v %v", j.GetJobId(), created, err)
	}
}
