package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// Polling tells the wake-up tests how a backend's dequeues wait.
type Polling struct {
	// SetInterval, for stores whose waiting dequeues also look again on a
	// timer (storekit.Polls), sets that timer's interval; the suite calls
	// it before any dequeue. Nil for stores that wait in one call to
	// something else (SQS's long poll, up to 20 s).
	SetInterval func(s store.JobStore, d time.Duration)
	// Waiting is how many dequeues of queue are waiting on s at this
	// moment. Required: a wake-up can only be told from a dequeue that
	// finds the job at once if the job arrives after the dequeue waits.
	Waiting func(s store.JobStore, queue string) int
}

// wokenWithin is how soon after an enqueue a waiting dequeue must have the
// job: far under the hour the wake-up tests let timed polls sleep and half
// SQS's 20 s long poll, so that only a wake-up gets it there in time, and
// far over what a wake-up takes on a loaded machine (the AWS test servers,
// busy with a whole suite, take seconds).
const wokenWithin = 10 * time.Second

// slowPolls makes the dequeues of stores look again unprompted only once an
// hour: what a test then sees arrive in time, a wake-up brought.
func slowPolls(t *testing.T, p Polling, stores ...store.JobStore) {
	t.Helper()
	if p.Waiting == nil {
		t.Fatal("the backend does not say when its dequeues wait (Polling.Waiting): its wake-ups cannot be tested")
	}
	if p.SetInterval != nil {
		for _, s := range stores {
			p.SetInterval(s, time.Hour)
		}
	}
}

// wantWoken starts a dequeue on waiter, enqueues a job through enqueuer
// once that dequeue waits, and fails unless the dequeue returns the job
// within wokenWithin. The stores' polls must be slow (slowPolls).
func wantWoken(t *testing.T, p Polling, waiter, enqueuer store.JobStore) {
	t.Helper()
	q := newQueue()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		ls  []store.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		ls, err := waiter.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: time.Minute})
		got <- result{ls, err}
	}()
	var r result
	done := false
	defer func() {
		cancel()
		if !done {
			<-got
		}
	}()
	waitFor(t, "the dequeue to wait", func() bool { return p.Waiting(waiter, q) > 0 })
	j := enqueue(t, enqueuer, newJob(q))
	select {
	case r = <-got:
		done = true
	case <-time.After(wokenWithin):
		t.Fatalf("a dequeue waiting when a job was enqueued still waited %v later: the enqueue did not wake it", wokenWithin)
	}
	if r.err != nil || len(r.ls) != 1 || r.ls[0].JobID != j.GetJobId() {
		t.Fatalf("the woken dequeue returned %d leases (%v), want job %s", len(r.ls), r.err, j.GetJobId())
	}
}

// waitFor waits until cond holds, failing after 30 s. It looks every few
// milliseconds: for a state that nothing signals, such as another
// goroutine's call having started to wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
