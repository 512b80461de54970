package awsstore_test

import (
	"context"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// TestListWorkBounded: a listing by a state only the oldest of many jobs
// is in examines a bounded number of index entries per call (here
// shortened to 2 queries of 10), answering with short pages and a cursor
// that goes on where the call stopped, and paging on finds the job, in all
// queues and in its own.
func TestListWorkBounded(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	s, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const perQuery, rounds, others = 10, 2, 60
	awsstore.SetListScan(s, perQuery, rounds)
	ctx := context.Background()
	q := newQueue()
	l := running(t, s, newJob(q), time.Minute)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	for range others {
		if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []store.ListFilter{
		{States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}, Limit: 5},
		{Queue: q, States: []spoolv1.JobState{spoolv1.JobState_JOB_STATE_FAILED}, Limit: 5},
	} {
		var found []string
		pages := 0
		for {
			calls.Take()
			jobs, next, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if scanned := calls.Scanned(); scanned > perQuery*rounds {
				t.Fatalf("one List call examined %d index entries, more than %d", scanned, perQuery*rounds)
			}
			if n, _ := calls.Take(); n["DynamoDB.Query"] > rounds {
				t.Fatalf("one List call made %d index queries, more than %d", n["DynamoDB.Query"], rounds)
			}
			for _, j := range jobs {
				found = append(found, j.GetJobId())
			}
			if next == "" || pages > others {
				break
			}
			f.Cursor = next
		}
		if len(found) != 1 || found[0] != l.JobID {
			t.Fatalf("listing %+v found %v, want only the failed job %s", f, found, l.JobID)
		}
		// 61 index entries, 20 a call: the 4th call finds the failed job,
		// the 5th at the latest says there is nothing more.
		if want := (others+1+perQuery*rounds-1)/(perQuery*rounds) + 1; pages > want {
			t.Errorf("listing %+v took %d calls, want at most %d", f, pages, want)
		}
	}
}
