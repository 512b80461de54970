package storekit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/store"
)

// The job life cycle rules every store applies, kept here so they cannot
// drift apart between backends.

// Now is the store's clock: UTC, to the microsecond, which every backend
// can store exactly (so a time read back equals the time written).
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// NewJobRecord builds a queued job with a new time-ordered id, or a failed
// one when nj is rejected, or, for the logs of a source (an external job:
// nj.Params.External set), one running attempt 1 under
// store.ExternalLease, with no lease expiry.
func NewJobRecord(nj store.NewJob, now time.Time) *spoolv1.Job {
	ts := timestamppb.New(now)
	id := nj.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	j := &spoolv1.Job{
		JobId:           id,
		Queue:           nj.Queue,
		State:           spoolv1.JobState_JOB_STATE_QUEUED,
		CreatedAt:       ts,
		UpdatedAt:       ts,
		Params:          nj.Params,
		ExecutionConfig: nj.Execution,
		RequestId:       nj.RequestID,
		MaxAttempts:     nj.MaxAttempts,
		Retries:         nj.Retries,
		RerunOf:         nj.RerunOf,
		Priority:        cmp.Or(nj.Priority, store.DefaultPriority),
		After:           nj.After,
		Notify:          nj.Notify,
		Schedule:        nj.Schedule,
	}
	switch {
	case nj.Params.GetExternal() != nil:
		j.State, j.Attempt, j.StartedAt = spoolv1.JobState_JOB_STATE_RUNNING, 1, ts
	case nj.RejectReason != "":
		j.State = spoolv1.JobState_JOB_STATE_FAILED
		j.Result = &spoolv1.JobResult{ExitCode: -1, Error: nj.RejectReason, FinishedAt: ts}
		setNotifyDue(j, now)
	case nj.RunAfter.After(now) || len(nj.After) > 0:
		j.State = spoolv1.JobState_JOB_STATE_SCHEDULED
		if nj.RunAfter.After(now) {
			j.RunAfter = timestamppb.New(nj.RunAfter.UTC().Truncate(time.Microsecond))
		}
	}
	return j
}

// setNotifyDue makes a job that became final at now owe its webhooks, if
// it has any.
func setNotifyDue(j *spoolv1.Job, now time.Time) {
	if len(j.GetNotify()) > 0 {
		j.NotifyDue = timestamppb.New(now)
	}
}

// NamedRepeat decides an enqueue of j that met a job id in use, stored:
// only a job its caller names can (a new id is unique). A repeat of the
// stored job's request returns that job, as a request id seen before
// does; another request may not take the name.
func NamedRepeat(stored, j *spoolv1.Job) (*spoolv1.Job, error) {
	if j.GetRequestId() == "" || stored.GetRequestId() != j.GetRequestId() {
		return nil, apierr.Errorf(spool.ErrAlreadyExists, "a job with id %q exists already", j.GetJobId())
	}
	return stored, nil
}

// NewLeaseID returns a fresh random lease handle.
func NewLeaseID() string { return uuid.NewString() }

// CheckLease decides whether ref is the job's current lease: the job is
// running, on ref's attempt, under ref's lease handle.
func CheckLease(ref store.LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) error {
	switch {
	case convert.State(state).IsFinal():
		return apierr.Errorf(spool.ErrStaleLease, "job %s is already %s: stop working on it", ref.JobID, convert.State(state).String())
	case attempt != ref.Attempt:
		return apierr.Errorf(spool.ErrStaleLease, "lease of attempt %d of job %s is stale: the job is on attempt %d", ref.Attempt, ref.JobID, attempt)
	case state != spoolv1.JobState_JOB_STATE_RUNNING || leaseID != ref.LeaseID:
		return apierr.Errorf(spool.ErrStaleLease, "lease of attempt %d of job %s has expired and was released", ref.Attempt, ref.JobID)
	}
	return nil
}

// CheckAppend decides whether ref may append to the job's log: its lease is
// current, or it ran out and was settled (the job is queued again) but no
// later attempt has started, so the output of ref's attempt still goes
// before anything another attempt writes. A worker that was away while its
// lease expired can thus still deliver what its command printed.
func CheckAppend(ref store.LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) error {
	if state == spoolv1.JobState_JOB_STATE_QUEUED && attempt == ref.Attempt {
		return nil
	}
	return CheckLease(ref, state, attempt, leaseID)
}

