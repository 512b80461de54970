// Package convert turns the wire's messages (gen/spool/v1) into spool's
// own Go types (package spool) and back. It is the one place where the two
// meet: the public packages hand users spool's types, and a change to a
// .proto file is a change here, not to the Go API.
//
// Functions are named by what they return: Job makes a spool.Job from a
// message, JobProto the message from a spool.Job. Unset messages become
// zero values (a nil timestamp is the zero time.Time, a nil duration 0) and
// zero values unset messages, so a round trip gives back what it was given.
package convert

import (
	"reflect"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// The enums of package spool number their values as the wire does (a test
// holds them to it), so converting one is a conversion of its number.

// State is the job state s.
func State(s spoolv1.JobState) spool.State { return spool.State(s) }

// StateProto is the wire's job state s.
func StateProto(s spool.State) spoolv1.JobState { return spoolv1.JobState(s) }

// StatesProto are the wire's job states ss.
func StatesProto(ss []spool.State) []spoolv1.JobState {
	if ss == nil {
		return nil
	}
	out := make([]spoolv1.JobState, len(ss))
	for i, s := range ss {
		out[i] = StateProto(s)
	}
	return out
}

// Role is the key role r.
func Role(r spoolv1.KeyRole) spool.Role { return spool.Role(r) }

// RoleProto is the wire's key role r.
func RoleProto(r spool.Role) spoolv1.KeyRole { return spoolv1.KeyRole(r) }

// ScatterState is the scatter state s.
func ScatterState(s spoolv1.ScatterState) spool.ScatterState { return spool.ScatterState(s) }

// ScatterStateProto is the wire's scatter state s.
func ScatterStateProto(s spool.ScatterState) spoolv1.ScatterState { return spoolv1.ScatterState(s) }

// Stream is the output stream s.
func Stream(s spoolv1.StreamType) spool.Stream { return spool.Stream(s) }

// Job is the job j (nil for nil).
func Job(j *spoolv1.Job) *spool.Job {
	if j == nil {
		return nil
	}
	return &spool.Job{
		ID: j.GetJobId(), Queue: j.GetQueue(), State: State(j.GetState()),
		CreatedAt: timeOf(j.GetCreatedAt()), UpdatedAt: timeOf(j.GetUpdatedAt()), StartedAt: timeOf(j.GetStartedAt()),
		Params: Params(j.GetParams()), Execution: execution(j.GetExecutionConfig()),
		RequestID: j.GetRequestId(), Attempt: int(j.GetAttempt()), MaxAttempts: int(j.GetMaxAttempts()),
		Retries: int(j.GetRetries()), RetriedAttempts: int(j.GetRetriedAttempts()), ReleasedAttempts: int(j.GetReleasedAttempts()),
		CancelRequested: j.GetCancelRequested(), CancelReason: j.GetCancelReason(), Result: result(j.GetResult()),
		LeaseExpiresAt: timeOf(j.GetLeaseExpiresAt()), RunAfter: timeOf(j.GetRunAfter()),
		LastSequence: j.GetLastSequence(), LineCount: j.GetLineCount(), Notes: j.GetNotes(),
		RerunOf: j.GetRerunOf(), Reruns: j.GetReruns(),
		Priority: int(j.GetPriority()), After: j.GetAfter(), Followers: j.GetFollowers(), Schedule: j.GetSchedule(),
		Notify: j.GetNotify(), Deliveries: deliveries(j.GetDeliveries()), NotifyDue: timeOf(j.GetNotifyDue()),
	}
}

// Jobs are the jobs js.
func Jobs(js []*spoolv1.Job) []*spool.Job {
	out := make([]*spool.Job, len(js))
	for i, j := range js {
		out[i] = Job(j)
	}
	return out
}

// JobProto is the wire's job j (nil for nil).
func JobProto(j *spool.Job) *spoolv1.Job {
	if j == nil {
		return nil
	}
	return &spoolv1.Job{
		JobId: j.ID, Queue: j.Queue, State: StateProto(j.State),
		CreatedAt: stamp(j.CreatedAt), UpdatedAt: stamp(j.UpdatedAt), StartedAt: stamp(j.StartedAt),
		Params: paramsProto(j.Params), ExecutionConfig: executionProto(j.Execution),
		RequestId: j.RequestID, Attempt: int32(j.Attempt), MaxAttempts: int32(j.MaxAttempts),
		Retries: int32(j.Retries), RetriedAttempts: int32(j.RetriedAttempts), ReleasedAttempts: int32(j.ReleasedAttempts),
		CancelRequested: j.CancelRequested, CancelReason: j.CancelReason, Result: resultProto(j.Result),
		LeaseExpiresAt: stamp(j.LeaseExpiresAt), RunAfter: stamp(j.RunAfter),
		LastSequence: j.LastSequence, LineCount: j.LineCount, Notes: j.Notes,
		RerunOf: j.RerunOf, Reruns: j.Reruns,
		Priority: int32(j.Priority), After: j.After, Followers: j.Followers, Schedule: j.Schedule,
		Notify: j.Notify, Deliveries: deliveriesProto(j.Deliveries), NotifyDue: stamp(j.NotifyDue),
	}
}

func deliveries(ds []*spoolv1.Delivery) []spool.Delivery {
	if ds == nil {
		return nil
	}
	out := make([]spool.Delivery, len(ds))
	for i, d := range ds {
		out[i] = spool.Delivery{ID: d.GetDeliveryId(), URL: d.GetUrl(), Try: int(d.GetTry()), At: timeOf(d.GetAt()),
			Status: int(d.GetStatus()), Error: d.GetError(), Took: durationOf(d.GetTook()), Delivered: d.GetDelivered(), GivenUp: d.GetGivenUp()}
	}
	return out
}

func deliveriesProto(ds []spool.Delivery) []*spoolv1.Delivery {
	if ds == nil {
		return nil
	}
	out := make([]*spoolv1.Delivery, len(ds))
	for i, d := range ds {
		out[i] = &spoolv1.Delivery{DeliveryId: d.ID, Url: d.URL, Try: int32(d.Try), At: stamp(d.At),
			Status: int32(d.Status), Error: d.Error, Took: durationProto(d.Took), Delivered: d.Delivered, GivenUp: d.GivenUp}
	}
	return out
}

// Params is what a job runs, p.
func Params(p *spoolv1.JobParams) spool.JobParams {
	out := spool.JobParams{
		Argv: p.GetArgv(), Script: p.GetScript(), Env: p.GetEnv(), SecretNames: p.GetSecretNames(),
		WorkingDir: p.GetWorkingDir(), Timeout: durationOf(p.GetTimeout()), Repository: p.GetRepositoryUrl(), Ref: p.GetRef(),
		Stdin: p.GetStdin(), StdinSize: p.GetStdinSize(), StdinSHA256: p.GetStdinSha256(), StdinUpload: p.GetStdinUpload(), PTY: p.GetPty(), Artifacts: p.GetArtifacts(),
	}
	if m := p.GetScatter(); m != nil {
		out.Scatter = &spool.ScatterMember{ScatterID: m.GetScatterId(), BatchIndex: int(m.GetBatchIndex()),
			BatchCount: int(m.GetBatchCount()), ItemCount: int(m.GetItemCount()), Gather: m.GetGather()}
	}
	if x := p.GetExternal(); x != nil {
		out.External = &spool.External{Source: x.GetSource()}
	}
	if b := p.GetBatching(); b != nil {
		out.Batching = spool.Batching{FlushInterval: durationOf(b.GetFlushInterval()), MaxBatchSize: int(b.GetMaxBatchSize())}
	}
	return out
}

// ParamsProto is the wire's JobParams of p. A zero timeout is left
// unset; any other, negative ones included, is sent for the server to
// judge.
func ParamsProto(p spool.JobParams) *spoolv1.JobParams {
	out := &spoolv1.JobParams{
		Argv: p.Argv, Script: p.Script, Env: p.Env, SecretNames: p.SecretNames, WorkingDir: p.WorkingDir,
		RepositoryUrl: p.Repository, Ref: p.Ref, Stdin: p.Stdin, StdinSize: p.StdinSize, StdinSha256: p.StdinSHA256, StdinUpload: p.StdinUpload, Pty: p.PTY, Artifacts: p.Artifacts,
	}
	if p.Timeout != 0 {
		out.Timeout = durationpb.New(p.Timeout)
	}
	if m := p.Scatter; m != nil {
		out.Scatter = &spoolv1.ScatterMember{ScatterId: m.ScatterID, BatchIndex: int32(m.BatchIndex),
			BatchCount: int32(m.BatchCount), ItemCount: int32(m.ItemCount), Gather: m.Gather}
	}
	if x := p.External; x != nil {
		out.External = &spoolv1.External{Source: x.Source}
	}
	if b := p.Batching; b != (spool.Batching{}) {
		out.Batching = &spoolv1.JobBatching{MaxBatchSize: int32(b.MaxBatchSize)}
		if b.FlushInterval != 0 {
			out.Batching.FlushInterval = durationpb.New(b.FlushInterval)
		}
	}
	return out
}

// paramsProto is ParamsProto, unset when a job has no params.
func paramsProto(p spool.JobParams) *spoolv1.JobParams {
	if reflect.ValueOf(p).IsZero() {
		return nil
	}
	return ParamsProto(p)
}

func execution(e *spoolv1.ExecutionConfig) spool.Execution {
	b := e.GetBatching()
	return spool.Execution{
		FlushInterval: FlushInterval(b),
		MaxBatchSize:  int(b.GetMaxBatchSize()), MaxBatchBytes: b.GetMaxBatchBytes(),
		PlaybackInterval:  time.Duration(b.GetPlaybackIntervalMillis()) * time.Millisecond,
		HeartbeatInterval: time.Duration(e.GetHeartbeatIntervalSeconds()) * time.Second,
	}
}

func executionProto(e spool.Execution) *spoolv1.ExecutionConfig {
	if e == (spool.Execution{}) {
		return nil
	}
	out := &spoolv1.ExecutionConfig{HeartbeatIntervalSeconds: int32(e.HeartbeatInterval / time.Second)}
	b := &spoolv1.BatchingConfig{MaxBatchSize: int32(e.MaxBatchSize),
		MaxBatchBytes: e.MaxBatchBytes, PlaybackIntervalMillis: int32(e.PlaybackInterval / time.Millisecond)}
	SetFlushInterval(b, e.FlushInterval)
	if b.FlushIntervalSeconds != 0 || b.MaxBatchSize != 0 || b.MaxBatchBytes != 0 || b.PlaybackIntervalMillis != 0 {
		out.Batching = b
	}
	return out
}

func result(r *spoolv1.JobResult) *spool.Result {
	if r == nil {
		return nil
	}
	out := &spool.Result{ExitCode: int(r.GetExitCode()), Error: r.GetError(), StartedAt: timeOf(r.GetStartedAt()),
		FinishedAt: timeOf(r.GetFinishedAt()), Attempt: int(r.GetAttempt())}
	if o := r.GetOutput(); o != "" {
		out.Output = []byte(o)
	}
	return out
}

func resultProto(r *spool.Result) *spoolv1.JobResult {
	if r == nil {
		return nil
	}
	return &spoolv1.JobResult{ExitCode: int32(r.ExitCode), Error: r.Error, StartedAt: stamp(r.StartedAt),
		FinishedAt: stamp(r.FinishedAt), Attempt: int32(r.Attempt), Output: string(r.Output)}
}

// Queue is the queue q (nil for nil).
func Queue(q *spoolv1.Queue) *spool.Queue {
	if q == nil {
		return nil
	}
	out := &spool.Queue{Name: q.GetName(), Paused: q.GetPaused(), PausedAt: timeOf(q.GetPausedAt()),
		Scheduled: int(q.GetScheduled()), MaxRunning: int(q.GetMaxRunning()), Queued: int(q.GetQueued()), Running: int(q.GetRunning()), Succeeded: int(q.GetSucceeded()), Failed: int(q.GetFailed()),
		Cancelled: int(q.GetCancelled()), OldestQueuedAt: timeOf(q.GetOldestQueuedAt()), Workers: int(q.GetWorkers())}
	for _, m := range q.GetEndedPerMinute() {
		out.EndedPerMinute = append(out.EndedPerMinute, spool.EndedMinute{Minute: timeOf(m.GetMinute()),
			Succeeded: int(m.GetSucceeded()), Failed: int(m.GetFailed()), Cancelled: int(m.GetCancelled())})
	}
	return out
}

// Queues are the queues qs.
func Queues(qs []*spoolv1.Queue) []*spool.Queue {
	out := make([]*spool.Queue, len(qs))
	for i, q := range qs {
		out[i] = Queue(q)
	}
	return out
}

// QueueProto is the wire's queue q (nil for nil).
func QueueProto(q *spool.Queue) *spoolv1.Queue {
	if q == nil {
		return nil
	}
	out := &spoolv1.Queue{Name: q.Name, Paused: q.Paused, PausedAt: stamp(q.PausedAt),
		Scheduled: int64(q.Scheduled), MaxRunning: int32(q.MaxRunning), Queued: int64(q.Queued), Running: int64(q.Running), Succeeded: int64(q.Succeeded), Failed: int64(q.Failed),
		Cancelled: int64(q.Cancelled), OldestQueuedAt: stamp(q.OldestQueuedAt), Workers: int32(q.Workers)}
	for _, m := range q.EndedPerMinute {
		out.EndedPerMinute = append(out.EndedPerMinute, &spoolv1.EndedMinute{Minute: stamp(m.Minute),
			Succeeded: int64(m.Succeeded), Failed: int64(m.Failed), Cancelled: int64(m.Cancelled)})
	}
	return out
}

// Key is the API key k (nil for nil).
func Key(k *spoolv1.Key) *spool.Key {
	if k == nil {
		return nil
	}
	return &spool.Key{Name: k.GetName(), Role: Role(k.GetRole()), Queues: k.GetQueues(), CreatedAt: timeOf(k.GetCreatedAt()),
		LastUsedAt: timeOf(k.GetLastUsedAt()), RevokedAt: timeOf(k.GetRevokedAt())}
}

// KeyProto is the wire's API key k (nil for nil).
func KeyProto(k *spool.Key) *spoolv1.Key {
	if k == nil {
		return nil
	}
	return &spoolv1.Key{Name: k.Name, Role: RoleProto(k.Role), Queues: k.Queues, CreatedAt: stamp(k.CreatedAt),
		LastUsedAt: stamp(k.LastUsedAt), RevokedAt: stamp(k.RevokedAt)}
}

// timeOf is t in UTC, or the zero time when t is unset.
func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

// stamp is t, or unset for the zero time.
func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// durationProto is d, or unset for 0.
func durationProto(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// durationOf is d, or 0 when d is unset.
func durationOf(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}
