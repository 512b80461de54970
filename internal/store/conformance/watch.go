package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// testWaitsLeaveNothing: anyone may name a queue or a job, so waits on
// names nothing ever happens to (long polls of made-up queues, feeds of
// made-up job ids) and waits given up (a follower that goes away) must
// leave nothing in the store once they are over; a waiter is still woken.
func testWaitsLeaveNothing(t *testing.T, b Backend) {
	s := open(t, b)
	ctx := context.Background()
	// Each name a store kept would stay: a few thousand show it as well
	// as any number (the hub's own test takes 10,000).
	const n = 2_000
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		bad = append(bad, fmt.Sprintf(format, args...))
	}
	work := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range work {
				name := fmt.Sprintf("made-up-%d", i)
				ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: name, Max: 1, LeaseDuration: time.Minute, Wait: time.Millisecond})
				if err != nil || len(ls) > 0 {
					fail("Dequeue of queue %s: %d leases, %v", name, len(ls), err)
				}
				for _, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: name, Follow: true}).Events(ctx) {
					if !errors.Is(err, spool.ErrNotFound) {
						fail("feed of job %s: %v, want not found", name, err)
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d made-up names misbehaved, first: %s", len(bad), n, bad[0])
	}

	// A follower of a real job that goes away while waiting.
	l := runningJob(t, s, newJob(newQueue()))
	followCtx, leave := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		var last error
		for _, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: l.JobID, Follow: true}).Events(followCtx) {
			last = err
		}
		followed <- last
	}()
	// A change wakes a waiter, and the follower too: it is waiting.
	woken := s.Watch(ctx, l.JobID)
	if _, err := s.Cancel(ctx, l.JobID, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(30 * time.Second):
		t.Fatal("a watch was not woken by a change of its job")
	}
	leave()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("the follower ended with %v, want its context's end", err)
	}

	waitFor(t, "the store to let go of the waits that are over", func() bool { return b.Watching(s) == 0 })
}
