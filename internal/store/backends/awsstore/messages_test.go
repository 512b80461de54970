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

// wantQueue checks how many messages a queue holds, and in flight.
func wantQueue(t *testing.T, s *awsstore.Store, q string, all, inFlight int) {
	t.Helper()
	a, f, err := awsstore.QueueCounts(context.Background(), s, q)
	if err != nil || a != all || f != inFlight {
		t.Fatalf("queue %s holds %d messages, %d in flight (err %v); want %d and %d", q, a, f, err, all, inFlight)
	}
}

// TestMessagesFollowTheJob: the SQS message of a job is hidden while its
// lease lasts (heartbeats included), deleted when it completes, and
// dropped at the next receive once the job was cancelled.
func TestMessagesFollowTheJob(t *testing.T) {
	s, calls, err := awsstore.OpenCounting(context.Background(), awstest.Shared(t).NewConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	q := newQueue()
	l := running(t, s, newJob(q), time.Second)
	wantQueue(t, s, q, 1, 1)

	// A heartbeat hides the message for its new visibility, not just the
	// lease in DynamoDB: past the first second, nothing is received.
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the message's first second of visibility, by SQS's clock
	calls.Take()
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("heartbeated job leased again: %v %v", ls, err)
	}
	if n, _ := calls.Take(); n["SQS.ChangeMessageVisibility"] != 0 {
		t.Fatal("the heartbeated job's message was received again (and hidden): its visibility was not extended")
	}

	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, s, q, 0, 0)

	j, _, err := s.Enqueue(ctx, newJob(q))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, j.GetJobId(), "not needed"); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, s, q, 1, 0)
	if ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute}); err != nil || len(ls) != 0 {
		t.Fatalf("cancelled job leased: %v %v", ls, err)
	}
	wantQueue(t, s, q, 0, 0)
}

// TestRejectedJobSendsNoMessage: a job recorded as rejected is final from
// the start, so it puts nothing on its queue for workers to receive.
func TestRejectedJobSendsNoMessage(t *testing.T) {
	s, err := awsstore.Open(context.Background(), awstest.Shared(t).NewConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := newQueue()
	wantQueue(t, s, q, 0, 0) // the queue exists before the enqueue
	nj := newJob(q)
	nj.RejectReason = "not a job spec"
	if _, _, err := s.Enqueue(context.Background(), nj); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, s, q, 0, 0)
}
