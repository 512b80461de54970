package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/store"
)

// LeaseRetried leases all n jobs of queue and parts them: the one whose job
// may be retried (Retries 1) and the others, in the order leased. The
// stores' tests of a group of completions use it to settle a retry beside
// plain successes.
func LeaseRetried(tb testing.TB, s store.JobStore, queue string, n int) (retried store.Lease, others []store.Lease) {
	tb.Helper()
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: n, LeaseDuration: time.Minute})
	if err != nil || len(ls) != n {
		tb.Fatalf("leased %d jobs, %v; want %d", len(ls), err, n)
	}
	i := slices.IndexFunc(ls, func(l store.Lease) bool { return l.Job.GetRetries() == 1 })
	if i < 0 {
		tb.Fatal("the job with a retry was not leased")
	}
	return ls[i], slices.Delete(slices.Clone(ls), i, i+1)
}
