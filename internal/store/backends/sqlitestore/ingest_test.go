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
	"github.com/spool-run/spool/internal/store/backends/sqlrows"
)

func externalJob(src string) store.NewJob {
	return store.NewJob{Queue: "external", Params: &spoolv1.JobParams{External: &spoolv1.External{Source: src}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 1 << 20}}, MaxAttempts: 1}
}

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

// An external job's lease has no expiry, and keeps none through the
// sweeps that compare lease times (NULL matches no comparison): the grace
// a server gives after an outage, which extends the other running job's
// lease alone, and expiry.
func TestExternalLeaseNeverExpires(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	ctx := context.Background()
	res, err := s.Ingest(ctx, store.IngestRequest{Source: "s", Events: []store.RawEvent{{ID: "1", Time: time.Now(), Message: "x"}}, Job: externalJob("s")})
	if err != nil {
		t.Fatal(err)
	}
	nj := externalJob("")
	nj.Params = &spoolv1.JobParams{Argv: []string{"true"}}
	if _, _, err := s.Enqueue(ctx, nj); err != nil {
		t.Fatal(err)
	}
	if ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: nj.Queue, Max: 1, LeaseDuration: time.Minute}); err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d leases, %v", len(ls), err)
	}
	if n, err := s.GraceLeases(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("GraceLeases extended %d leases (%v), want the one worker's", n, err)
	}
	if n, err := s.ExpireLeases(ctx); err != nil || n != 0 {
		t.Fatalf("ExpireLeases settled %d (%v), want none", n, err)
	}
	j, err := s.Get(ctx, res.Job.GetJobId())
	if err != nil || j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING || j.GetLeaseExpiresAt() != nil {
		t.Fatalf("external job after grace and expiry: %v, %v; want running with no lease expiry", j, err)
	}
}
