package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// Shared tells RunShared how to get two stores on the same data, as two
// servers sharing one database would have.
type Shared struct {
	// Pair returns two stores on the same new, empty data; the suite closes
	// them.
	Pair func(t *testing.T) (a, b store.JobStore)
	// Polling says how the stores' dequeues wait, for the wake-up tests.
	Polling Polling
}

// RunShared runs the tests of a store that several servers share: what one
// server writes, the others see, wait on and never take twice.
func RunShared(t *testing.T, sh Shared) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, a, b store.JobStore)
	}{
		{"FollowerOnAnotherServerSeesEverything", testSharedFeed},
		{"DequeueRaceNeverTwoHolders", testSharedDequeueRace},
		{"LongPollWokenByAnotherServer", func(t *testing.T, a, b store.JobStore) { testSharedLongPoll(t, sh.Polling, a, b) }},
		{"ReapersOnEveryServer", testSharedReapers},
		{"GraceAfterAGapSeenByAnother", testSharedGraceAfterAGap},
		{"RevocationSeenEverywhere", testSharedRevocation},
		{"SpentSeenEverywhere", testSharedSpent},
		{"IngestRaceOneJob", testSharedIngestRace},
		{"PollersSeenEverywhere", testSharedPollers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := sh.Pair(t)
			t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
			tc.fn(t, a, b)
		})
	}
}

// testSharedFeed: followers on b, from the start and from a line not yet
// written, see what a worker writes through a, live, with no gap and no
// repeat, and end when the job does.
func testSharedFeed(t *testing.T, a, b store.JobStore) {
	l := runningJob(t, a, newJob(newQueue()))
	h, err := a.Append(context.Background(), l.LeaseRef, events.Messages(startEvent(1)))
	if err != nil {
		t.Fatal(err)
	}
	whole := follow(b, storekit.FeedRequest{JobID: l.JobID}, 0)
	ahead := follow(b, storekit.FeedRequest{JobID: l.JobID, FromLine: 700}, 0)
	h = writeLines(t, a, l, h, 1000, 7, time.Millisecond)
	finish(t, a, l, h)
	whole.wait(t)
	wantContiguous(t, whole.evs, 1, 1002)
	ahead.wait(t)
	wantContiguous(t, ahead.evs, 701, 1002)
}

// testSharedDequeueRace: workers on both servers dequeue one queue at once;
// every job is leased exactly once.
func testSharedDequeueRace(t *testing.T, a, b store.JobStore) {
	q := newQueue()
	const jobs = 200
	for range jobs {
		enqueue(t, a, newJob(q))
	}
	var (
		mu     sync.Mutex
		leased = map[string]int{}
		wg     sync.WaitGroup
	)
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for {
				ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: 3, LeaseDuration: time.Minute})
				if err != nil {
					t.Errorf("Dequeue: %v", err)
					return
				}
				if len(ls) == 0 {
					return
				}
				mu.Lock()
				for _, l := range ls {
					leased[l.JobID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(leased) != jobs {
		t.Fatalf("%d of %d jobs leased", len(leased), jobs)
	}
	for id, n := range leased {
		if n != 1 {
			t.Fatalf("job %s leased %d times", id, n)
		}
	}
}

// testSharedLongPoll: a dequeue waiting on b is woken by an enqueue
// through a, well before b would look again by itself.
func testSharedLongPoll(t *testing.T, p Polling, a, b store.JobStore) {
	slowPolls(t, p, a, b)
	wantWoken(t, p, b, a)
}

// testSharedReapers: both servers expire leases at once; every expired job
// is settled once (queued again for its second attempt, not twice).
func testSharedReapers(t *testing.T, a, b store.JobStore) {
	q := newQueue()
	var ids []string
	for range 40 {
		ids = append(ids, enqueue(t, a, newJob(q)).GetJobId())
	}
	var leases []store.Lease
	for len(leases) < len(ids) {
		ls, err := a.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: shortLease})
		if err != nil || len(ls) == 0 {
			t.Fatalf("Dequeue: %d leases, %v", len(ls), err)
		}
		leases = append(leases, ls...)
	}
	runOut(leases...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, s := range []store.JobStore{a, b, a, b} {
		wg.Go(func() {
			n, err := s.ExpireLeases(context.Background(), Sweep)
			if err != nil {
				t.Errorf("ExpireLeases: %v", err)
			}
			mu.Lock()
			total += n.Settled
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 40 {
		t.Fatalf("the reapers settled %d leases between them, want 40", total)
	}
	for _, id := range ids {
		j := get(t, b, id)
		wantState(t, j, spoolv1.JobState_JOB_STATE_QUEUED)
		if j.GetAttempt() != 1 {
			t.Fatalf("job %s on attempt %d after one expiry", id, j.GetAttempt())
		}
	}
}

// testSharedRevocation: a key revoked through one server is revoked on the
// other at once.
func testSharedRevocation(t *testing.T, a, b store.JobStore) {
	k := newKey("shared-"+newQueue(), spoolv1.KeyRole_KEY_ROLE_SUBMIT)
	if err := a.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if got, err := b.KeyByHash(context.Background(), k.Hash); err != nil || got.Key.GetRevokedAt() != nil {
		t.Fatalf("the other server reads the new key as %v, %v", got.Key, err)
	}
	if _, err := a.RevokeKey(context.Background(), k.Key.GetName(), time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := b.KeyByHash(context.Background(), k.Hash)
	if err != nil || got.Key.GetRevokedAt() == nil {
		t.Fatalf("after revocation, the other server reads the key as %v, %v", got.Key, err)
	}
	_, err = b.KeyByHash(context.Background(), "no-such-hash")
	wantErr(t, err, spool.ErrNotFound, "an unknown key")
}