// LostAttempts is how many of a job's attempts lost their lease (their
// worker vanished): the attempts started, less those whose command failed
// and was retried and those a stopping worker handed back. max_attempts
// bounds it.
func LostAttempts(j *spoolv1.Job) int32 {
	return j.GetAttempt() - j.GetRetriedAttempts() - j.GetReleasedAttempts()
}

// Outcome is what ending a lease does to its job: the state it leaves, the
// result when that state is final, and what changes in the job's
// bookkeeping. Stores compute it with Completed, Released or Expired and
// persist it; Apply shows what to write.
type Outcome struct {
	State  spoolv1.JobState
	Result *spoolv1.JobResult // set when State is final
	// RunAfter is when a retried job may be leased again (zero: at once).
	RunAfter time.Time
	// Retried and Released count the attempt in retried_attempts or
	// released_attempts.
	Retried, Released bool
	// Note, if set, is added to the job's notes.
	Note string
}

// Apply writes the outcome into j, a store's copy of the job, at now.
func (o Outcome) Apply(j *spoolv1.Job, now time.Time) {
	j.State = o.State
	j.Result = o.Result
	j.UpdatedAt = timestamppb.New(now)
	j.RunAfter = nil
	if !o.RunAfter.IsZero() {
		j.RunAfter = timestamppb.New(o.RunAfter)
	}
	if o.Retried {
		j.RetriedAttempts++
	}
	if o.Released {
		j.ReleasedAttempts++
	}
	if o.Note != "" {
		AddNote(j, o.Note)
	}
	if o.State != spoolv1.JobState_JOB_STATE_RUNNING {
		j.LeaseExpiresAt = nil
	}
	if convert.State(o.State).IsFinal() {
		setNotifyDue(j, now)
	}
}

// Retry backoff: the first retry waits RetryBase, each next one twice as
// long, at most RetryMax.
const (
	RetryBase = 2 * time.Second
	RetryMax  = 10 * time.Minute
)

// RetryDelay is how long the n-th retry (from 1) waits.
func RetryDelay(n int32) time.Duration {
	d := RetryBase
	for i := int32(1); i < n && d < RetryMax; i++ {
		d *= 2
	}
	return min(d, RetryMax)
}

// Completed decides what an attempt's result does to its job (j as stored,
// still running that attempt). A success succeeds. A job whose cancellation
// was requested ends CANCELLED unless it managed to succeed anyway. A
// failure is retried while the job has retries left, after RetryDelay
// (SCHEDULED until then, holding no worker); otherwise it fails.
func Completed(j *spoolv1.Job, res *spoolv1.JobResult, attempt int32, now time.Time) Outcome {
	ok := res.GetExitCode() == 0 && res.GetError() == ""
	out := completedResult(res, attempt, now)
	switch {
	case ok:
		return Outcome{State: spoolv1.JobState_JOB_STATE_SUCCEEDED, Result: out}
	case j.GetCancelRequested():
		out.Error = cancelMessage(j.GetCancelReason())
		return Outcome{State: spoolv1.JobState_JOB_STATE_CANCELLED, Result: out}
	case j.GetRetriedAttempts() < j.GetRetries():
		n := j.GetRetriedAttempts() + 1
		delay := RetryDelay(n)
		return Outcome{State: spoolv1.JobState_JOB_STATE_SCHEDULED, RunAfter: now.Add(delay), Retried: true,
			Note: fmt.Sprintf("attempt %d failed (%s); retry %d of %d in %s", attempt, failure(res), n, j.GetRetries(), delay)}
	}
	return Outcome{State: spoolv1.JobState_JOB_STATE_FAILED, Result: out}
}

// failure says briefly how a command failed.
func failure(res *spoolv1.JobResult) string {
	if res.GetError() != "" {
		return res.GetError()
	}
	return fmt.Sprintf("exit code %d", res.GetExitCode())
}

func cancelMessage(reason string) string {
	if reason == "" {
		return "cancelled"
	}
	return "cancelled: " + reason
}

