package spooltest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/wire"
)

// Line is one output line a Lease publishes.
type Line struct {
	Text   string
	Stderr bool
	// No newline followed it: it goes on in the next line of its stream, or
	// it was the last output.
	Partial bool
	// When it was written (zero: when it is published).
	At time.Time
}

// Seq returns the lines "from".."to", like `seq from to`.
func Seq(from, to int) []Line {
	lines := make([]Line, 0, to-from+1)
	for i := from; i <= to; i++ {
		lines = append(lines, Line{Text: strconv.Itoa(i)})
	}
	return lines
}

// Lease is a job leased by the test, which plays its worker: it publishes
// the job's events and completes it through the API, as a worker would,
// without running anything.
type Lease struct {
	lease *spoolv1.JobLease
	rpc   spoolv1connect.JobServiceClient
	t     testing.TB
	next  int64 // the next event's sequence
}

// leaseFor is how long a Lease's lease lasts: longer than any test, also
// on a machine so busy that writing ten thousand lines under the race
// detector takes minutes.
const leaseFor = 15 * time.Minute

// LeaseJob leases the next job of queue ("" for the default queue), waiting
// up to five seconds for one. The lease lasts leaseFor.
func LeaseJob(t testing.TB, srv *Server, queue string) *Lease {
	t.Helper()
	rpc, err := wire.Dial(srv.URL, wire.Options{APIKey: srv.AdminKey})
	if err != nil {
		t.Fatalf("spooltest: %v", err)
	}
	resp, err := rpc.DequeueJobs(context.Background(), connect.NewRequest(&spoolv1.DequeueJobsRequest{
		Queue: queue, MaxJobs: 1, WaitSeconds: 5, VisibilityTimeoutSeconds: int32(leaseFor / time.Second), WorkerId: "spooltest"}))
	if err != nil {
		t.Fatalf("spooltest: lease: %v", err)
	}
	if len(resp.Msg.GetLeases()) != 1 {
		t.Fatalf("spooltest: lease: no job in queue %q", queue)
	}
	l := resp.Msg.GetLeases()[0]
	return &Lease{lease: l, rpc: rpc, t: t, next: l.GetNextSequence()}
}

// JobID is the leased job's id.
func (l *Lease) JobID() string { return l.lease.GetJob().GetJobId() }

// Job is the job as it was leased.
func (l *Lease) Job() *spool.Job { return convert.Job(l.lease.GetJob()) }

// TaskToken is the lease's task token, which a worker sends with every
// call about the job.
func (l *Lease) TaskToken() string { return l.lease.GetTaskToken() }

// Secrets are the job's secrets, name to value, as the lease hands them to
// the worker that holds it (and to no one else).
func (l *Lease) Secrets() map[string]string { return l.lease.GetSecrets() }

// JobToken is the credential the lease gives the job's own process (its
// worker passes it as SPOOL_JOB_TOKEN): it uploads and lists the job's
// artifacts while this attempt runs, and does nothing else. Give it as a
// client's APIKey to upload as the job would.
func (l *Lease) JobToken() string { return l.lease.GetJobToken() }

// NextSequence is the sequence the next published event gets.
func (l *Lease) NextSequence() int64 { return l.next }

// Begin publishes PROCESS_START.
func (l *Lease) Begin() {
	l.t.Helper()
	l.publish([]*spoolv1.JobEvent{l.single(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 1, Command: "spooltest"}}})})
}

// Write publishes lines as batches of the job's max_batch_size, each line
// with its time. Like a worker, it publishes at most 100 batches and 8 MiB
// of them per call, so a publish stays within what the server accepts.
func (l *Lease) Write(lines ...Line) {
	l.t.Helper()
	size := int(l.lease.GetJob().GetExecutionConfig().GetBatching().GetMaxBatchSize())
	var (
		evs   []*spoolv1.JobEvent
		bytes int
	)
	for len(lines) > 0 {
		n := min(size, len(lines))
		ev := l.batch(lines[:n])
		lines = lines[n:]
		k := proto.Size(ev)
		if len(evs) == 100 || (len(evs) > 0 && bytes+k > maxPublishBytes) {
			l.publish(evs)
			evs, bytes = nil, 0
		}
		evs = append(evs, ev)
		bytes += k
	}
	l.publish(evs)
}

// maxPublishBytes is what a worker puts in one publish at most.
const maxPublishBytes = 8 << 20

// End publishes PROCESS_END and completes the job with exitCode. It returns
// the finished job.
func (l *Lease) End(exitCode int) *spool.Job {
	l.t.Helper()
	code := int32(exitCode)
	end := l.single(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: code}}})
	l.publish([]*spoolv1.JobEvent{end})
	now := end.GetTimestamp()
	resp, err := l.rpc.CompleteJob(context.Background(), connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.TaskToken(),
		Result: &spoolv1.JobResult{ExitCode: code, StartedAt: now, FinishedAt: now}}))
	if err != nil {
		l.t.Fatalf("spooltest: complete: %v", err)
	}
	return convert.Job(resp.Msg.GetJob())
}

// RunJob submits a job to the default queue and plays its worker:
// PROCESS_START, the lines, PROCESS_END, complete with exit code 0. It
// returns the finished job.
func RunJob(t testing.TB, srv *Server, lines ...Line) *spool.Job {
	t.Helper()
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "spooltest"}); err != nil {
		t.Fatalf("spooltest: submit: %v", err)
	}
	l := LeaseJob(t, srv, "")
	l.Begin()
	l.Write(lines...)
	return l.End(0)
}

// single numbers an event that is not output and stamps it with the time.
func (l *Lease) single(ev *spoolv1.JobEvent) *spoolv1.JobEvent {
	ev.Sequence, ev.Timestamp = l.next, timestamppb.Now()
	l.next++
	return ev
}

func (l *Lease) batch(lines []Line) *spoolv1.JobEvent {
	now := time.Now()
	out := make([]events.Line, len(lines))
	for i, ln := range lines {
		out[i] = events.Line{Data: []byte(ln.Text), Stream: spoolv1.StreamType_STREAM_TYPE_STDOUT, Partial: ln.Partial, Time: ln.At}
		if ln.Stderr {
			out[i].Stream = spoolv1.StreamType_STREAM_TYPE_STDERR
		}
		if ln.At.IsZero() {
			out[i].Time = now
		}
	}
	ev := events.Batch{Sequence: l.next, Lines: out}.Event()
	l.next += int64(len(lines))
	return ev
}

func (l *Lease) publish(evs []*spoolv1.JobEvent) {
	l.t.Helper()
	if len(evs) == 0 {
		return
	}
	if _, err := l.rpc.PublishEvents(context.Background(), connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: l.TaskToken(), Events: evs})); err != nil {
		l.t.Fatalf("spooltest: publish: %v", err)
	}
}

// Heartbeat extends the lease, as a worker's heartbeat does, and returns
// what the server said: whether the job was cancelled, and whether someone
// is following its output live.
func (l *Lease) Heartbeat() (cancelRequested, watched bool) {
	l.t.Helper()
	resp, err := l.rpc.UpdateJobVisibility(context.Background(), connect.NewRequest(&spoolv1.UpdateJobVisibilityRequest{
		TaskToken: l.TaskToken(), VisibilityTimeoutSeconds: 60}))
	if err != nil {
		l.t.Fatalf("spooltest: heartbeat: %v", err)
	}
	return resp.Msg.GetCancelRequested(), resp.Msg.GetWatched()
}
