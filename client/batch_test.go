package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestSubmitBatch: each job of a batch is enqueued or refused on its own,
// in order, its error of spool's kinds; a repeat finds the jobs the first
// made; more jobs than a call takes go in several calls.
func TestSubmitBatch(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	jobs := []client.SubmitParams{
		{Argv: []string{"echo", "one"}, RequestID: "batch-1", Queue: "builds"},
		{Queue: "builds", RequestID: "batch-2"}, // nothing to run
		{Script: "echo three", RequestID: "batch-3", MaxAttempts: math.MaxInt32 + 1},
		{Script: "echo four", Queue: "no spaces allowed"},
		{Script: "echo five", RequestID: "batch-5"},
	}
	check := func(round int, rs []client.BatchResult) {
		t.Helper()
		if len(rs) != len(jobs) {
			t.Fatalf("round %d: %d results for %d jobs", round, len(rs), len(jobs))
		}
		for _, i := range []int{0, 4} {
			if rs[i].Err != nil || rs[i].Job == nil || rs[i].Deduplicated != (round > 0) {
				t.Errorf("round %d, job %d: %+v, want enqueued (deduplicated: %v)", round, i, rs[i], round > 0)
			}
		}
		for _, i := range []int{1, 2, 3} {
			if !errors.Is(rs[i].Err, spool.ErrInvalidArgument) || rs[i].Job != nil {
				t.Errorf("round %d, job %d: %+v, want invalid argument", round, i, rs[i])
			}
		}
		if rs[0].Job.Queue != "builds" || rs[4].Job.Queue != "default" || rs[0].Job.Params.Argv[1] != "one" {
			t.Errorf("round %d: jobs %+v and %+v not as submitted", round, rs[0].Job, rs[4].Job)
		}
	}
	first, err := c.SubmitBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	check(0, first)
	again, err := c.SubmitBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	check(1, again)
	if again[0].Job.ID != first[0].Job.ID || again[4].Job.ID != first[4].Job.ID {
		t.Errorf("a repeat made other jobs: %s %s, then %s %s", first[0].Job.ID, first[4].Job.ID, again[0].Job.ID, again[4].Job.ID)
	}

	// A request id used for another job is that job's error alone.
	rs, err := c.SubmitBatch(ctx, []client.SubmitParams{{Script: "echo other", RequestID: "batch-1"}, {Script: "echo fine"}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rs[0].Err, spool.ErrAlreadyExists) || rs[1].Err != nil {
		t.Errorf("a reused request id beside a good job: %+v", rs)
	}

	// 2,500 jobs: three calls' worth.
	many := make([]client.SubmitParams, 2500)
	for i := range many {
		many[i] = client.SubmitParams{Argv: []string{"echo", fmt.Sprint(i)}, Queue: "many", RequestID: fmt.Sprintf("many-%d", i)}
	}
	rs, err = c.SubmitBatch(ctx, many)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Err != nil || r.Job.Params.Argv[1] != fmt.Sprint(i) {
			t.Fatalf("job %d of 2,500: %+v", i, r)
		}
	}
	qs, _, err := c.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == "many" {
			found = true
			if q.Queued != 2500 {
				t.Errorf("queue many holds %d jobs, want 2,500", q.Queued)
			}
		}
	}
	if !found {
		t.Errorf("no queue many among %v", qs)
	}
}

// TestSubmitBatchKeyRefused: a key that may not submit fails the whole
// batch, every job with the call's error.
func TestSubmitBatchKeyRefused(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client(client.Config{APIKey: srv.Key(t, spool.RoleRead)})
	rs, err := c.SubmitBatch(context.Background(), []client.SubmitParams{{Script: "true"}, {Script: "false"}})
	if !errors.Is(err, spool.ErrPermissionDenied) {
		t.Fatalf("a read key submitting a batch: %v", err)
	}
	for i, r := range rs {
		if !errors.Is(r.Err, spool.ErrPermissionDenied) || r.Job != nil {
			t.Errorf("job %d: %+v, want the call's error", i, r)
		}
	}
}
