package awsstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

var queueSeq atomic.Int64

func newQueue() string { return fmt.Sprintf("q%d", queueSeq.Add(1)) }

func newJob(queue string) store.NewJob {
	return store.NewJob{
		Queue:  queue,
		Params: &spoolv1.JobParams{Argv: []string{"seq", "10000"}},
		Execution: &spoolv1.ExecutionConfig{Batching: &spoolv1.BatchingConfig{
			FlushIntervalSeconds: 2, MaxBatchSize: 50, MaxBatchBytes: 256 << 10, PlaybackIntervalMillis: 50,
		}},
		MaxAttempts: 3,
	}
}

// running enqueues a job and leases it for vis.
func running(t testing.TB, s store.JobStore, nj store.NewJob, vis time.Duration) store.Lease {
	t.Helper()
	if _, _, err := s.Enqueue(context.Background(), nj); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return leaseOne(t, s, nj.Queue, vis)
}

func leaseOne(t testing.TB, s store.JobStore, queue string, vis time.Duration) store.Lease {
	t.Helper()
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: 1, LeaseDuration: vis, Wait: 5 * time.Second})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d leases, err %v; want 1", len(ls), err)
	}
	return ls[0]
}

func ts(seq int64) *timestamppb.Timestamp {
	return timestamppb.New(time.UnixMilli(1_700_000_000_000 + seq))
}

func startEvent(seq int64) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(seq), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 1, Command: "seq"}}}
}

func endEvent(seq int64) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(seq), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{}}}
}

// batch is an OUTPUT_BATCH at seq holding lines on stdout.
func batch(seq int64, lines ...string) *spoolv1.JobEvent {
	return events.Batch{Sequence: seq, Lines: events.TextLines(ts(seq).AsTime(), lines...), Untimed: true}.Event()
}

// lines returns "from".."to".
func lines(from, to int) []string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// outputJob is `seq 1 n` as a job: PROCESS_START, n lines in batches of
// size, PROCESS_END, published 25 events a call.
func outputJob(n, size int) []*spoolv1.JobEvent {
	evs := []*spoolv1.JobEvent{startEvent(1)}
	seq := int64(2)
	for from := 1; from <= n; from += size {
		ls := lines(from, min(from+size-1, n))
		evs = append(evs, batch(seq, ls...))
		seq += int64(len(ls))
	}
	return append(evs, endEvent(seq))
}

func appendAll(t testing.TB, s store.JobStore, ref store.LeaseRef, evs []*spoolv1.JobEvent) store.Head {
	t.Helper()
	var h store.Head
	for len(evs) > 0 {
		k := min(len(evs), 25)
		var err error
		if h, err = s.Append(context.Background(), ref, events.Messages(evs[:k]...)); err != nil {
			t.Fatalf("Append %d-%d: %v", evs[0].GetSequence(), evs[k-1].GetSequence(), err)
		}
		evs = evs[k:]
	}
	return h
}

// logOf replays a job (not following), one event per line.
func logOf(t testing.TB, s store.JobStore, id string) []*spoolv1.JobEvent {
	t.Helper()
	var out []*spoolv1.JobEvent
	for ev, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: id}).Events(context.Background()) {
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
		out = append(out, events.Unpack(ev)...)
	}
	return out
}

// readAll reads what req asks for in one Read, one event per line.
func readAll(t testing.TB, s store.JobStore, req store.ReadRequest) []*spoolv1.JobEvent {
	t.Helper()
	var out []*spoolv1.JobEvent
	for ev, err := range storekit.Read(context.Background(), s, req) {
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, events.Unpack(ev)...)
	}
	return out
}

// summary renders a log as "attempt:sequence:line:text" rows.
func summary(evs []*spoolv1.JobEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		d := ev.GetOutputData()
		text := string(d.GetOutput())
		if d == nil {
			text = ev.GetEventType().String()
		}
		out[i] = fmt.Sprintf("%d:%d:%d:%s", ev.GetAttempt(), ev.GetSequence(), d.GetLineNumber(), text)
	}
	return out
}
