package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/sqlitestore"
)

// TestIngestLeavesTheStatementCacheBounded: deliveries of every size from
// 1 to 200 events (ids looked up in as many IN lists) leave the writer's
// statement cache holding few statements, and a statement run after them
// is cached: compiled once, however often it runs.
func TestIngestLeavesTheStatementCacheBounded(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "spool.db"))
	defer s.Close()
	exec := &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 256 << 10}}
	id := 0
	for n := 1; n <= 200; n++ {
		evs := make([]store.RawEvent, n)
		for i := range evs {
			id++
			evs[i] = store.RawEvent{ID: fmt.Sprint(id), Time: time.UnixMilli(int64(id)), Message: "line"}
		}
		_, err := s.Ingest(ctx, store.IngestRequest{Source: "app", Events: evs,
			Job: store.NewJob{Queue: "ingest", Params: &spoolv1.JobParams{External: &spoolv1.External{Source: "app"}}, Execution: exec, MaxAttempts: 1}})
		if err != nil {
			t.Fatalf("ingest of %d events: %v", n, err)
		}
	}
	_, held, err := sqlitestore.WriterCache(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the writer's cache holds %d statements after 200 ingests of 1 to 200 events", held)
	// Ten lookups of ids, sixteen INSERTs of events, a few more.
	if held > 32 {
		t.Errorf("the writer's cache holds %d statements after ingests of 200 sizes, more than their few kinds", held)
	}

	// A write after them: compiled the first time, then taken from the
	// cache.
	job := store.NewJob{Queue: "later", Params: &spoolv1.JobParams{Argv: []string{"true"}}, Execution: exec, MaxAttempts: 1}
	if _, _, err := s.Enqueue(ctx, job); err != nil {
		t.Fatal(err)
	}
	before, _, err := sqlitestore.WriterCache(s)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, _, err := s.Enqueue(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	if after, _, err := sqlitestore.WriterCache(s); err != nil || after != before {
		t.Fatalf("5 more enqueues compiled %d statements (%v); want them all from the cache", after-before, err)
	}
}
