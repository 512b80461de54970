package awsstore_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
)

// holder holds the first request of some operations, once armed, until
// released: while it is in flight, the calls arriving behind it gather.
type holder struct {
	ops     []string
	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when the request is held
	release chan struct{}
}

func newHolder(ops ...string) *holder { return &holder{ops: ops} }

// arm holds the next request of h's operations, and returns the channel
// closed once it is held, and a func that releases it.
func (h *holder) arm() (held <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = true
	h.held, h.release = make(chan struct{}), make(chan struct{})
	out := h.release
	return h.held, sync.OnceFunc(func() { close(out) })
}

func (h *holder) middleware(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("spool-hold",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			h.mu.Lock()
			hold := h.armed && slices.Contains(h.ops, awsmiddleware.GetOperationName(ctx))
			release := h.release
			if hold {
				h.armed = false
				close(h.held)
			}
			h.mu.Unlock()
			if hold {
				<-release
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// heldCall starts call and waits until its request is held. wait
// releases it and returns call's error.
func heldCall(t *testing.T, h *holder, call func() error) (wait func() error) {
	t.Helper()
	held, release := h.arm()
	t.Cleanup(release)
	out := make(chan error, 1)
	go func() { out <- call() }()
	select {
	case <-held:
	case err := <-out:
		t.Fatalf("the call ended (%v) without its request being held", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call's request never came")
	}
	return func() error {
		release()
		return <-out
	}
}

// side runs n calls side by side and returns their errors.
func side(n int, call func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = call(i) })
	}
	wg.Wait()
	return errs
}

// heldThenSide runs op on the first of ls, held in h, then on the others
// side by side, so that they gather behind it, and fails t if any fails.
func heldThenSide(t *testing.T, h *holder, ls []store.Lease, op func(store.Lease) error) {
	t.Helper()
	first := heldCall(t, h, func() error { return op(ls[0]) })
	for i, err := range side(len(ls)-1, func(i int) error { return op(ls[1+i]) }) {
		if err != nil {
			t.Fatalf("lease %d: %v", 1+i, err)
		}
	}
	if err := first(); err != nil {
		t.Fatal(err)
	}
}

func sqsCalls(n map[string]int) map[string]int {
	out := map[string]int{}
	for op, k := range n {
		if name, ok := strings.CutPrefix(op, "SQS."); ok && name != "GetQueueUrl" && name != "GetQueueAttributes" {
			out[name] = k
		}
	}
	return out
}

func countingStore(t *testing.T, extra ...func(*middleware.Stack) error) (*awsstore.Store, *awsstore.Calls) {
	t.Helper()
	s, calls, err := awsstore.OpenCounting(context.Background(), awstest.Shared(t).NewConfig(t), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, calls
}

// leaseAll leases n jobs of queue.
func leaseAll(t *testing.T, s store.JobStore, queue string, n int) []store.Lease {
	t.Helper()
	var got []store.Lease
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: n - len(got), LeaseDuration: time.Minute, Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ls...)
	}
	if len(got) != n {
		t.Fatalf("leased %d jobs, want %d", len(got), n)
	}
	return got
}

// TestEnqueuesShareSends: enqueues arriving while a send is in flight go
// in SendMessageBatch requests of 10, each answered once its own message
// is sent, without waiting for the request in flight when it is full.
func TestEnqueuesShareSends(t *testing.T) {
	t.Parallel()
	h := newHolder("SendMessage", "SendMessageBatch")
	s, calls := countingStore(t, h.middleware)
	ctx := context.Background()
	q := newQueue()
	if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil { // the queue exists, as on a running server
		t.Fatal(err)
	}
	calls.Take()

	first := heldCall(t, h, func() error { _, _, err := s.Enqueue(ctx, newJob(q)); return err })
	ids := make([]string, 50)
	for i, err := range side(50, func(i int) error {
		j, created, err := s.Enqueue(ctx, newJob(q))
		if err == nil && !created {
			err = errors.New("not created")
		}
		ids[i] = j.GetJobId()
		return err
	}) {
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	if err := first(); err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Take()
	if got, want := sqsCalls(n), map[string]int{"SendMessage": 1, "SendMessageBatch": 5}; !maps.Equal(got, want) {
		t.Fatalf("51 enqueues made SQS requests %v, want %v", got, want)
	}

	leased := map[string]bool{}
	for _, l := range leaseAll(t, s, q, 52) {
		leased[l.JobID] = true
	}
	for _, id := range ids {
		if !leased[id] {
			t.Fatalf("job %s was not delivered", id)
		}
	}
}

// spoil makes SQS refuse the entries of batch requests that name one of
// jobs (an invalid delay: SQS checks each entry alone), and, when
// serverFault, reports those failures as SQS's own, which the store tries
// again alone.
type spoil struct {
	mu          sync.Mutex
	jobs        map[string]bool
	handles     map[string]bool
	serverFault bool
}

func (sp *spoil) middleware(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("spool-spoil",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			sp.mu.Lock()
			switch p := in.Parameters.(type) {
			case *sqs.SendMessageBatchInput:
				for i, e := range p.Entries {
					for id := range sp.jobs {
						if strings.Contains(aws.ToString(e.MessageBody), id) {
							p.Entries[i].DelaySeconds = 1000
						}
					}
				}
			case *sqs.DeleteMessageBatchInput:
				for i, e := range p.Entries {
					if sp.handles[aws.ToString(e.ReceiptHandle)] {
						p.Entries[i].ReceiptHandle = aws.String("spoilt")
					}
				}
			}
			serverFault := sp.serverFault
			sp.mu.Unlock()
			out, md, err := next.HandleInitialize(ctx, in)
			if serverFault {
				if r, ok := out.Result.(*sqs.DeleteMessageBatchOutput); ok {
					for i := range r.Failed {
						r.Failed[i].SenderFault = false
					}
				}
			}
			return out, md, err
		}), middleware.After)
}

