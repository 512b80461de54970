package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/outbox"
)

// jobServer answers a sender's calls as a server would, keeping what it was
// sent. Its answers to CompleteJob and PublishEvents are the first errors
// queued for them, then success. A server that predates events sent with a
// completion (dropsEvents) ignores them.
type jobServer struct {
	spoolv1connect.JobServiceClient // calls a sender does not make

	dropsEvents bool

	mu           sync.Mutex
	completeErrs []error
	publishErrs  []error
	completes    []*spoolv1.CompleteJobRequest
	publishes    [][]*spoolv1.JobEvent
	reports      []*spoolv1.ReportUndeliveredRequest
	stored       map[int64]int // how many times each sequence was stored
	last         int64
}

// sent is the events a call carried, as messages or encoded (decoded here,
// as the server would store them).
func sent(msgs []*spoolv1.JobEvent, encoded [][]byte) []*spoolv1.JobEvent {
	for _, b := range encoded {
		ev, err := events.Decode(b)
		if err != nil {
			panic(err)
		}
		msgs = append(msgs, ev)
	}
	return msgs
}

func (f *jobServer) store(evs []*spoolv1.JobEvent) {
	for _, ev := range evs {
		if ev.GetSequence() > f.last {
			f.stored[ev.GetSequence()]++
			f.last = events.EndSequence(ev)
		}
	}
}

