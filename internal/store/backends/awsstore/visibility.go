package awsstore

import (
	"context"
	"math"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store/storekit"
)

// SQS bounds a message's visibility timeout to 12 hours.
const maxVisibility = 12 * time.Hour

// clampVisibility keeps a lease length within what SQS can hide a message
// for.
func clampVisibility(d time.Duration) time.Duration {
	return min(max(d, time.Second), maxVisibility)
}

// visSeconds is a visibility timeout in SQS's whole seconds, rounded up so
// SQS never shows a message before spool's lease on it runs out.
func visSeconds(d time.Duration) int32 {
	return int32(min(math.Ceil(d.Seconds()), maxVisibility.Seconds()))
}

// hide makes a received message invisible for d. Failures are logged, not
// returned: the message shows up again sooner, which costs a receive, and
// DynamoDB still decides what happens to the job.
func (s *Store) hide(ctx context.Context, queueURL, handle string, d time.Duration) {
	if err := s.sqs.hides.do(ctx, queueURL, visChange{handle: handle, seconds: visSeconds(d)}); err != nil {
		s.log.Warn("could not change an SQS message's visibility", "queue_url", queueURL, "error", err)
	}
}

// drop deletes a message that has done its job (or never had one). Failures
// are logged, not returned: the message comes back, is seen to be about a
// finished or unknown job, and is deleted then.
func (s *Store) drop(ctx context.Context, queueURL, handle string) {
	if err := s.sqs.deletes.do(ctx, queueURL, handle); err != nil {
		s.log.Warn("could not delete an SQS message", "queue_url", queueURL, "error", err)
	}
}

// setAside deals with a message whose job needs nothing from it now, and
// reports whether it did: a final job's message is dropped (its work is
// done); a message for a job under a current lease (a duplicate delivery)
// is hidden until that lease ends. The dequeue and dead-letter paths share
// this, so both treat such messages alike.
func (s *Store) setAside(ctx context.Context, queueURL, handle string, r *jobRec, now time.Time) bool {
	switch {
	case convert.State(r.state).IsFinal():
		s.drop(ctx, queueURL, handle)
		return true
	case r.state == spoolv1.JobState_JOB_STATE_RUNNING && r.leaseExpires.After(now):
		s.hide(ctx, queueURL, handle, r.leaseExpires.Sub(now)+time.Second)
		return true
	case r.state == spoolv1.JobState_JOB_STATE_QUEUED && !storekit.Ready(r.view(), now):
		// A retry whose backoff has not passed (queued so by an older
		// version, which did not schedule retries).
		s.hide(ctx, queueURL, handle, r.book.GetRunAfter().AsTime().Sub(now))
		return true
	case storekit.Scheduled(r.view()):
		// The promotion's message, come before its write (see
		// PromoteScheduled). A job due that waits for no job is leased
		// at once, so a worker need not wait for the write; one that
		// does is looked at again once the promotion has decided.
		j := r.view()
		switch {
		case !storekit.Due(j, now):
			s.hide(ctx, queueURL, handle, j.GetRunAfter().AsTime().Sub(now))
			return true
		case waitsOnJobs(j):
			s.hide(ctx, queueURL, handle, unsettledRetry)
			return true
		}
	}
	return false
}