// TestFailedSendFailsItsEnqueueAlone: an entry SQS refuses in a batch
// fails its own enqueue, with SQS's code, and leaves no job; the others
// are enqueued.
func TestFailedSendFailsItsEnqueueAlone(t *testing.T) {
	t.Parallel()
	doomed := uuid.Must(uuid.NewV7()).String()
	sp := &spoil{jobs: map[string]bool{doomed: true}}
	h := newHolder("SendMessage", "SendMessageBatch")
	s, calls := countingStore(t, h.middleware, sp.middleware)
	ctx := context.Background()
	q := newQueue()
	first := heldCall(t, h, func() error { _, _, err := s.Enqueue(ctx, newJob(q)); return err })
	calls.Take()
	errs := side(20, func(i int) error {
		nj := newJob(q)
		if i == 7 {
			nj.ID = doomed
		}
		_, _, err := s.Enqueue(ctx, nj)
		return err
	})
	if err := first(); err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		var ae smithy.APIError
		switch {
		case i == 7 && (!errors.As(err, &ae) || ae.ErrorCode() != "InvalidParameterValue"):
			t.Fatalf("the refused entry's enqueue: %v, want SQS's InvalidParameterValue", err)
		case i != 7 && err != nil:
			t.Fatalf("enqueue %d, beside a refused entry: %v", i, err)
		}
	}
	if got, want := sqsCalls(mustTake(calls)), map[string]int{"SendMessage": 1, "SendMessageBatch": 2}; !maps.Equal(got, want) {
		t.Fatalf("20 enqueues behind a held one made SQS requests %v, want %v", got, want)
	}
	if _, err := s.Get(ctx, doomed); !errors.Is(err, spool.ErrNotFound) {
		t.Fatalf("the job whose message was refused: %v, want ErrNotFound", err)
	}
	leaseAll(t, s, q, 20)
}

func mustTake(c *awsstore.Calls) map[string]int {
	n, _ := c.Take()
	return n
}

// TestCompletesShareDeletes: completions arriving while a delete is in
// flight delete their messages in DeleteMessageBatch requests, and
// releases show theirs again in ChangeMessageVisibilityBatch requests;
// every message is dealt with.
func TestCompletesShareDeletes(t *testing.T) {
	t.Parallel()
	h := newHolder("DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch")
	s, calls := countingStore(t, h.middleware)
	ctx := context.Background()
	q := newQueue()
	side(42, func(int) error { _, _, err := s.Enqueue(ctx, newJob(q)); return err })
	ls := leaseAll(t, s, q, 42)

	calls.Take()
	heldThenSide(t, h, ls[:31], func(l store.Lease) error {
		_, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{})
		return err
	})
	if got, want := sqsCalls(mustTake(calls)), map[string]int{"DeleteMessage": 1, "DeleteMessageBatch": 3}; !maps.Equal(got, want) {
		t.Fatalf("31 completions made SQS requests %v, want %v", got, want)
	}

	heldThenSide(t, h, ls[31:42], func(l store.Lease) error {
		_, err := s.Release(ctx, l.LeaseRef, false, "test")
		return err
	})
	if got, want := sqsCalls(mustTake(calls)), map[string]int{"ChangeMessageVisibility": 1, "ChangeMessageVisibilityBatch": 1}; !maps.Equal(got, want) {
		t.Fatalf("11 releases made SQS requests %v, want %v", got, want)
	}
	// The released jobs are there to lease at once, and nothing else is.
	leaseAll(t, s, q, 11)
	wantQueue(t, s, q, 11, 11)
}

// TestFailedDeleteStaysAlone: a delete SQS refuses in a batch leaves its
// message (it comes back, and is dropped as a finished job's) without
// failing the completion or the others' deletes; a delete that failed on
// SQS's side is tried again alone.
func TestFailedDeleteStaysAlone(t *testing.T) {
	t.Parallel()
	for _, serverFault := range []bool{false, true} {
		sp := &spoil{handles: map[string]bool{}, serverFault: serverFault}
		h := newHolder("DeleteMessage", "DeleteMessageBatch")
		s, calls := countingStore(t, h.middleware, sp.middleware)
		ctx := context.Background()
		q := newQueue()
		side(11, func(int) error { _, _, err := s.Enqueue(ctx, newJob(q)); return err })
		ls := leaseAll(t, s, q, 11)
		sp.mu.Lock()
		sp.handles[ls[4].LeaseID] = true
		sp.mu.Unlock()

		calls.Take()
		heldThenSide(t, h, ls[:11], func(l store.Lease) error {
			_, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{})
			return err
		})
		want, left := map[string]int{"DeleteMessage": 1, "DeleteMessageBatch": 1}, 1
		if serverFault {
			want["DeleteMessage"], left = 2, 0
		}
		if got := sqsCalls(mustTake(calls)); !maps.Equal(got, want) {
			t.Fatalf("server fault %v: 11 completions made SQS requests %v, want %v", serverFault, got, want)
		}
		wantQueue(t, s, q, left, left)
	}
}
