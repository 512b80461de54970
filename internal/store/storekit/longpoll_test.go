package storekit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// fakeQueue is a queue whose ready jobs a test sets, counting the questions.
type fakeQueue struct {
	polls storekit.Polls
	asked atomic.Int64
	ready atomic.Int64
}

func (q *fakeQueue) dequeue(ctx context.Context, wait time.Duration) ([]store.Lease, error) {
	return q.polls.Dequeue(ctx, store.DequeueRequest{Queue: "q", Max: 10, Wait: wait}, func() ([]store.Lease, error) {
		q.asked.Add(1)
		var out []store.Lease
		for n := q.ready.Load(); n > 0 && len(out) < 10; n = q.ready.Load() {
			if q.ready.CompareAndSwap(n, n-1) {
				out = append(out, store.Lease{})
			}
		}
		return out, nil
	})
}

// start starts n polls waiting up to wait, returning when all sleep, and
// the function that waits for them to end and returns how many jobs they
// took.
func (q *fakeQueue) start(t *testing.T, n int, wait time.Duration) func() int64 {
	t.Helper()
	var got atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			leases, err := q.dequeue(context.Background(), wait)
			if err != nil {
				t.Error(err)
			}
			got.Add(int64(len(leases)))
		})
	}
	for deadline := time.Now().Add(10 * time.Second); q.polls.Sleeping("q") < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d polls wait", q.polls.Sleeping("q"), n)
		}
	}
	return func() int64 {
		wg.Wait()
		return got.Load()
	}
}

// One enqueue wakes every waiting poll of its queue; one of them asks the
// store, takes the job and finds the queue drained, and that answer serves
// the rest: one question, not one per poll.
func TestOneQuestionServesEveryWokenPoll(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{polls: storekit.Polls{Interval: time.Hour}}
	const polls = 16
	wait := q.start(t, polls, 2*time.Second)
	before := q.asked.Load()
	if before < 1 || before > polls {
		t.Fatalf("%d polls starting asked %d times", polls, before)
	}
	q.ready.Store(1)
	q.polls.Ready("q")
	if got := wait(); got != 1 {
		t.Errorf("the polls took %d jobs, want the one", got)
	}
	if n := q.asked.Load() - before; n != 1 {
		t.Errorf("after one enqueue %d waiting polls asked the store %d times, want once", polls, n)
	}
}

// When the woken poll takes as many jobs as it may (10), more may be
// ready: the next poll asks too, and so on until the queue is drained.
func TestPollsAskOnWhileJobsRemain(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{polls: storekit.Polls{Interval: time.Hour}}
	wait := q.start(t, 4, 2*time.Second)
	q.ready.Store(25)
	q.polls.Ready("q")
	if got := wait(); got != 25 {
		t.Errorf("the polls took %d jobs, want all 25", got)
	}
}

// A job that becomes ready unannounced (a retry's delay ran out) is found
// by the polls' timers; idle polls look again no more often than once per
// half interval between them, however many they are.
func TestIdlePollsShareTheTimer(t *testing.T) {
	t.Parallel()
	const interval = 20 * time.Millisecond
	q := &fakeQueue{polls: storekit.Polls{Interval: interval}}
	const polls = 16
	start := time.Now()
	wait := q.start(t, polls, 400*time.Millisecond)
	q.ready.Store(1) // no Ready: found on a timer
	got := wait()
	elapsed := time.Since(start)
	if got != 1 {
		t.Errorf("the polls took %d jobs, want the one that became ready", got)
	}
	if most := 1 + int64(elapsed/(interval/2)); q.asked.Load() > most {
		t.Errorf("%d idle polls asked %d times in %v, want at most %d", polls, q.asked.Load(), elapsed, most)
	}
}

// While the last answer filled its request, the queue is busy: polls ask
// side by side, so their leases can share the store's commits. Each lease
// here waits until the other is under way too; taking turns, the first
// would wait for good.
func TestBusyQueuePollsAskSideBySide(t *testing.T) {
	t.Parallel()
	var p storekit.Polls
	defer storekit.Hold(&p, "q")() // as the other polls of a busy queue would
	req := store.DequeueRequest{Queue: "q", Max: 10, Wait: time.Second}
	full := func() ([]store.Lease, error) { return make([]store.Lease, 10), nil }
	if _, err := p.Dequeue(context.Background(), req, full); err != nil {
		t.Fatal(err)
	}
	var asking atomic.Int64
	both := make(chan struct{})
	lease := func() ([]store.Lease, error) {
		if asking.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			return full()
		case <-time.After(10 * time.Second):
			return nil, errors.New("the polls of a busy queue asked one at a time")
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := p.Dequeue(context.Background(), req, lease); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
