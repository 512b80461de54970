package awsstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
	"github.com/spool-run/spool/internal/store/storekit"
)

func newSource() string { return "group/" + newQueue() + ":stream" }

// externalJob is the job Ingest opens for src.
func externalJob(src string) store.NewJob {
	nj := newJob("external")
	nj.Params = &spoolv1.JobParams{External: &spoolv1.External{Source: src}}
	nj.MaxAttempts = 1
	return nj
}

// rawEvents are "<prefix>-<i>" for i in [from, to], with the message
// "<prefix> <i>".
func rawEvents(prefix string, from, to int) []store.RawEvent {
	var out []store.RawEvent
	for i := from; i <= to; i++ {
		out = append(out, store.RawEvent{ID: fmt.Sprintf("%s-%d", prefix, i), Time: time.UnixMilli(1_700_000_000_000 + int64(i)), Message: fmt.Sprintf("%s %d", prefix, i)})
	}
	return out
}

func messagesOf(evs []store.RawEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Message
	}
	return out
}

func ingestReq(src string, evs []store.RawEvent) store.IngestRequest {
	return store.IngestRequest{Source: src, Events: evs, Job: externalJob(src)}
}

func ingestOK(t *testing.T, s store.JobStore, src string, evs []store.RawEvent) store.IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), ingestReq(src, evs))
	if err != nil {
		t.Fatalf("Ingest of %d events: %v", len(evs), err)
	}
	return res
}

// wantLog checks a job's lines, numbered from 1 without a gap, and that the
// log rebuilt from its accepted events is the stored log, item for item.
func wantLog(t *testing.T, s store.JobStore, jobID string, want []string) {
	t.Helper()
	var got []string
	for i, ev := range logOf(t, s, jobID) {
		if n := ev.GetOutputData().GetLineNumber(); n != int64(i+1) {
			t.Fatalf("line %d is numbered %d", i+1, n)
		}
		got = append(got, string(ev.GetOutputData().GetOutput()))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("log holds %q\nwant %q", got, want)
	}
	ctx := context.Background()
	job, err := s.Get(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	var acc []store.Accepted
	for a, err := range s.Accepted(ctx, jobID) {
		if err != nil {
			t.Fatal(err)
		}
		acc = append(acc, a)
	}
	if len(acc) != len(want) {
		t.Fatalf("%d accepted events for %d lines", len(acc), len(want))
	}
	rebuilt, err := storekit.RebuildEvents(job.GetExecutionConfig().GetBatching(), s.Limits(), acc)
	if err != nil {
		t.Fatal(err)
	}
	var stored []*spoolv1.JobEvent
	for ev, err := range storekit.Read(ctx, s, store.ReadRequest{JobID: jobID, FromSequence: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, ev)
	}
	if len(rebuilt) != len(stored) {
		t.Fatalf("rebuilt %d items, %d stored", len(rebuilt), len(stored))
	}
	for i := range stored {
		if !proto.Equal(rebuilt[i], stored[i]) {
			t.Fatalf("rebuilt item %d differs from the stored one", i)
		}
	}
}

// TestIngestDiedBeforeCommit: a call that wrote its items and markers and
// died before committing hides nothing. Its markers point into a range
// that was never committed, so they do not make its events duplicates:
// the sender's retry, once the dead call's reservation is taken over,
// stores them, and the log holds each once.
func TestIngestDiedBeforeCommit(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	dead, live := openStore(t, cfg), openStore(t, cfg)
	awsstore.SetIngestTiming(live, time.Second, 20*time.Second)
	ctx := context.Background()
	src := newSource()
	first := ingestOK(t, live, src, rawEvents("e", 1, 3)).Job

	died := errors.New("server died")
	awsstore.IngestAfterWrite(dead, func(context.Context) error { return died })
	if _, err := dead.Ingest(ctx, ingestReq(src, rawEvents("e", 3, 6))); !errors.Is(err, died) {
		t.Fatalf("dying call: %v", err)
	}
	out, err := awsstore.Client(live).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cfg.EventsTable),
		Key: awsstore.MarkerKey(src, "e-5"), ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("the dead call left no marker (%v): this test would prove nothing", err)
	}
	if j, _ := live.Get(ctx, first.GetJobId()); j.GetLineCount() != 3 {
		t.Fatalf("an uncommitted call shows: %d lines", j.GetLineCount())
	}

	// The retry waits for the dead call's reservation to be abandoned.
	res := ingestOK(t, live, src, rawEvents("e", 2, 6))
	if res.Accepted != 3 || res.Created || res.Job.GetJobId() != first.GetJobId() {
		t.Fatalf("retry: %+v; want events 4-6 accepted into the open job", res)
	}
	// The dead call's range [4, 7) is a gap in sequences, not in lines.
	if res.Job.GetLineCount() != 6 || res.Job.GetLastSequence() != 9 {
		t.Fatalf("after the retry the log has %d lines up to sequence %d, want 6 lines up to 9", res.Job.GetLineCount(), res.Job.GetLastSequence())
	}
	wantLog(t, live, first.GetJobId(), messagesOf(rawEvents("e", 1, 6)))
	if again := ingestOK(t, live, src, rawEvents("e", 1, 6)); again.Accepted != 0 {
		t.Fatalf("a delivery of stored events accepted %d", again.Accepted)
	}
}

