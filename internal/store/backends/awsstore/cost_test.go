package awsstore_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// longPollSent returns SDK middleware that sends on the channel it
// returns once a long poll's request is on the wire (so SQS has it).
func longPollSent() (func(*middleware.Stack) error, <-chan struct{}) {
	sent := make(chan struct{}, 16)
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("spool-long-poll-sent",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if r, ok := in.Parameters.(*sqs.ReceiveMessageInput); ok && r.WaitTimeSeconds > 0 {
					var once sync.Once
					ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
						once.Do(func() { sent <- struct{}{} })
					}})
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}, sent
}

// sqsOps are the SQS requests among counted calls, by operation.
func sqsOps(n map[string]int) (ops map[string]int, total int) {
	ops = map[string]int{}
	for op, k := range n {
		if name, ok := strings.CutPrefix(op, "SQS."); ok {
			ops[name] += k
			total += k
		}
	}
	return ops, total
}

// TestCostSQSPerJob: a job that arrives while a worker's long poll has
// been waiting a while costs 4 SQS requests in its life (send, receive,
// one heartbeat, delete). The receive hides the message for the lease
// plus its wait, so the lease runs its full length from when it is
// granted without a change of visibility after the receive.
func TestCostSQSPerJob(t *testing.T) {
	sent, polling := longPollSent()
	s, calls := countingStore(t, sent)
	ctx := context.Background()
	q := newQueue()
	conformanceWarmUp(t, s, q)
	calls.Take()

	type result struct {
		ls  []store.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: 10 * time.Second})
		done <- result{ls, err}
	}()
	<-polling
	// The job must arrive well into the wait: a receive answered more
	// than a second after it was sent is what used to take a change of
	// visibility. This is the time the test is about, not a guess at
	// when something else is ready.
	time.Sleep(1500 * time.Millisecond)
	enqueued := time.Now()
	if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || len(res.ls) != 1 {
		t.Fatalf("Dequeue: %d leases, err %v; want 1", len(res.ls), res.err)
	}
	l := res.ls[0]
	if min := enqueued.Add(time.Minute); l.ExpiresAt.Before(min) {
		t.Errorf("lease ends at %v, before a minute after the job was enqueued (%v): the wait was taken from it", l.ExpiresAt, min)
	}
	if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	n, _ := calls.Take()
	ops, total := sqsOps(n)
	if total != 4 || ops["ReceiveMessage"] != 1 || ops["ChangeMessageVisibilityBatch"] != 0 {
		t.Fatalf("one job took %d SQS requests, want 4 (send, receive, heartbeat, delete): %v", total, ops)
	}
}

// TestCostIdleLongPoll: a worker waiting on an empty queue makes one
// ReceiveMessage per wait of up to 20 s (SQS's longest), not a long poll
// rounded down to whole seconds followed by short polls for the rest.
func TestCostIdleLongPoll(t *testing.T) {
	s, calls := countingStore(t)
	q := newQueue()
	conformanceWarmUp(t, s, q)
	calls.Take()
	const wait = 2 * time.Second
	start := time.Now()
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: wait})
	if err != nil || len(ls) != 0 {
		t.Fatalf("Dequeue of an empty queue: %d leases, err %v", len(ls), err)
	}
	if took := time.Since(start); took < wait {
		t.Errorf("Dequeue returned after %v, before its wait of %v", took, wait)
	}
	n, _ := calls.Take()
	if ops, total := sqsOps(n); total != 1 || ops["ReceiveMessage"] != 1 {
		t.Fatalf("an idle wait of %v took %d SQS requests, want one long poll: %v", wait, total, ops)
	}
}

// conformanceWarmUp makes the queue and has the store look up its URL, as
// a running server has: what a job costs does not include that.
func conformanceWarmUp(t *testing.T, s *awsstore.Store, q string) {
	t.Helper()
	running(t, s, newJob(q), time.Minute)
}