// completedResult is the result stored for a completion by attempt.
func completedResult(res *spoolv1.JobResult, attempt int32, now time.Time) *spoolv1.JobResult {
	out := &spoolv1.JobResult{
		ExitCode:   res.GetExitCode(),
		Error:      res.GetError(),
		StartedAt:  res.GetStartedAt(),
		FinishedAt: res.GetFinishedAt(),
		Attempt:    attempt,
		Output:     res.GetOutput(),
	}
	if out.FinishedAt == nil {
		out.FinishedAt = timestamppb.New(now)
	}
	return out
}

// Released decides what handing an attempt back does to its job (j as
// stored, still running that attempt). The job is queued again at once; the
// attempt counts against nothing unless countAttempt is set (its command
// died with a previous worker: that is a lost lease). A job whose
// cancellation was requested is cancelled instead, and one whose lost
// attempts are used up fails.
func Released(j *spoolv1.Job, countAttempt bool, reason string, now time.Time) Outcome {
	if j.GetCancelRequested() {
		return Outcome{State: spoolv1.JobState_JOB_STATE_CANCELLED, Result: &spoolv1.JobResult{ExitCode: -1, Attempt: j.GetAttempt(),
			Error: cancelMessage(j.GetCancelReason()), FinishedAt: timestamppb.New(now)}}
	}
	if countAttempt {
		if o := expired(j, now); convert.State(o.State).IsFinal() {
			return o
		}
	}
	note := fmt.Sprintf("attempt %d handed back by its worker", j.GetAttempt())
	if reason != "" {
		note += ": " + reason
	}
	return Outcome{State: spoolv1.JobState_JOB_STATE_QUEUED, Released: !countAttempt, Note: note}
}

// CheckFinish says what a store.Finisher's Finish does for ref on a job in
// state, on attempt, under leaseID: answer a repeat of the completion that
// finished the job with the job as it is (repeat), go on under a lease
// that may still append (nil), or refuse.
func CheckFinish(ref store.LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) (repeat bool, err error) {
	if SameCompletion(ref, state, attempt, leaseID) {
		return true, nil
	}
	return false, CheckAppend(ref, state, attempt, leaseID)
}

// SameCompletion reports whether a Complete is a repeat of the one that
// finished the job: same attempt and lease (stores keep the lease handle of
// a completed job, and clear it when a job ends any other way). A repeat is
// a no-op rather than stale.
func SameCompletion(ref store.LeaseRef, state spoolv1.JobState, attempt int32, leaseID string) bool {
	return convert.State(state).IsFinal() && attempt == ref.Attempt && leaseID != "" && leaseID == ref.LeaseID
}

// CancelledResult is the result of a job cancelled before it started.
func CancelledResult(reason string, now time.Time) *spoolv1.JobResult {
	msg := "cancelled before it started"
	if reason != "" {
		msg += ": " + reason
	}
	return &spoolv1.JobResult{ExitCode: -1, Error: msg, FinishedAt: timestamppb.New(now)}
}

// Expired decides what happens to a running job (j as stored) whose lease
// ran out: it is cancelled if that was asked, failed when its lost attempts
// are used up, else queued again.
func Expired(j *spoolv1.Job, now time.Time) Outcome {
	if j.GetCancelRequested() {
		return Outcome{State: spoolv1.JobState_JOB_STATE_CANCELLED, Result: &spoolv1.JobResult{ExitCode: -1, Attempt: j.GetAttempt(),
			Error: cancelMessage(j.GetCancelReason()) + "; its worker stopped sending heartbeats before confirming", FinishedAt: timestamppb.New(now)}}
	}
	return expired(j, now)
}

func expired(j *spoolv1.Job, now time.Time) Outcome {
	if lost := LostAttempts(j); lost >= j.GetMaxAttempts() {
		msg := fmt.Sprintf("lease expired on attempt %d of %d: the worker stopped sending heartbeats", lost, j.GetMaxAttempts())
		if lost != j.GetAttempt() {
			msg += fmt.Sprintf(" (attempt %d in all, counting retries and attempts handed back)", j.GetAttempt())
		}
		return Outcome{State: spoolv1.JobState_JOB_STATE_FAILED, Result: &spoolv1.JobResult{ExitCode: -1, Attempt: j.GetAttempt(),
			Error: msg, FinishedAt: timestamppb.New(now)}}
	}
	return Outcome{State: spoolv1.JobState_JOB_STATE_QUEUED}
}