// TestIngestStalledCallCannotUndoDedupe: a call stalls after reserving, is
// taken over, and the events are stored by the call that took over. When
// the stalled call wakes it writes its items (into what is now a hole) and
// its markers, which must not replace the markers of the call that stored
// the events: they would point into the hole, and the next delivery of the
// events would store them again. Its commit is refused.
func TestIngestStalledCallCannotUndoDedupe(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	stalled, live := openStore(t, cfg), openStore(t, cfg)
	awsstore.SetIngestTiming(live, time.Second, 20*time.Second)
	ctx := context.Background()
	src := newSource()
	job := ingestOK(t, live, src, rawEvents("e", 1, 2)).Job

	reserved, resume := make(chan struct{}), make(chan struct{})
	awsstore.IngestAfterReserve(stalled, func(context.Context) error {
		close(reserved)
		<-resume
		return nil
	})
	stalledErr := make(chan error, 1)
	go func() {
		_, err := stalled.Ingest(ctx, ingestReq(src, rawEvents("e", 3, 5)))
		stalledErr <- err
	}()
	<-reserved
	if res := ingestOK(t, live, src, rawEvents("e", 3, 5)); res.Accepted != 3 {
		t.Fatalf("the call that took over accepted %d events, want 3", res.Accepted)
	}
	close(resume)
	if err := <-stalledErr; !errors.Is(err, spool.ErrThrottled) {
		t.Fatalf("the stalled call: %v, want it refused (ErrThrottled: the sender retries)", err)
	}
	if again := ingestOK(t, live, src, rawEvents("e", 1, 5)); again.Accepted != 0 {
		t.Fatalf("after the stalled call woke, a delivery of stored events accepted %d of them again", again.Accepted)
	}
	wantLog(t, live, job.GetJobId(), messagesOf(rawEvents("e", 1, 5)))
}

// TestIngestLongCallKeepsItsReservation: a call that takes longer than a
// reservation lives without renewal keeps renewing it, so a call of the
// same source meanwhile waits for it instead of taking it over.
func TestIngestLongCallKeepsItsReservation(t *testing.T) {
	cfg := awstest.Shared(t).NewConfig(t)
	a, b := openStore(t, cfg), openStore(t, cfg)
	const abandon = 500 * time.Millisecond
	// Enough events that writing them takes well over 2*abandon (about
	// 0.3 ms each here), even on a fast run.
	const longEvents = 6000
	awsstore.SetIngestTiming(a, abandon, time.Minute)
	awsstore.SetIngestTiming(b, abandon, time.Minute)
	src := newSource()
	job := ingestOK(t, a, src, rawEvents("x", 1, 1)).Job

	reserved := make(chan time.Time, 1)
	awsstore.IngestAfterReserve(a, func(context.Context) error {
		select {
		case reserved <- time.Now():
		default:
		}
		return nil
	})
	type result struct {
		res  store.IngestResult
		err  error
		took time.Duration
	}
	long := make(chan result, 1)
	go func() {
		res, err := a.Ingest(context.Background(), ingestReq(src, rawEvents("long", 1, longEvents)))
		long <- result{res, err, 0}
	}()
	at := <-reserved
	short := ingestOK(t, b, src, rawEvents("short", 1, 10))
	r := <-long
	r.took = time.Since(at)
	if r.err != nil || r.res.Accepted != longEvents {
		t.Fatalf("the long call: accepted %d, %v", r.res.Accepted, r.err)
	}
	if short.Accepted != 10 {
		t.Fatalf("the short call accepted %d", short.Accepted)
	}
	if r.took < 2*abandon {
		t.Fatalf("the long call wrote for only %v: too quick to show its reservation renewed (make it longer)", r.took)
	}
	t.Logf("the long call held its reservation for %v", r.took)
	want := append(messagesOf(rawEvents("x", 1, 1)), messagesOf(rawEvents("long", 1, longEvents))...)
	wantLog(t, a, job.GetJobId(), append(want, messagesOf(rawEvents("short", 1, 10))...))
}

