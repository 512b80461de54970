package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// wantGone checks that a deleted job is nowhere: not by id, not listed, no
// log.
func wantGone(t *testing.T, s store.JobStore, j *spoolv1.Job) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Get(ctx, j.GetJobId())
	wantErr(t, err, spool.ErrNotFound, "Get of a deleted job")
	jobs, _, err := s.List(ctx, store.ListFilter{Queue: j.GetQueue()})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range jobs {
		if l.GetJobId() == j.GetJobId() {
			t.Fatalf("deleted job %s still listed", j.GetJobId())
		}
	}
	for ev, err := range storekit.Read(ctx, s, store.ReadRequest{JobID: j.GetJobId(), FromSequence: 1}) {
		if err != nil && !errors.Is(err, spool.ErrNotFound) {
			t.Fatalf("Read of a deleted job: %v", err)
		}
		if ev != nil {
			t.Fatalf("Read of a deleted job yields sequence %d", ev.GetSequence())
		}
	}
}

// testDeleteJob: a finished job goes with its log and its request id; an
// unfinished one stays.
func testDeleteJob(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.RequestID = "delete-" + q
	l := runningJob(t, s, nj)
	if _, err := s.Append(ctx, l.LeaseRef, events.Messages(batchEvent(l.Head.NextSequence, "1", "2", "3"))); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.DeleteJob(ctx, l.JobID), spool.ErrConflict, "deleting a running job")
	queued := enqueue(t, s, newJob(q))
	wantErr(t, s.DeleteJob(ctx, queued.GetJobId()), spool.ErrConflict, "deleting a queued job")
	done, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	keep := enqueue(t, s, newJob(q))
	if err := s.DeleteJob(ctx, l.JobID); err != nil {
		t.Fatalf("DeleteJob of a finished job: %v", err)
	}
	wantGone(t, s, done)
	wantErr(t, s.DeleteJob(ctx, l.JobID), spool.ErrNotFound, "deleting it again")
	wantErr(t, s.DeleteJob(ctx, "no-such-job"), spool.ErrNotFound, "deleting a missing job")
	// The request id is free again: it makes a new job.
	again, created, err := s.Enqueue(ctx, nj)
	if err != nil || !created || again.GetJobId() == l.JobID {
		t.Fatalf("enqueue with a deleted job's request id: %s created=%v %v; want a new job", again.GetJobId(), created, err)
	}
	for _, id := range []string{queued.GetJobId(), keep.GetJobId()} {
		wantState(t, get(t, s, id), spoolv1.JobState_JOB_STATE_QUEUED)
	}
	if st := queueStats(t, s, time.Time{}, q)[q]; st.Succeeded != 0 || st.Queued != 3 {
		t.Fatalf("queue after the delete: %+v; want 3 queued, none succeeded", st)
	}
}

// testDeleteExternalJob: an ended external job goes with the record of
// the events it accepted, so they are new again to its source.
func testDeleteExternalJob(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	src := newSource()
	first := ingest(t, s, src, rawEvents("e", 1, 2, 3)).Job
	wantErr(t, s.DeleteJob(ctx, first.GetJobId()), spool.ErrConflict, "deleting an open external job")
	done, err := s.Complete(ctx, store.ExternalLeaseRef(first), &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteJob(ctx, first.GetJobId()); err != nil {
		t.Fatalf("DeleteJob of an ended external job: %v", err)
	}
	wantGone(t, s, done)
	for a, err := range s.Accepted(ctx, first.GetJobId()) {
		if err == nil {
			t.Fatalf("deleted job still has accepted event %q", a.ID)
		}
	}
	second := ingest(t, s, src, rawEvents("e", 1, 2, 3))
	if !second.Created || second.Accepted != 3 {
		t.Fatalf("events of a deleted job sent again: %+v; want a new job accepting all 3", second)
	}
	wantLines(t, lineTexts(t, s, second.Job.GetJobId()), messages(1, 2, 3))
}

// testEndedBefore: the jobs that ended before a time, oldest first, a
// bounded number at a time.
func testEndedBefore(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	q := newQueue()
	var ended []string
	for i := range 4 {
		l := runningJob(t, s, newJob(q))
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: int32(i % 2)}); err != nil {
			t.Fatal(err)
		}
		ended = append(ended, l.JobID)
	}
	cancelled := enqueue(t, s, newJob(q))
	if _, err := s.Cancel(ctx, cancelled.GetJobId(), "x"); err != nil {
		t.Fatal(err)
	}
	ended = append(ended, cancelled.GetJobId())
	enqueue(t, s, newJob(q))             // queued: never
	runningJob(t, s, newJob(newQueue())) // running: never
	cut := storekit.Now().Add(time.Millisecond)

	if ids, err := s.EndedBefore(ctx, get(t, s, ended[0]).GetUpdatedAt().AsTime(), 10); err != nil || len(ids) != 0 {
		t.Fatalf("EndedBefore the first end: %v, %v; want none", ids, err)
	}
	// Deleting what each call returns, as the sweeper does, ends with every
	// ended job gone and the others kept.
	var got []string
	for range 20 {
		ids, err := s.EndedBefore(ctx, cut, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 2 {
			t.Fatalf("EndedBefore(limit 2) returned %d ids", len(ids))
		}
		for _, id := range ids {
			if err := s.DeleteJob(ctx, id); err != nil {
				t.Fatalf("DeleteJob(%s): %v", id, err)
			}
		}
		got = append(got, ids...)
		if len(got) >= len(ended) {
			break
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ended))
	if !slices.Equal(got, want) {
		t.Fatalf("EndedBefore found %v, want %v", got, want)
	}
	if ids, err := s.EndedBefore(ctx, storekit.Now().Add(time.Hour), 10); err != nil || len(ids) != 0 {
		t.Fatalf("EndedBefore after every ended job was deleted: %v, %v", ids, err)
	}
	if st := queueStats(t, s, time.Time{}, q)[q]; st.Queued != 1 {
		t.Fatalf("queue after the sweep: %+v; want its queued job kept", st)
	}
}
