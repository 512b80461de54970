package awsstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/storekit"
)

// bill is what counted calls cost: DynamoDB requests, read and write
// units (as the server reports them, table only), SQS requests.
type bill struct {
	dynamo, sqs int
	rcu, wcu    float64
}

func billOf(calls *awsstore.Calls) bill {
	n, capacity := calls.Take()
	var b bill
	for op, k := range n {
		switch {
		case strings.HasPrefix(op, "SQS."):
			b.sqs += k
		case strings.HasPrefix(op, "DynamoDB."):
			b.dynamo += k
		}
	}
	for op, c := range capacity {
		switch strings.TrimPrefix(op, "DynamoDB.") {
		case "GetItem", "Query", "BatchGetItem":
			b.rcu += c
		default:
			b.wcu += c
		}
	}
	return b
}

// TestCostTiming: what the timing features cost, against the cost of a
// plain job (enqueue, lease, complete) on the same store. The bounds are
// what doc.go promises: an idle promotion and claim are four queries; a
// delayed job costs a read and a write of its item more, and its message
// is sent at its promotion instead of its enqueue; a lease under a limit
// costs one read and one write of the limit item; a queue without
// priorities or a limit polls SQS as before.
func TestCostTiming(t *testing.T) {
	s, calls := countingStore(t)
	ctx := context.Background()
	q := newQueue()
	conformanceWarmUp(t, s, q)
	life := func(nj store.NewJob, promoteAt time.Time) bill {
		t.Helper()
		billOf(calls)
		if _, _, err := s.Enqueue(ctx, nj); err != nil {
			t.Fatal(err)
		}
		if !promoteAt.IsZero() {
			if p, err := s.PromoteScheduled(ctx, promoteAt); err != nil || p.Queued != 1 {
				t.Fatalf("promotion: %+v, %v", p, err)
			}
		}
		l := leaseOne(t, s, nj.Queue, time.Minute)
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
		return billOf(calls)
	}
	// The store reads a queue's settings at most once a second: each
	// life pays that read, as a job of a queue that gets one a second.
	settle := func() { awsstore.ForgetSettings(s, q) }

	settle()
	plain := life(newJob(q), time.Time{})
	t.Logf("plain job: %+v", plain)

	billOf(calls)
	if _, err := s.PromoteScheduled(ctx, storekit.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimNotifications(ctx, storekit.Now(), time.Minute, 100); err != nil {
		t.Fatal(err)
	}
	idle := billOf(calls)
	t.Logf("idle promotion and claim: %+v", idle)
	if idle.dynamo != 4 || idle.sqs != 0 {
		t.Errorf("an idle promotion and claim made %d DynamoDB and %d SQS requests, want 4 queries", idle.dynamo, idle.sqs)
	}

	settle()
	at := storekit.Now().Add(time.Hour)
	nj := newJob(q)
	nj.RunAfter = at
	delayed := life(nj, at)
	t.Logf("delayed job, promoted: %+v", delayed)
	if delayed.sqs != plain.sqs || delayed.dynamo > plain.dynamo+5 || delayed.wcu > plain.wcu+2 {
		t.Errorf("a delayed job cost %+v, a plain one %+v: want the same SQS requests, at most 5 DynamoDB requests and 2 WCU more", delayed, plain)
	}

	lq := newQueue()
	conformanceWarmUp(t, s, lq)
	if err := s.SetQueueMaxRunning(ctx, lq, 5); err != nil {
		t.Fatal(err)
	}
	limited := life(newJob(lq), time.Time{})
	t.Logf("job of a limited queue: %+v", limited)
	if limited.sqs != plain.sqs || limited.dynamo > plain.dynamo+3 {
		t.Errorf("a job of a limited queue cost %+v, a plain one %+v: want the same SQS requests and at most 3 DynamoDB requests more", limited, plain)
	}
}

// TestCostWaitingJobs: jobs that wait for a running job cost each
// promotion after the first a read of that job, not of every one of them.
func TestCostWaitingJobs(t *testing.T) {
	s, calls := countingStore(t)
	ctx := context.Background()
	q := newQueue()
	parent := running(t, s, newJob(q), time.Minute)
	const n = 30
	for range n {
		nj := newJob(q)
		nj.After = []string{parent.JobID}
		if _, _, err := s.Enqueue(ctx, nj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PromoteScheduled(ctx, storekit.Now()); err != nil {
		t.Fatal(err)
	}
	billOf(calls)
	if _, err := s.PromoteScheduled(ctx, storekit.Now()); err != nil {
		t.Fatal(err)
	}
	n2, capacity := calls.Take()
	t.Logf("a promotion with %d jobs waiting for one: %v, %v", n, n2, capacity)
	if n2["DynamoDB.BatchGetItem"] != 1 || capacity["DynamoDB.BatchGetItem"] > 1 {
		t.Errorf("a promotion with %d jobs waiting for one running job read %d batches, %v RCU; want one read of the running job",
			n, n2["DynamoDB.BatchGetItem"], capacity["DynamoDB.BatchGetItem"])
	}
	if _, err := s.Complete(ctx, parent.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.PromoteScheduled(ctx, storekit.Now()); err != nil || p.Queued != n {
		t.Fatalf("once the job they wait for succeeded: %+v, %v; want %d queued", p, err, n)
	}
}