// TestListBySource: a source's jobs newest first, a page at a time, by
// state; nothing for a cursor of another listing or another source.
func TestListBySource(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	src := newSource()
	var ids []string
	for i := range 3 {
		job := ingestOK(t, s, src, rawEvents(fmt.Sprint("r", i), 1, 1)).Job
		ids = append([]string{job.GetJobId()}, ids...)
		if i < 2 {
			if _, err := s.Complete(ctx, store.ExternalLeaseRef(job), &spoolv1.JobResult{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ingestOK(t, s, newSource(), rawEvents("other", 1, 1))
	list := func(f store.ListFilter) (ids []string, pages int) {
		t.Helper()
		for {
			jobs, next, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, j := range jobs {
				ids = append(ids, j.GetJobId())
			}
			if next == "" || pages > 10 {
				return ids, pages
			}
			f.Cursor = next
		}
	}
	if got, pages := list(store.ListFilter{Source: src, Limit: 1}); !slices.Equal(got, ids) || pages != 3 {
		t.Fatalf("by source, a job a page: %v in %d pages, want %v in 3", got, pages, ids)
	}
	succeeded := []spoolv1.JobState{spoolv1.JobState_JOB_STATE_SUCCEEDED}
	if got, _ := list(store.ListFilter{Source: src, States: succeeded, Limit: 1}); !slices.Equal(got, ids[1:]) {
		t.Fatalf("ended jobs of the source: %v, want %v", got, ids[1:])
	}
	running := []spoolv1.JobState{spoolv1.JobState_JOB_STATE_RUNNING}
	if got, _ := list(store.ListFilter{Source: src, States: running, Limit: 1}); !slices.Equal(got, ids[:1]) {
		t.Fatalf("the open job of the source: %v, want %v", got, ids[:1])
	}
	if got, _ := list(store.ListFilter{Source: src, Queue: "elsewhere"}); len(got) != 0 {
		t.Fatalf("the source's jobs in another queue: %v", got)
	}
	_, other, err := s.List(ctx, store.ListFilter{Limit: 1})
	if err != nil || other == "" {
		t.Fatalf("listing all jobs: cursor %q, %v", other, err)
	}
	if got, _ := list(store.ListFilter{Source: src, Cursor: other}); len(got) != 0 {
		t.Fatalf("the source's jobs after a cursor of another listing: %v", got)
	}
	if got, _ := list(store.ListFilter{Source: newSource()}); len(got) != 0 {
		t.Fatalf("a source never seen has jobs: %v", got)
	}
}

// TestIngestCost: what one call of 1,000 new events costs, and one of the
// same events again (all duplicates), for a source whose job is open (the
// figures in doc.go). An external job never touches SQS.
//
//	go test ./internal/store/backends/awsstore -run TestIngestCost -v
func TestIngestCost(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	s, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	src := newSource()
	job := ingestOK(t, s, src, rawEvents("w", 1, 1)).Job
	opened, _ := calls.Take()
	for _, tc := range []struct {
		name string
		want map[string]int
	}{
		{"1,000 new events", map[string]int{"DynamoDB.GetItem": 1, "DynamoDB.BatchGetItem": 10, "DynamoDB.UpdateItem": 2,
			"DynamoDB.BatchWriteItem": 1, "DynamoDB.PutItem": 1000}},
		{"the same 1,000 again", map[string]int{"DynamoDB.GetItem": 1, "DynamoDB.BatchGetItem": 10}},
	} {
		res := ingestOK(t, s, src, rawEvents("e", 1, 1000))
		n, capacity := calls.Take()
		var wcu, rcu float64
		for op, c := range capacity {
			if strings.Contains(op, "Get") {
				rcu += c
			} else {
				wcu += c
			}
		}
		t.Logf("%s (accepted %d): requests %v; %.0f RCU, %.0f WCU", tc.name, res.Accepted, n, rcu, wcu)
		if !maps.Equal(n, tc.want) {
			t.Errorf("%s: requests %v, want %v", tc.name, n, tc.want)
		}
	}
	t.Logf("opening the job took %v", opened)
	if _, err := s.Complete(context.Background(), store.ExternalLeaseRef(job), &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Take()
	for op := range opened {
		n[op] += opened[op]
	}
	for op := range n {
		if strings.HasPrefix(op, "SQS.") {
			t.Fatalf("an external job's life made SQS requests: %v", n)
		}
	}
}

// TestExternalJobIsNeverLeased: an external job has no lease expiry, not
// even in its item, so the leases index never holds it; Get shows none,
// ExpireLeases leaves it alone, and ReplaceLog takes no item past its head.
func TestExternalJobIsNeverLeased(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	job := ingestOK(t, s, newSource(), rawEvents("e", 1, 3)).Job
	out, err := awsstore.Client(s).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Config().JobsTable),
		Key: map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: job.GetJobId()}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"lease_expires", "lease_part", "msg_id"} {
		if _, ok := out.Item[a]; ok {
			t.Fatalf("the external job's item has %s", a)
		}
	}
	if n, err := s.ExpireLeases(ctx, conformance.Sweep); err != nil || n != (store.Swept{}) {
		t.Fatalf("ExpireLeases: %+v, %v", n, err)
	}
	if j, _ := s.Get(ctx, job.GetJobId()); j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING || j.GetLeaseExpiresAt() != nil {
		t.Fatalf("external job after ExpireLeases: %v", j)
	}
	past := batch(4, "past the head")
	if err := s.ReplaceLog(ctx, job.GetJobId(), []*spoolv1.JobEvent{past}); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("ReplaceLog with an item past the head: %v", err)
	}
}