// hexJob is a job of n lines of 100 random hex characters in batches of
// size, PROCESS_START and PROCESS_END around them, as a worker encodes
// them (S2, with attempt 1 and the line numbers in place).
func hexJob(t *testing.T, n, size int) []events.Published {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 50)
	text := make([]string, n)
	for i := range text {
		for j := range buf {
			buf[j] = byte(rnd.Uint32())
		}
		text[i] = hex.EncodeToString(buf)
	}
	evs := []*spoolv1.JobEvent{startEvent(1)}
	seq := int64(2)
	for from := 0; from < n; from += size {
		ls := text[from:min(from+size, n)]
		evs = append(evs, events.Batch{Sequence: seq, FirstLine: int64(from + 1), Attempt: 1, Lines: events.TextLines(ts(seq).AsTime(), ls...)}.Event())
		seq += int64(len(ls))
	}
	evs = append(evs, endEvent(seq))
	out := make([]events.Published, len(evs))
	for i, ev := range evs {
		ev.Attempt = 1
		b, err := events.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = events.ParseEncoded(b); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// publish appends evs 25 a call, as a worker's publishes.
func publish(t *testing.T, s store.JobStore, ref store.LeaseRef, evs []events.Published) {
	t.Helper()
	for len(evs) > 0 {
		k := min(len(evs), 25)
		if _, err := s.Append(context.Background(), ref, evs[:k]); err != nil {
			t.Fatalf("Append: %v", err)
		}
		evs = evs[k:]
	}
}

// TestCostCompression: a store set to zstd writes 10,000 lines of 100 hex
// characters (sent by the worker in S2) in under 60% of the write units an
// S2 store takes for them, and each store reads the other's items.
func TestCostCompression(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Shared(t).NewConfig(t)
	open := func(compression string) (*awsstore.Store, *awsstore.Calls) {
		c := cfg
		c.Compression = compression
		s, calls, err := awsstore.OpenCounting(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, calls
	}
	zs, zcalls := open("") // the default
	ss, scalls := open("s2")
	q := newQueue()
	evs := hexJob(t, 10000, 50)
	wcu := map[string]float64{}
	jobs := map[string]string{}
	for name, st := range map[string]struct {
		s     *awsstore.Store
		calls *awsstore.Calls
	}{"zstd": {zs, zcalls}, "s2": {ss, scalls}} {
		l := running(t, st.s, newJob(q), time.Minute)
		st.calls.Take()
		publish(t, st.s, l.LeaseRef, evs)
		n, capacity := st.calls.Take()
		wcu[name] = capacity["DynamoDB.BatchWriteItem"]
		t.Logf("%s: events %v WCU, job item %v WCU in %d updates, %v RCU", name, capacity["DynamoDB.BatchWriteItem"],
			capacity["DynamoDB.UpdateItem"], n["DynamoDB.UpdateItem"], capacity["DynamoDB.GetItem"]+capacity["DynamoDB.Query"])
		jobs[name] = l.JobID
	}
	t.Logf("10,000 lines of 100 hex characters, 50 a batch: events' WCU zstd %v, s2 %v", wcu["zstd"], wcu["s2"])
	if wcu["zstd"] > 0.6*wcu["s2"] {
		t.Errorf("zstd items took %v WCU, S2 items %v: want under 60%%", wcu["zstd"], wcu["s2"])
	}
	// Each store reads both: every item says how it was compressed.
	want := summary(logOf(t, zs, jobs["zstd"]))
	if len(want) != 10002 {
		t.Fatalf("the zstd job reads back %d events, want 10,002", len(want))
	}
	for _, r := range []*awsstore.Store{zs, ss} {
		for _, id := range jobs {
			if got := summary(logOf(t, r, id)); !slices.Equal(got, want) {
				t.Fatalf("job %s reads back differently", id)
			}
		}
	}
}

// TestCostReplay: replaying a finished 10,000-line job from line 9,000 as
// the server does (it reads the job, then a feed reads the log in pages
// that grow) costs at most 1.5 times the read units of the store reading
// the same lines at once.
func TestCostReplay(t *testing.T) {
	ctx := context.Background()
	s, calls := countingStore(t)
	l := running(t, s, newJob(newQueue()), time.Minute)
	appendAll(t, s, l.LeaseRef, outputJob(10000, 50))
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	rcu := func(capacity map[string]float64) float64 {
		return capacity["DynamoDB.GetItem"] + capacity["DynamoDB.Query"] + capacity["DynamoDB.BatchGetItem"]
	}

	calls.Take()
	var once []string
	for ev, err := range storekit.Read(ctx, s, store.ReadRequest{JobID: l.JobID, FromLine: 9000}) {
		if err != nil {
			t.Fatal(err)
		}
		once = append(once, summary(events.Unpack(ev))...)
	}
	_, capacity := calls.Take()
	one := rcu(capacity)

	job, err := s.Get(ctx, l.JobID) // as the server does before it opens the feed
	if err != nil {
		t.Fatal(err)
	}
	var fed []string
	for ev, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: l.JobID, FromLine: 9000, Job: job}).Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		fed = append(fed, summary(events.Unpack(ev))...)
	}
	n, capacity := calls.Take()
	replay := rcu(capacity)
	t.Logf("replay from line 9,000: %v RCU through a feed (%v), %v reading it at once", replay, n, one)
	if len(fed) != 1002 || len(once) < 1002 || !slices.Equal(fed, once[len(once)-1002:]) {
		t.Fatalf("the feed yields %d events from line 9,000, want lines 9,000-10,000 and the end", len(fed))
	}
	if replay > 1.5*one {
		t.Fatalf("replay through a feed took %v RCU, more than 1.5 times the %v of one read", replay, one)
	}
}

