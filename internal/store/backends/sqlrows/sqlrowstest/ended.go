// Package sqlrowstest checks, for the tests of both SQL stores, what they
// keep in columns the seam does not show: a job's ended_at.
package sqlrowstest

import (
	"context"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/conformance"
)

// EndedAt reads a job's ended_at column straight from the store's
// database: ok is false when it is NULL.
type EndedAt func(jobID string) (micros int64, ok bool, err error)

func exec() *spoolv1.ExecutionConfig {
	return &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{MaxBatchSize: 50, MaxBatchBytes: 256 << 10}}
}

func newJob(queue string) store.NewJob {
	return store.NewJob{Queue: queue, Params: &spoolv1.JobParams{Argv: []string{"true"}}, Execution: exec(), MaxAttempts: 3}
}

// CheckEndedAt checks that every way a job becomes final sets its ended_at
// to the updated_at of that write, that no other write sets it, and that
// a note added after the end, which moves updated_at, leaves the job's
// end, as EndedBefore and QueueStats see it, where it was. s is a new,
// empty store.
func CheckEndedAt(t *testing.T, s store.JobStore, endedAt EndedAt) {
	t.Helper()
	ctx := context.Background()
	check := func(what, id string, final bool) int64 {
		t.Helper()
		j, err := s.Get(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		at, ok, err := endedAt(id)
		if err != nil {
			t.Fatalf("%s: read ended_at: %v", what, err)
		}
		switch updated := j.GetUpdatedAt().AsTime().UnixMicro(); {
		case !final && ok:
			t.Errorf("%s (%s): ended_at %d, want NULL", what, j.GetState(), at)
		case final && !ok:
			t.Errorf("%s (%s): ended_at NULL, want %d (its updated_at)", what, j.GetState(), updated)
		case final && at != updated:
			t.Errorf("%s (%s): ended_at %d, want %d (its updated_at)", what, j.GetState(), at, updated)
		}
		return at
	}
	enqueue := func(nj store.NewJob) *spoolv1.Job {
		t.Helper()
		j, _, err := s.Enqueue(ctx, nj)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	lease := func(queue string, d time.Duration) store.Lease {
		t.Helper()
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: queue, Max: 1, LeaseDuration: d})
		if err != nil || len(ls) != 1 {
			t.Fatalf("Dequeue %s: %d leases, %v", queue, len(ls), err)
		}
		return ls[0]
	}

	rejected := newJob("rejected")
	rejected.RejectReason = "no"
	check("a job rejected at enqueue", enqueue(rejected).GetJobId(), true)

	waiting := enqueue(newJob("cancel"))
	check("a queued job", waiting.GetJobId(), false)
	if _, err := s.Cancel(ctx, waiting.GetJobId(), "x"); err != nil {
		t.Fatal(err)
	}
	check("a job cancelled while queued", waiting.GetJobId(), true)

	enqueue(newJob("ok"))
	ok := lease("ok", time.Minute)
	check("a running job", ok.JobID, false)
	if _, err := s.Complete(ctx, ok.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	end := check("a job that succeeded", ok.JobID, true)

	retried := newJob("retry")
	retried.Retries = 1
	enqueue(retried)
	l := lease("retry", time.Minute)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	check("a failed job queued for a retry", l.JobID, false)

	enqueue(newJob("release"))
	l = lease("release", time.Minute)
	if _, err := s.Cancel(ctx, l.JobID, "x"); err != nil {
		t.Fatal(err)
	}
	check("a running job asked to cancel", l.JobID, false)
	if _, err := s.Release(ctx, l.LeaseRef, false, "stopping"); err != nil {
		t.Fatal(err)
	}
	check("a job released after its cancel was asked", l.JobID, true)

	lost := newJob("expire")
	lost.MaxAttempts = 1
	enqueue(lost)
	l = lease("expire", time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if _, err := s.ExpireLeases(ctx, conformance.Sweep); err != nil {
		t.Fatal(err)
	}
	check("a job whose last lease expired", l.JobID, true)

	ext := store.NewJob{Queue: "external", Params: &spoolv1.JobParams{External: &spoolv1.External{Source: "src"}}, Execution: exec(), MaxAttempts: 1}
	in, err := s.Ingest(ctx, store.IngestRequest{Source: "src", Job: ext,
		Events: []store.RawEvent{{ID: "e1", Time: time.Now().UTC(), Message: "line"}}})
	if err != nil {
		t.Fatal(err)
	}
	check("an external job", in.Job.GetJobId(), false)
	if _, err := s.Complete(ctx, store.ExternalLeaseRef(in.Job), &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	check("an external job completed", in.Job.GetJobId(), true)

	// A note after the end moves updated_at, not the end.
	time.Sleep(2 * time.Millisecond)
	noted, err := s.AddNote(ctx, ok.JobID, "looked at")
	if err != nil {
		t.Fatal(err)
	}
	if at, _, _ := endedAt(ok.JobID); at != end {
		t.Errorf("a note moved ended_at from %d to %d", end, at)
	}
	noteAt := noted.GetUpdatedAt().AsTime()
	if noteAt.UnixMicro() <= end+1 {
		t.Fatalf("the note's updated_at %d is not after the end %d", noteAt.UnixMicro(), end)
	}
	ids, err := s.EndedBefore(ctx, noteAt, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range ids {
		found = found || id == ok.JobID
	}
	if !found {
		t.Errorf("EndedBefore(the note's time) = %v: no %s, which ended before it", ids, ok.JobID)
	}
	stats, err := s.QueueStats(ctx, time.UnixMicro(end+1))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.Name == "ok" && q.Succeeded != 0 {
			t.Errorf("QueueStats since after the end counts %d succeeded in queue ok; its job ended before", q.Succeeded)
		}
	}
}
