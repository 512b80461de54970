package memstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/memstore"
	"github.com/spool-run/spool/internal/store/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Backend{
		Open:     func(*testing.T) store.JobStore { return memstore.New() },
		Watching: func(s store.JobStore) int { return memstore.Watching(s.(*memstore.Store)) },
		Polling: conformance.Polling{
			SetInterval: func(s store.JobStore, d time.Duration) { memstore.SetPollInterval(s.(*memstore.Store), d) },
			Waiting:     func(s store.JobStore, q string) int { return memstore.Polling(s.(*memstore.Store), q) },
		},
	})
}

// TestListWorkBounded: a listing by a state only the oldest of many jobs
// is in examines at most ListScan jobs a call, answering with a short page
// and a cursor, and paging on finds the job.
func TestListWorkBounded(t *testing.T) {
	s := memstore.New()
	ctx := context.Background()
	nj := store.NewJob{Queue: "q", Params: &spoolv1.JobParams{Argv: []string{"true"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50}}, MaxAttempts: 1}
	failed, _, err := s.Enqueue(ctx, nj)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d leases, %v", len(ls), err)
	}
	if _, err := s.Complete(ctx, ls[0].LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	const others = 2*memstore.ListScan + 10
	for range others {
		if _, _, err := s.Enqueue(ctx, nj); err != nil {
			t.Fatal(err)
		}
	}
	f := store.ListFilter{States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}, Limit: 10}
	var pages []int
	for {
		jobs, next, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(jobs))
		if len(jobs) == 1 && jobs[0].GetJobId() != failed.GetJobId() {
			t.Fatalf("listed %s, want the failed job", jobs[0].GetJobId())
		}
		if next == "" || len(pages) > others {
			break
		}
		f.Cursor = next
	}
	// 2,010 queued jobs, then the failed one: two calls see only queued
	// jobs, the third finds it.
	if want := []int{0, 0, 1}; !slices.Equal(pages, want) {
		t.Fatalf("pages of %v jobs, want %v", pages, want)
	}
}