// TestMessageBeforeItsJobIsReadAgain: a young message whose job is not
// there (Enqueue sends before it writes the job) has its job read again a
// few times within a second, a DynamoDB read each, and only then is the
// message hidden for a while: the same receive leases a job whose write
// lands meanwhile.
func TestMessageBeforeItsJobIsReadAgain(t *testing.T) {
	ctx := context.Background()
	s, calls := countingStore(t)
	q := newQueue()
	conformanceWarmUp(t, s, q)
	if err := awsstore.SendRaw(ctx, s, q, fmt.Sprintf(`{"job_id":%q,"queue":%q,"attempt":0}`, v7At(time.Now()), q)); err != nil {
		t.Fatal(err)
	}
	calls.Take()
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a message naming no job gave %d leases, err %v", len(ls), err)
	}
	n, _ := calls.Take()
	if got, want := n["DynamoDB.GetItem"], 1+awsstore.MissingJobReads; got != want {
		t.Errorf("the missing job was read %d times, want %d", got, want)
	}
	if ops, _ := sqsOps(n); ops["ChangeMessageVisibility"] != 1 || ops["ReceiveMessage"] != 1 {
		t.Errorf("SQS requests %v, want one receive and the message hidden once", ops)
	}
}

// TestCostEndedPerMinuteCached: the queues page's chart asks for the jobs
// ended each minute every few seconds; a second call for the same window
// within the minute answers from the first one's walk (no Query, no
// BatchGetItem: only the registry of queues is read again), with the same
// counts. Another window, or the same once the walk is older than that,
// walks again.
func TestCostEndedPerMinuteCached(t *testing.T) {
	ctx := context.Background()
	s, calls := countingStore(t)
	q := newQueue()
	l := running(t, s, newJob(q), time.Minute)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	window := storekit.Now().Truncate(time.Minute).Add(-59 * time.Minute)
	walks := func(since time.Time) (int, []store.EndedMinute) {
		t.Helper()
		calls.Take()
		minutes, err := s.EndedPerMinute(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := calls.Take()
		var mine []store.EndedMinute
		for _, m := range minutes {
			if m.Queue == q {
				mine = append(mine, m)
			}
		}
		return n["DynamoDB.Query"] + n["DynamoDB.BatchGetItem"], mine
	}
	first, counted := walks(window)
	if first == 0 || len(counted) != 1 || counted[0].Succeeded != 1 {
		t.Fatalf("the first call made %d queries and counted %+v; want a walk that counts the job that succeeded", first, counted)
	}
	if again, recounted := walks(window); again != 0 || !slices.Equal(recounted, counted) {
		t.Fatalf("a second call within the minute made %d queries and counted %+v; want none and %+v", again, recounted, counted)
	}
	if other, _ := walks(window.Add(-time.Minute)); other == 0 {
		t.Fatal("a call for another window made no query: it was answered from the last one's walk")
	}
	awsstore.SetEndedFresh(s, 0)
	if stale, _ := walks(window); stale == 0 {
		t.Fatal("a call after the last walk went stale made no query")
	}
}

// jobItemWrites are the writes of a job item among counted calls: every
// write to the jobs table a lease's operations make is an UpdateItem of
// the job's item.
func jobItemWrites(n map[string]int, capacity map[string]float64) (writes int, wcu float64) {
	return n["DynamoDB.UpdateItem"] + n["DynamoDB.PutItem"], capacity["DynamoDB.UpdateItem"] + capacity["DynamoDB.PutItem"]
}

// TestCostSlowJob: a job printing 10,000 lines of 100 hex characters over
// 30 s, published the way a worker publishes it when nobody follows it.
// Counted under a real server and worker (docs/aws.md, Job-item writes,
// says how), that is 16-18 PublishEvents calls: PROCESS_START with the first
// batch, then, once per 2 s flush interval, the 50-line batches filled
// meanwhile (about 14), three heartbeats and a CompleteJob carrying the
// last batches and PROCESS_END. The test makes the same calls without the
// 30 s: the job item is written per call, not per second. No publish may
// write the job item more than once, the job item's write units of the
// whole life (lease, publishes, heartbeats, completion) may not exceed one
// per publish and six for the rest, and they stay under 100.
func TestCostSlowJob(t *testing.T) {
	ctx := context.Background()
	s, calls := countingStore(t)
	q := newQueue()
	conformanceWarmUp(t, s, q)
	nj := newJob(q)
	nj.Params = &spoolv1.JobParams{Script: "for i in $(seq 1000); do head -c 500 /dev/urandom | xxd -p -c 50; sleep 0.03; done"}
	if _, _, err := s.Enqueue(ctx, nj); err != nil {
		t.Fatal(err)
	}
	calls.Take() // the enqueue writes the job once, however it is run
	l := leaseOne(t, s, q, time.Minute)
	evs := hexJob(t, 10000, 50) // PROCESS_START, 200 batches, PROCESS_END
	const perInterval = 14      // 50-line batches printed in a 2 s flush interval
	publishes := [][]events.Published{evs[:2]}
	for rest := evs[2 : len(evs)-1]; len(rest) > 0; {
		n := min(perInterval, len(rest))
		publishes = append(publishes, rest[:n])
		rest = rest[n:]
	}
	heartbeatEvery := len(publishes) / 3

	n, capacity := calls.Take()
	writes, wcu := jobItemWrites(n, capacity)
	perCall := map[string]float64{"lease": wcu}
	for i, p := range publishes {
		if _, err := s.Append(ctx, l.LeaseRef, p); err != nil {
			t.Fatalf("publish %d: %v", i+1, err)
		}
		n, capacity := calls.Take()
		w, u := jobItemWrites(n, capacity)
		if w > 1 {
			t.Fatalf("publish %d wrote the job item %d times (%v WCU): want at most once", i+1, w, u)
		}
		writes += w
		wcu += u
		perCall["publishes"] += u
		if (i+1)%heartbeatEvery == 0 {
			if _, _, err := s.Heartbeat(ctx, l.LeaseRef, time.Minute); err != nil {
				t.Fatal(err)
			}
			n, capacity := calls.Take()
			w, u := jobItemWrites(n, capacity)
			writes += w
			wcu += u
			perCall["heartbeats"] += u
		}
	}
	// The worker sends PROCESS_END with its result, which the server
	// stores together (store.Finisher), as a publish would.
	if _, err := s.Finish(ctx, l.LeaseRef, evs[len(evs)-1:], &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	n, capacity = calls.Take()
	w, u := jobItemWrites(n, capacity)
	if w > 1 {
		t.Fatalf("the completion with the last events wrote the job item %d times (%v WCU): want once", w, u)
	}
	writes += w
	wcu += u
	perCall["completion"] = u

	it := jobItem(t, s, l.JobID)
	size := itemSize(it)
	for name, v := range it {
		t.Logf("  %-16s %4d bytes", name, len(name)+valueSize(v))
	}
	t.Logf("slow job: %d publish calls and a completion with events, job-item writes %d, %v WCU (%v); the job item is %d bytes",
		len(publishes), writes, wcu, perCall, size)
	if got := summary(logOf(t, s, l.JobID)); len(got) != 10002 {
		t.Fatalf("the job reads back %d events, want 10,002", len(got))
	}
	// One write of at most 1 KB per call carrying events, and a few for
	// the lease.
	if limit := float64(len(publishes) + 1 + 6); wcu > limit {
		t.Errorf("the job item took %v WCU, more than one per publish call and six for the rest (%v)", wcu, limit)
	}
	if wcu >= 100 {
		t.Errorf("the job item took %v WCU over the job's life, want under 100", wcu)
	}
}

// jobItem reads a job's item from the jobs table.
func jobItem(t *testing.T, s *awsstore.Store, id string) map[string]dbtypes.AttributeValue {
	t.Helper()
	out, err := awsstore.Client(s).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.Config().JobsTable),
		Key:       map[string]dbtypes.AttributeValue{"job_id": &dbtypes.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}
