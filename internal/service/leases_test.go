package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// lastEvents are an attempt's PROCESS_START and PROCESS_END, from the
// lease's first sequence on.
func lastEvents(l *spoolv1.JobLease) []*spoolv1.JobEvent {
	seq, attempt := l.GetNextSequence(), l.GetJob().GetAttempt()
	return []*spoolv1.JobEvent{
		{Sequence: seq, Attempt: attempt, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
			EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Command: "make test"}}},
		{Sequence: seq + 1, Attempt: attempt, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
			EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: 0}}},
	}
}

// storedLog is the sequences and attempts of a job's stored events.
func storedLog(t *testing.T, o *operator, jobID string) (seqs []int64, attempts []int32) {
	t.Helper()
	for ev, err := range storekit.Read(o.ctx, o.st, store.ReadRequest{JobID: jobID}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs, attempts = append(seqs, ev.GetSequence()), append(attempts, ev.GetAttempt())
	}
	return seqs, attempts
}

func leaseOne(t *testing.T, o *operator) *spoolv1.JobLease {
	t.Helper()
	ls := o.dequeue(t, "builds", 0)
	if len(ls) != 1 {
		t.Fatalf("%d leases, want 1", len(ls))
	}
	return ls[0]
}

// A completion that carries the attempt's last events stores them before
// the result, once: repeated after a lost answer, it changes nothing.
func TestCompleteJobStoresItsEventsOnce(t *testing.T) {
	o := newOperator(t)
	j := o.enqueue(t, "builds")
	l := leaseOne(t, o)
	if !l.GetCompleteTakesEvents() {
		t.Fatal("the lease does not say the server takes events with a completion")
	}
	req := &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}, Events: lastEvents(l)}
	for i := range 2 {
		resp, err := o.s.CompleteJob(o.ctx, req)
		if err != nil {
			t.Fatalf("completion %d: %v", i+1, err)
		}
		if got := resp.GetJob(); got.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || got.GetLastSequence() != l.GetNextSequence()+1 {
			t.Fatalf("completion %d: job %v, want SUCCEEDED with its last sequence %d", i+1, got, l.GetNextSequence()+1)
		}
	}
	seqs, _ := storedLog(t, o, j.GetJobId())
	if len(seqs) != 2 || seqs[0] != l.GetNextSequence() || seqs[1] != l.GetNextSequence()+1 {
		t.Fatalf("stored sequences %v, want %d and %d once each", seqs, l.GetNextSequence(), l.GetNextSequence()+1)
	}
}

// A stale lease's completion is refused with its events once a later
// attempt owns the job: its events would land in that attempt's log.
func TestStaleCompletionsEventsAreRefused(t *testing.T) {
	o := newOperator(t)
	j := o.enqueue(t, "builds")
	first := leaseOne(t, o)
	if _, err := o.s.ReleaseJob(o.ctx, &spoolv1.ReleaseJobRequest{TaskToken: first.GetTaskToken(), Reason: "stopping"}); err != nil {
		t.Fatal(err)
	}
	second := leaseOne(t, o)
	_, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: first.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}, Events: lastEvents(first)})
	if !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("the stale attempt's completion: %v, want a stale lease", err)
	}
	if seqs, _ := storedLog(t, o, j.GetJobId()); len(seqs) != 0 {
		t.Fatalf("stored sequences %v of a stale attempt, want none", seqs)
	}
	// The attempt that owns the job completes it, events and all.
	if _, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: second.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}, Events: lastEvents(second)}); err != nil {
		t.Fatal(err)
	}
	if _, attempts := storedLog(t, o, j.GetJobId()); len(attempts) != 2 || attempts[0] != 2 || attempts[1] != 2 {
		t.Fatalf("stored events of attempts %v, want attempt 2's two", attempts)
	}
}

// A lease that ran out with no later attempt started may still deliver its
// output, as PublishEvents may: the completion stores the events, and only
// the result is refused.
func TestLapsedCompletionStillDeliversOutput(t *testing.T) {
	o := newOperator(t)
	j := o.enqueue(t, "builds")
	l := leaseOne(t, o)
	if _, err := o.s.ReleaseJob(o.ctx, &spoolv1.ReleaseJobRequest{TaskToken: l.GetTaskToken(), Reason: "stopping"}); err != nil {
		t.Fatal(err)
	}
	_, err := o.s.CompleteJob(o.ctx, &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{ExitCode: 0}, Events: lastEvents(l)})
	if !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("completion of a released attempt: %v, want a stale lease", err)
	}
	if seqs, _ := storedLog(t, o, j.GetJobId()); len(seqs) != 2 {
		t.Fatalf("stored sequences %v, want the attempt's 2 events", seqs)
	}
	got, err := o.st.Get(o.ctx, j.GetJobId())
	if err != nil || got.GetState() != spoolv1.JobState_JOB_STATE_QUEUED {
		t.Fatalf("job after a refused result: %v, %v; want it queued", got, err)
	}
}

