package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// The job life cycle rules every store applies, kept here so they cannot
// drift apart between backends.

// Now is the store's clock: UTC, to the microsecond, which every backend
// can store exactly (so a time read back equals the time written).
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Check refuses a NewJob a store cannot create. The server fills defaults
// and validates user input before; this guards the store's own invariants.
func (nj NewJob) Check() error {
	switch {
	case nj.Queue == "":
		return Errorf(ErrInvalid, "job has no queue")
	case nj.Params == nil:
		return Errorf(ErrInvalid, "job has no params")
	case nj.Execution.GetBatching() == nil:
		return Errorf(ErrInvalid, "job has no execution config")
	case nj.MaxAttempts < 1:
		return Errorf(ErrInvalid, "max_attempts must be at least 1, got %d", nj.MaxAttempts)
	}
	return nil
}

// NewJobRecord builds a queued job with a new time-ordered id.
func NewJobRecord(nj NewJob, now time.Time) *spoolv1.Job {
	ts := timestamppb.New(now)
	return &spoolv1.Job{
		JobId:           uuid.Must(uuid.NewV7()).String(),
		Queue:           nj.Queue,
		State:           spoolv1.JobState_JOB_STATE_QUEUED,
		CreatedAt:       ts,
		UpdatedAt:       ts,
		Params:          nj.Params,
		ExecutionConfig: nj.Execution,
		RequestId:       nj.RequestID,
		MaxAttempts:     nj.MaxAttempts,
	}
}

// NewLeaseID returns a fresh random lease handle.
func NewLeaseID() string { return uuid.NewString() }

// CheckLease decides whether ref is the job's current lease: the job is
// running, on ref's attempt, under ref's lease handle.
func CheckLease(ref LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) error {
	switch {
	case IsFinal(state):
		return Errorf(ErrStaleLease, "job %s is already %s: stop working on it", ref.JobID, StateName(state))
	case attempt != ref.Attempt:
		return Errorf(ErrStaleLease, "lease of attempt %d of job %s is stale: the job is on attempt %d", ref.Attempt, ref.JobID, attempt)
	case state != spoolv1.JobState_JOB_STATE_RUNNING || leaseID != ref.LeaseID:
		return Errorf(ErrStaleLease, "lease of attempt %d of job %s has expired and was released", ref.Attempt, ref.JobID)
	}
	return nil
}

// CompletedState is the state a job is left in by its attempt's result.
// A job whose cancellation was requested ends CANCELLED unless it managed to
// succeed anyway.
func CompletedState(res *spoolv1.JobResult, cancelRequested bool) spoolv1.JobState {
	ok := res.GetExitCode() == 0 && res.GetError() == ""
	switch {
	case ok:
		return spoolv1.JobState_JOB_STATE_SUCCEEDED
	case cancelRequested:
		return spoolv1.JobState_JOB_STATE_CANCELLED
	}
	return spoolv1.JobState_JOB_STATE_FAILED
}

// CompletedResult is the result stored for a completion by attempt.
func CompletedResult(res *spoolv1.JobResult, attempt int32, now time.Time) *spoolv1.JobResult {
	out := &spoolv1.JobResult{
		ExitCode:   res.GetExitCode(),
		Error:      res.GetError(),
		StartedAt:  res.GetStartedAt(),
		FinishedAt: res.GetFinishedAt(),
		Attempt:    attempt,
	}
	if out.FinishedAt == nil {
		out.FinishedAt = timestamppb.New(now)
	}
	return out
}

// SameCompletion reports whether a Complete is a repeat of the one that
// finished the job: same attempt and lease (stores keep the lease handle of
// a completed job, and clear it when a job ends any other way). A repeat is
// a no-op rather than stale.
func SameCompletion(ref LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) bool {
	return IsFinal(state) && attempt == ref.Attempt && leaseID != "" && leaseID == ref.LeaseID
}

// CancelledResult is the result of a job cancelled before it started.
func CancelledResult(reason string, now time.Time) *spoolv1.JobResult {
	msg := "cancelled before it started"
	if reason != "" {
		msg += ": " + reason
	}
	return &spoolv1.JobResult{ExitCode: -1, Error: msg, FinishedAt: timestamppb.New(now)}
}

// ExpiredOutcome decides what happens to a running job whose lease ran out:
// it is cancelled if that was asked, failed when its attempts are used up,
// else queued again (final=false, res=nil).
func ExpiredOutcome(attempt, maxAttempts int32, cancelRequested bool, now time.Time) (spoolv1.JobState, *spoolv1.JobResult) {
	switch {
	case cancelRequested:
		return spoolv1.JobState_JOB_STATE_CANCELLED, &spoolv1.JobResult{ExitCode: -1, Attempt: attempt,
			Error: "cancelled; its worker stopped sending heartbeats before confirming", FinishedAt: timestamppb.New(now)}
	case attempt >= maxAttempts:
		return spoolv1.JobState_JOB_STATE_FAILED, &spoolv1.JobResult{ExitCode: -1, Attempt: attempt,
			Error:      fmt.Sprintf("lease expired on attempt %d of %d: the worker stopped sending heartbeats", attempt, maxAttempts),
			FinishedAt: timestamppb.New(now)}
	}
	return spoolv1.JobState_JOB_STATE_QUEUED, nil
}

// StateName is a state's short lower-case name ("running").
func StateName(s spoolv1.JobState) string {
	switch s {
	case spoolv1.JobState_JOB_STATE_QUEUED:
		return "queued"
	case spoolv1.JobState_JOB_STATE_RUNNING:
		return "running"
	case spoolv1.JobState_JOB_STATE_SUCCEEDED:
		return "succeeded"
	case spoolv1.JobState_JOB_STATE_FAILED:
		return "failed"
	case spoolv1.JobState_JOB_STATE_CANCELLED:
		return "cancelled"
	}
	return "unspecified"
}
