package storekit

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// The rules of SCHEDULED jobs, their followers and their webhooks, which
// every store applies.

// Scheduled reports whether a job waits for its time or for other jobs.
func Scheduled(j *spoolv1.Job) bool {
	return j.GetState() == spoolv1.JobState_JOB_STATE_SCHEDULED
}

// Due reports whether a scheduled job's time has come at now (its
// after jobs aside).
func Due(j *spoolv1.Job, now time.Time) bool {
	return j.GetRunAfter() == nil || !j.GetRunAfter().AsTime().After(now)
}

// Waiting is what a scheduled job waits for, given the states of the jobs
// it runs after (missing: a job that no longer exists).
type Waiting int

const (
	// WaitOn: its time has not come, or an after job is not final yet.
	WaitOn Waiting = iota
	// WaitDone: due, and every after job succeeded: queue it.
	WaitDone
	// WaitBroken: an after job failed, was cancelled or is gone: cancel
	// it (AfterFailed says with what).
	WaitBroken
)

// Decide says what becomes of scheduled job j at now, given its after
// jobs as stored (parents[id]; absent: gone). A broken chain cancels the
// job even before its time: nothing it waits for can come.
func Decide(j *spoolv1.Job, parents map[string]*spoolv1.Job, now time.Time) (Waiting, string) {
	pending := false
	for _, id := range j.GetAfter() {
		p, ok := parents[id]
		if !ok {
			return WaitBroken, id
		}
		switch p.GetState() {
		case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		case spoolv1.JobState_JOB_STATE_FAILED, spoolv1.JobState_JOB_STATE_CANCELLED:
			return WaitBroken, id
		default:
			pending = true
		}
	}
	if pending || !Due(j, now) {
		return WaitOn, ""
	}
	return WaitDone, ""
}

// AfterFailed is the outcome of a scheduled job one of whose after jobs,
// parent (nil: it no longer exists, by the id parentID), ended without
// success: the job is cancelled, saying which and how.
func AfterFailed(parentID string, parent *spoolv1.Job, now time.Time) Outcome {
	why := "was deleted"
	if parent != nil {
		why = convert.State(parent.GetState()).String()
	}
	return Outcome{State: spoolv1.JobState_JOB_STATE_CANCELLED, Result: &spoolv1.JobResult{ExitCode: -1,
		Error: fmt.Sprintf("cancelled before it started: job %s, which it runs after, %s", parentID, why), FinishedAt: timestamppb.New(now)}}
}

// Promote is the outcome of a scheduled job whose time came and whose
// after jobs all succeeded: it is queued.
func Promote() Outcome {
	return Outcome{State: spoolv1.JobState_JOB_STATE_QUEUED}
}

// AddFollower records on j that followerID runs after it, once per id;
// past store.MaxFollowers the oldest give way. It reports whether j
// changed.
func AddFollower(j *spoolv1.Job, followerID string) bool {
	if slices.Contains(j.Followers, followerID) {
		return false
	}
	j.Followers = append(j.Followers, followerID)
	if len(j.Followers) > store.MaxFollowers {
		j.Followers = slices.Delete(j.Followers, 0, len(j.Followers)-store.MaxFollowers)
	}
	return true
}

// AddDeliveries adds ds to j's deliveries and sets its notify_due to next
// (zero: unset); past store.MaxDeliveries the oldest give way.
func AddDeliveries(j *spoolv1.Job, ds []*spoolv1.Delivery, next time.Time) {
	j.Deliveries = append(j.Deliveries, ds...)
	if len(j.Deliveries) > store.MaxDeliveries {
		j.Deliveries = slices.Delete(j.Deliveries, 0, len(j.Deliveries)-store.MaxDeliveries)
	}
	j.NotifyDue = nil
	if !next.IsZero() {
		j.NotifyDue = timestamppb.New(next)
	}
}

// CancelBeforeStart is the outcome of cancelling a job no worker holds
// (queued or scheduled): cancelled at once.
func CancelBeforeStart(reason string, now time.Time) Outcome {
	return Outcome{State: spoolv1.JobState_JOB_STATE_CANCELLED, Result: CancelledResult(reason, now)}
}