// Output published encoded, as workers send it, lands in the log as it
// would as messages, numbered from the lease's next line; a call with
// both kinds, or an encoded event that does not decode, is refused and
// stores nothing.
func TestPublishEncodedEvents(t *testing.T) {
	o := newOperator(t)
	j := o.enqueue(t, "builds")
	l := leaseOne(t, o)
	if !l.GetTakesEncodedEvents() {
		t.Fatal("the lease does not say the server takes encoded events")
	}
	out := events.Batch{Sequence: l.GetNextSequence(), Attempt: l.GetJob().GetAttempt(), FirstLine: l.GetNextLine(),
		Lines: events.TextLines(time.Now(), "compiling", "linking")}.Event()
	enc, err := events.Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]*spoolv1.PublishEventsRequest{
		"both kinds":      {TaskToken: l.GetTaskToken(), Events: []*spoolv1.JobEvent{out}, EncodedEvents: [][]byte{enc}},
		"a corrupt event": {TaskToken: l.GetTaskToken(), EncodedEvents: [][]byte{enc, {2, 0xff}}},
	} {
		if _, err := o.s.PublishEvents(o.ctx, bad); !errors.Is(err, spool.ErrInvalidArgument) {
			t.Fatalf("%s: %v, want refused", name, err)
		}
	}
	resp, err := o.s.PublishEvents(o.ctx, &spoolv1.PublishEventsRequest{TaskToken: l.GetTaskToken(), EncodedEvents: [][]byte{enc}})
	if err != nil || resp.GetLineCount() != l.GetNextLine()+1 {
		t.Fatalf("publish: %v, %v; want %d lines", resp, err, l.GetNextLine()+1)
	}
	var got []*spoolv1.JobEvent
	for ev, err := range storekit.Read(o.ctx, o.st, store.ReadRequest{JobID: j.GetJobId()}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 1 || !proto.Equal(got[0], out) {
		t.Fatalf("stored %v, want the batch as sent", got)
	}
}

// CompleteJobs records each completion as CompleteJob would, with its
// events, and answers each on its own: a bad token is refused without
// refusing the others, and a repeated completion changes nothing.
func TestCompleteJobs(t *testing.T) {
	o := newOperator(t)
	for range 3 {
		o.enqueue(t, "builds")
	}
	var ls []*spoolv1.JobLease
	for range 3 {
		ls = append(ls, leaseOne(t, o))
	}
	req := &spoolv1.CompleteJobsRequest{}
	for i, l := range ls {
		c := &spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(), Result: &spoolv1.JobResult{}}
		if i == 0 {
			c.Events = lastEvents(l)
		}
		req.Completions = append(req.Completions, c)
	}
	req.Completions = append(req.Completions, &spoolv1.CompleteJobRequest{TaskToken: "st1.forged", Result: &spoolv1.JobResult{}})
	var lastSeq int64
	for round := range 2 {
		// The repeat asks for brief answers: the same jobs, without their
		// params, results and times.
		req.Brief = round == 1
		resp, err := o.s.CompleteJobs(o.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		rs := resp.GetResults()
		if len(rs) != 4 {
			t.Fatalf("%d results for 4 completions", len(rs))
		}
		for i, l := range ls {
			j := rs[i].GetJob()
			if rs[i].GetErrorCode() != "" || j.GetJobId() != l.GetJob().GetJobId() || j.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED ||
				j.GetQueue() != "builds" || j.GetAttempt() != 1 {
				t.Fatalf("round %d, completion %d: %v, want job %s of builds succeeded on attempt 1", round, i, rs[i], l.GetJob().GetJobId())
			}
			if whole := j.GetResult() != nil && j.GetParams() != nil && j.GetCreatedAt() != nil; whole == req.Brief {
				t.Fatalf("round %d (brief: %v), completion %d: answered with %v", round, req.Brief, i, j)
			}
		}
		if seq := rs[0].GetJob().GetLastSequence(); seq < 2 || (round == 1 && seq != lastSeq) {
			t.Fatalf("round %d: the first job's last sequence %d (before: %d), want its 2 events' last", round, seq, lastSeq)
		}
		lastSeq = rs[0].GetJob().GetLastSequence()
		if rs[3].GetErrorCode() != "invalid_argument" || !strings.Contains(rs[3].GetErrorMessage(), "task_token") {
			t.Fatalf("round %d: the forged token's result %v, want invalid_argument about the task token", round, rs[3])
		}
	}
	if seqs, _ := storedLog(t, o, ls[0].GetJob().GetJobId()); len(seqs) != 2 {
		t.Fatalf("the first completion's events stored as %v, want 2 events once", seqs)
	}
	for name, bad := range map[string]*spoolv1.CompleteJobsRequest{
		"none":     {},
		"too many": {Completions: make([]*spoolv1.CompleteJobRequest, 101)},
	} {
		if _, err := o.s.CompleteJobs(o.ctx, bad); !errors.Is(err, spool.ErrInvalidArgument) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}