// Notes are bounded, so a job reported on again and again stays small.
const (
	MaxNotes    = 50
	MaxNoteSize = 1000
)

// AddNote adds a note to a job's notes, shortened to MaxNoteSize; past
// MaxNotes the oldest notes (after the first) give way.
func AddNote(j *spoolv1.Job, note string) {
	if len(note) > MaxNoteSize {
		note = strings.ToValidUTF8(note[:MaxNoteSize], "") + "…"
	}
	j.Notes = append(j.Notes, note)
	if len(j.Notes) > MaxNotes {
		j.Notes = append(j.Notes[:1], j.Notes[len(j.Notes)-MaxNotes+1:]...)
	}
}

// Ready reports whether a job may be leased at now: it is queued, and not
// before its run_after (a job queued with a retry's backoff by an older
// version of spool, which did not schedule retries).
func Ready(j *spoolv1.Job, now time.Time) bool {
	return j.GetState() == spoolv1.JobState_JOB_STATE_QUEUED && (j.GetRunAfter() == nil || !j.GetRunAfter().AsTime().After(now))
}

// Bookkeeping is the part of a job beyond its spec, state and result: the
// counters, the retry time, the cancel reason, the notes and the rerun
// links its lease endings and notes change, and the timing and webhook
// fields (priority, after and followers, schedule, notify, deliveries,
// notify_due). Stores that keep these fields together store this message;
// for most jobs it is empty.
func Bookkeeping(j *spoolv1.Job) *spoolv1.Job {
	return &spoolv1.Job{RetriedAttempts: j.GetRetriedAttempts(), ReleasedAttempts: j.GetReleasedAttempts(),
		RunAfter: j.GetRunAfter(), CancelReason: j.GetCancelReason(), Notes: j.GetNotes(),
		RerunOf: j.GetRerunOf(), Reruns: j.GetReruns(),
		Priority: storedPriority(j.GetPriority()), After: j.GetAfter(), Followers: j.GetFollowers(), Schedule: j.GetSchedule(),
		Notify: j.GetNotify(), Deliveries: j.GetDeliveries(), NotifyDue: j.GetNotifyDue()}
}

// storedPriority leaves the default priority out of what is stored.
func storedPriority(p int32) int32 {
	if p == store.DefaultPriority {
		return 0
	}
	return p
}

// SetBookkeeping copies the fields Bookkeeping holds from b into j. A job
// stored before priorities existed reads as DefaultPriority.
func SetBookkeeping(j, b *spoolv1.Job) {
	j.RetriedAttempts, j.ReleasedAttempts, j.RunAfter, j.CancelReason, j.Notes =
		b.GetRetriedAttempts(), b.GetReleasedAttempts(), b.GetRunAfter(), b.GetCancelReason(), b.GetNotes()
	j.RerunOf, j.Reruns = b.GetRerunOf(), b.GetReruns()
	j.Priority, j.After, j.Followers, j.Schedule = cmp.Or(b.GetPriority(), store.DefaultPriority), b.GetAfter(), b.GetFollowers(), b.GetSchedule()
	j.Notify, j.Deliveries, j.NotifyDue = b.GetNotify(), b.GetDeliveries(), b.GetNotifyDue()
}

// MaxReruns is how many rerun links a job keeps: the newest.
const MaxReruns = 100

// AddRerun records that rerunID runs j again, once per id; past MaxReruns
// the oldest links give way. It reports whether j changed.
func AddRerun(j *spoolv1.Job, rerunID string) bool {
	if slices.Contains(j.Reruns, rerunID) {
		return false
	}
	j.Reruns = append(j.Reruns, rerunID)
	if len(j.Reruns) > MaxReruns {
		j.Reruns = slices.Delete(j.Reruns, 0, len(j.Reruns)-MaxReruns)
	}
	return true
}

// NotFinished is the error for deleting a job that is still queued or
// running: the same words from every store.
func NotFinished(id string, state spoolv1.JobState) error {
	return apierr.Errorf(spool.ErrConflict, "job %s is %s: only a finished job can be deleted; cancel it first",
		id, convert.State(state).String())
}