func next(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (f *jobServer) CompleteJob(_ context.Context, r *connect.Request[spoolv1.CompleteJobRequest]) (*connect.Response[spoolv1.CompleteJobResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completes = append(f.completes, r.Msg)
	if err := next(&f.completeErrs); err != nil {
		return nil, err
	}
	if !f.dropsEvents {
		f.store(sent(r.Msg.GetEvents(), r.Msg.GetEncodedEvents()))
	}
	return connect.NewResponse(&spoolv1.CompleteJobResponse{Job: &spoolv1.Job{LastSequence: f.last}}), nil
}

func (f *jobServer) PublishEvents(_ context.Context, r *connect.Request[spoolv1.PublishEventsRequest]) (*connect.Response[spoolv1.PublishEventsResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := sent(r.Msg.GetEvents(), r.Msg.GetEncodedEvents())
	f.publishes = append(f.publishes, evs)
	if err := next(&f.publishErrs); err != nil {
		return nil, err
	}
	f.store(evs)
	return connect.NewResponse(&spoolv1.PublishEventsResponse{LastSequence: f.last}), nil
}

func (f *jobServer) ReportUndelivered(_ context.Context, r *connect.Request[spoolv1.ReportUndeliveredRequest]) (*connect.Response[spoolv1.ReportUndeliveredResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, r.Msg)
	return connect.NewResponse(&spoolv1.ReportUndeliveredResponse{}), nil
}

// endedAttempt is an outbox of an attempt whose command started and ended
// (PROCESS_START, PROCESS_END) with its result recorded, and a sender for
// it talking to f.
func endedAttempt(t *testing.T, f *jobServer, takesEvents bool) *sender {
	t.Helper()
	f.stored = map[int64]int{}
	dir := t.TempDir()
	ob, err := outbox.Create(dir, outbox.Header{JobID: "j1", Attempt: 1, Token: "token"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*spoolv1.JobEvent{
		{Sequence: 1, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START, EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Command: "true"}}},
		{Sequence: 2, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END, EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{}}},
	} {
		if err := ob.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := ob.Finish(&spoolv1.JobResult{ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	w := &Worker{cfg: Config{SpoolDir: dir}, rpc: f, completions: &completions{rpc: f}, log: slog.New(slog.DiscardHandler), metrics: noMetrics()}
	return &sender{w: w, ob: ob, token: "token", log: w.log, completeTakesEvents: takesEvents}
}

// A server that takes encoded events gets the attempt's output encoded as
// it stores it, numbered from the lease's next line, on the client that
// does not compress requests again; one that does not gets messages on
// the client that does.
func TestOutputGoesEncodedWithLineNumbers(t *testing.T) {
	t.Parallel()
	for _, takesEncoded := range []bool{true, false} {
		f, compressing := &jobServer{stored: map[int64]int{}}, &jobServer{stored: map[int64]int{}}
		ob, err := outbox.Create(t.TempDir(), outbox.Header{JobID: "j1", Attempt: 3, Token: "token", FirstLine: 11})
		if err != nil {
			t.Fatal(err)
		}
		lines := events.TextLines(time.UnixMilli(5), "a", "b", "c")
		if err := ob.AppendLines(lines); err != nil {
			t.Fatal(err)
		}
		if err := ob.AppendBatch(events.Batch{Sequence: 4, Attempt: 3, Lines: lines}); err != nil {
			t.Fatal(err)
		}
		if err := ob.Finish(&spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
		w := &Worker{rpc: f, compressing: compressing, completions: &completions{rpc: f}, log: slog.New(slog.DiscardHandler), metrics: noMetrics()}
		s := &sender{w: w, ob: ob, token: "token", log: w.log, completeTakesEvents: true, encoded: takesEncoded}
		if err := s.run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, unused := f, compressing
		if !takesEncoded {
			got, unused = compressing, f
		}
		if len(unused.completes) != 0 || len(got.completes) != 1 {
			t.Fatalf("takes encoded %v: %d completions on the right client, %d on the other", takesEncoded, len(got.completes), len(unused.completes))
		}
		c := got.completes[0]
		if takesEncoded != (len(c.GetEncodedEvents()) == 1 && len(c.GetEvents()) == 0) {
			t.Fatalf("takes encoded %v: sent %d encoded events and %d messages", takesEncoded, len(c.GetEncodedEvents()), len(c.GetEvents()))
		}
		b := sent(c.GetEvents(), c.GetEncodedEvents())[0]
		if b.GetOutputBatch().GetFirstLine() != 11 || b.GetAttempt() != 3 || len(b.GetOutputBatch().GetOutputs()) != 3 {
			t.Fatalf("takes encoded %v: batch sent with first_line %d, attempt %d, %d lines; want 11, 3 and 3",
				takesEncoded, b.GetOutputBatch().GetFirstLine(), b.GetAttempt(), len(b.GetOutputBatch().GetOutputs()))
		}
	}
}

// storedOnce fails unless sequences 1 and 2 were each stored exactly once.
func storedOnce(t *testing.T, f *jobServer) {
	t.Helper()
	for seq := int64(1); seq <= 2; seq++ {
		if n := f.stored[seq]; n != 1 {
			t.Errorf("sequence %d stored %d times, want once", seq, n)
		}
	}
}

// An attempt whose events were all unsent when its command ended sends them
// with its result, in one CompleteJob, to a server that takes them; when
// the answer is lost, the same call is made again.
func TestCompletionCarriesLastEvents(t *testing.T) {
	t.Parallel()
	f := &jobServer{completeErrs: []error{connect.NewError(connect.CodeUnavailable, errors.New("connection reset"))}}
	s := endedAttempt(t, f, true)
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.publishes) != 0 {
		t.Errorf("%d publishes, want none: the events go with the result", len(f.publishes))
	}
	if len(f.completes) != 2 {
		t.Fatalf("%d completions, want 2 (one lost, one retried)", len(f.completes))
	}
	for _, c := range f.completes {
		if len(c.GetEvents()) != 2 || c.GetEvents()[0].GetSequence() != 1 || c.GetEvents()[1].GetSequence() != 2 {
			t.Errorf("a completion carried %v, want sequences 1 and 2", c.GetEvents())
		}
	}
	storedOnce(t, f)
}

// A server that did not say it takes events with a completion gets them
// published first, and a completion without events.
func TestCompletionWithoutEventsForOlderServer(t *testing.T) {
	t.Parallel()
	f := &jobServer{}
	s := endedAttempt(t, f, false)
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.publishes) != 1 || len(f.completes) != 1 || len(f.completes[0].GetEvents()) != 0 {
		t.Fatalf("%d publishes and %d completions (%v), want one publish, then one completion without events",
			len(f.publishes), len(f.completes), f.completes)
	}
	storedOnce(t, f)
}

// A completion refused for a stale lease does not say whether its events
// were stored: the sender publishes them to find out. Stored (the lease ran
// out but no later attempt started), the output is delivered and only the
// result had nowhere to go.
func TestStaleCompletionDeliversOutputItCan(t *testing.T) {
	t.Parallel()
	stale := connect.NewError(connect.CodeFailedPrecondition, errors.New("lease of attempt 1 has expired"))
	f := &jobServer{completeErrs: []error{stale, stale}}
	s := endedAttempt(t, f, true)
	if err := s.run(context.Background()); !errors.Is(err, errLeaseLost) {
		t.Fatalf("sender: %v, want the lease lost", err)
	}
	if len(f.publishes) != 1 || len(f.reports) != 0 {
		t.Fatalf("%d publishes, %d reports of lost output; want the events published, nothing reported", len(f.publishes), len(f.reports))
	}
	storedOnce(t, f)
}

// Events the server refuses for good (another attempt owns the job), or
// that a server ignored with the result, are reported as lost, never
// dropped in silence.
func TestUnstoredCompletionEventsAreReported(t *testing.T) {
	t.Parallel()
	stale := func() error {
		return connect.NewError(connect.CodeFailedPrecondition, errors.New("the job is on attempt 2"))
	}
	for name, f := range map[string]*jobServer{
		"refused":      {completeErrs: []error{stale()}, publishErrs: []error{stale()}},
		"older server": {dropsEvents: true, publishErrs: []error{stale()}},
	} {
		t.Run(name, func(t *testing.T) {
			s := endedAttempt(t, f, true)
			if err := s.run(context.Background()); !errors.Is(err, errLeaseLost) {
				t.Fatalf("sender: %v, want the lease lost", err)
			}
			if len(f.reports) != 1 || f.reports[0].GetEvents() != 2 {
				t.Fatalf("reports of lost output: %v, want one counting the 2 events", f.reports)
			}
			if len(f.stored) != 0 {
				t.Errorf("stored %v, want nothing", f.stored)
			}
		})
	}
}

// noMetrics are the metrics of a worker built without New: recorded
// nowhere.
func noMetrics() *workerMetrics {
	return newWorkerMetrics(nil, func() (int64, int64) { return 0, 0 })
}
