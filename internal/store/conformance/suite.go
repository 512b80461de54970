// Package conformance is the JobStore conformance suite: the semantics every
// backend must keep, written once and run against each real backend.
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Backend{Open: func(t *testing.T) store.JobStore { … }})
//	}
//
// Tests use real time with short leases (1 s, the smallest SQS supports), so
// they run in parallel to keep the suite quick.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/types/known/timestamppb"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// Backend tells the suite how to get stores.
type Backend struct {
	// Open returns a new, empty store; the suite closes it.
	Open func(t *testing.T) store.JobStore
	// Reopen, for persistent backends, closes s and opens the same data
	// again, as a server restart would. Every persistent backend must set
	// it; without it (the memory store) the persistence test is not run.
	Reopen func(t *testing.T, s store.JobStore) store.JobStore
	// Watching, when set, says how many keys (queues, jobs) s keeps for
	// waiters; the suite then checks that waits leave none behind.
	Watching func(s store.JobStore) int
	// RawJob returns every byte s keeps for a job, as stored (its row or
	// items, and its request marker), or nil once it keeps nothing: the
	// suite looks there for bytes that must not be stored. Every backend
	// that keeps data at rest must set it; without it (the memory store)
	// only what the methods return is checked.
	RawJob func(t *testing.T, s store.JobStore, jobID string) []byte
	// Polling says how the store's dequeues wait, for the wake-up tests.
	Polling Polling
}

// Run runs the whole suite.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"EnqueueAndGet", testEnqueueAndGet},
		{"EnqueueIdempotent", testEnqueueIdempotent},
		{"EnqueueIdempotentRace", testEnqueueIdempotentRace},
		{"List", testList},
		{"ListFindsARareState", testListRareState},
		{"CancelQueued", testCancelQueued},
		{"DequeueBatchOrderAndQueues", testDequeueBatch},
		{"DequeueManyInOneCall", testDequeueMany},
		{"DequeueLongPoll", testDequeueLongPoll},
		{"HeartbeatAndCancelRunning", testHeartbeatAndCancel},
		{"LeaseExpiryRedeliversThenFails", testLeaseExpiry},
		{"ExpireLeasesCancelsAndRequeues", testExpireLeases},
		{"GraceAfterAGapInSweeps", testGraceAfterAGap},
		{"GraceSinceAnOutageSeen", testGraceSince},
		{"StaleLeasesRefused", testStaleLeases},
		{"CompleteIdempotentAndFinal", testComplete},
		{"AppendIdempotentAndChecked", testAppend},
		{"AppendEncodedStoredAsSent", testAppendEncoded},
		{"ReadSeeksByLineAndSequence", testReadSeek},
		{"ReadFromBatchBoundaries", testReadFromBatchBoundaries},
		{"ReadVariableBatchSizes", testReadVariableSizes},
		{"ReadInterleavedCriticalEvents", testReadInterleaved},
		{"ReadStoredMatchesRead", testReadStored},
		{"NewAttemptContinuesTheLog", testNewAttemptContinues},
		{"FeedStoredThenLive", testFeedStoredThenLive},
		{"FeedManyFollowersAndSlowReader", testFeedManyFollowers},
		{"FeedFilters", testFeedFilters},
		{"FeedUntilTime", testFeedUntil},
		{"ReleaseHandsBack", testRelease},
		{"ReleaseOfCancelledJob", testReleaseCancelled},
		{"RetriesWithBackoff", testRetries},
		{"CancelReasonReachesRunningJob", testCancelReasonRunning},
		{"Notes", testNotes},
		{"AppendAfterExpiryBeforeNextAttempt", testAppendAfterExpiry},
		{"Keys", testKeys},
		{"KeyNameRace", testKeyNameRace},
		{"SpendOnce", testSpendOnce},
		{"SpendOnceRace", testSpendOnceRace},
		{"FeedReadsWhatItUses", testFeedReadsWhatItUses},
		{"Scatters", testScatters},
		{"ScatterUpdateRace", testScatterRace},
		{"ListScatters", testListScatters},
		{"ScatterRedrive", testScatterRedrive},
		{"JobNamedByCaller", testJobNamedByCaller},
		{"RejectedJobIsFailedAndNeverLeased", testRejectedJob},
		{"IngestCreatesExternalJob", testIngestCreatesExternalJob},
		{"IngestDeduplicates", testIngestDeduplicates},
		{"IngestLayout", testIngestLayout},
		{"IngestBatches", testIngestBatches},
		{"IngestRace", testIngestRace},
		{"IngestAfterEnd", testIngestAfterEnd},
		{"IngestWakesFollowers", testIngestWakesFollowers},
		{"RebuildLog", testRebuildLog},
		{"QueueStats", testQueueStats},
		{"QueuePause", testQueuePause},
		{"EndedPerMinute", testEndedPerMinute},
		{"StartedAt", testStartedAt},
		{"RerunLinks", testRerunLinks},
		{"DeleteJob", testDeleteJob},
		{"DeleteExternalJob", testDeleteExternalJob},
		{"EndedBefore", testEndedBefore},
		{"Secrets", testSecrets},
		{"SecretsOfARerun", testSecretsOfARerun},
	}
	type named = struct {
		name string
		fn   func(t *testing.T, b Backend)
	}
	if b.Reopen != nil {
		tests = append(tests, named{"Persistence", testPersistence}, named{"IngestPersistence", testIngestPersistence})
	}
	if b.Watching != nil {
		tests = append(tests, named{"WaitsLeaveNothing", testWaitsLeaveNothing})
	}
	tests = append(tests, timingCases()...)
	tests = append(tests, capabilityCases(t, b)...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, b)
		})
	}
}

// open returns a store closed at the end of the test.
func open(t *testing.T, b Backend) store.JobStore {
	t.Helper()
	s := b.Open(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// The lease length used where a test waits for expiry.
const shortLease = time.Second

// leaseSlack is how long runOut waits past the end a store gave a lease:
// stores keep times to the millisecond or coarser (SQS its visibility to
// the second), and a sweep must find the lease over by its own clock.
const leaseSlack = 100 * time.Millisecond

// runOut waits until the leases have run out. Each backend runs on its
// real clock (SQS's visibility timers, the times in the database's rows),
// so only time passing ends a lease: this is the wait by the clock the
// suite makes, as short as the leases the store granted.
func runOut(ls ...store.Lease) {
	var end time.Time
	for _, l := range ls {
		if l.ExpiresAt.After(end) {
			end = l.ExpiresAt
		}
	}
	time.Sleep(time.Until(end) + leaseSlack)
}

// Sweep is what the suite's reapers ask of ExpireLeases where no outage is
// meant: sweeps an hour apart still count as regular.
var Sweep = store.Sweep{Grace: time.Minute, Gap: time.Hour}

// defaultExec is the execution config of suite jobs: batches of at most 50
// lines, as a server's defaults make them.
func defaultExec() *spoolv1.ExecutionConfig {
	return &spoolv1.ExecutionConfig{
		Batching: &spoolv1.BatchingConfig{
			FlushIntervalSeconds:   2,
			MaxBatchSize:           50,
			MaxBatchBytes:          256 << 10,
			PlaybackIntervalMillis: 50,
		},
		HeartbeatIntervalSeconds: 30,
	}
}

var queueSeq atomic.Int64

// newQueue returns a queue name no other test uses, so backends may share
// state between tests.
func newQueue() string {
	return fmt.Sprintf("q%d-%d", time.Now().UnixNano()%1e6, queueSeq.Add(1))
}

func newJob(queue string) store.NewJob {
	return store.NewJob{
		Queue:       queue,
		Params:      &spoolv1.JobParams{Argv: []string{"echo", "hello"}},
		Execution:   defaultExec(),
		MaxAttempts: 3,
	}
}

func enqueue(t *testing.T, s store.JobStore, nj store.NewJob) *spoolv1.Job {
	t.Helper()
	job, created, err := s.Enqueue(context.Background(), nj)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if !created {
		t.Fatalf("Enqueue: job %s was not created", job.GetJobId())
	}
	return job
}

// enqueueMany enqueues n jobs on queue, several at a time.
func enqueueMany(t *testing.T, s store.JobStore, queue string, n int) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(16)
	for range n {
		g.Go(func() error {
			_, _, err := s.Enqueue(context.Background(), newJob(queue))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

// leaseOne dequeues exactly one job from queue.
func leaseOne(t *testing.T, s store.JobStore, queue string, vis time.Duration) store.Lease {
	t.Helper()
	ls, err := s.Dequeue(context.Background(), store.DequeueRequest{Queue: queue, Max: 1, LeaseDuration: vis, Wait: 5 * time.Second})
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	if len(ls) != 1 {
		t.Fatalf("Dequeue: got %d leases, want 1", len(ls))
	}
	return ls[0]
}

// runningJob enqueues a job and leases it.
func runningJob(t *testing.T, s store.JobStore, nj store.NewJob) store.Lease {
	t.Helper()
	enqueue(t, s, nj)
	return leaseOne(t, s, nj.Queue, time.Minute)
}

func get(t *testing.T, s store.JobStore, id string) *spoolv1.Job {
	t.Helper()
	j, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return j
}

func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

func wantState(t *testing.T, j *spoolv1.Job, st spoolv1.JobState) {
	t.Helper()
	if j.GetState() != st {
		t.Fatalf("job %s is %s, want %s (result: %v)", j.GetJobId(), j.GetState(), st, j.GetResult())
	}
}

func ts(ms int64) *timestamppb.Timestamp { return timestamppb.New(time.UnixMilli(ms)) }

// Event builders. Timestamps are the sequence in milliseconds after a fixed
// epoch, so time filters have something to bite on.
const epochMs = 1_700_000_000_000

func startEvent(seq int64) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(epochMs + seq), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 42, Command: "echo hello"}}}
}

func endEvent(seq int64, code int32) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(epochMs + seq), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: code}}}
}

func errorEvent(seq int64, msg string) *spoolv1.JobEvent {
	return &spoolv1.JobEvent{Sequence: seq, Timestamp: ts(epochMs + seq), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR,
		EventData: &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: msg}}}
}

// batchEvent returns a batch at seq holding the given lines on stdout.
func batchEvent(seq int64, lines ...string) *spoolv1.JobEvent {
	out := events.TextLines(time.Time{}, lines...)
	for i := range out {
		out[i].Time = time.UnixMilli(epochMs + seq + int64(i))
	}
	return events.Batch{Sequence: seq, PlaybackIntervalMillis: 50, Lines: out}.Event()
}

// numbered returns the lines "from".."to" as strings.
func numbered(from, to int) []string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// seqJob writes what `seq 1 n` run as a job stores: PROCESS_START, the lines
// "1".."n" in batches of size, PROCESS_END. It returns the lease.
func seqJob(t *testing.T, s store.JobStore, queue string, n, size int) store.Lease {
	t.Helper()
	l := runningJob(t, s, newJob(queue))
	evs := []*spoolv1.JobEvent{startEvent(1)}
	seq := int64(2)
	for from := 1; from <= n; from += size {
		lines := numbered(from, min(from+size-1, n))
		evs = append(evs, batchEvent(seq, lines...))
		seq += int64(len(lines))
	}
	evs = append(evs, endEvent(seq, 0))
	appendAll(t, s, l.LeaseRef, evs)
	return l
}

// appendAll publishes events in calls of up to 25, as a worker would.
func appendAll(t *testing.T, s store.JobStore, ref store.LeaseRef, evs []*spoolv1.JobEvent) store.Head {
	t.Helper()
	var h store.Head
	for len(evs) > 0 {
		n := min(len(evs), 25)
		var err error
		h, err = s.Append(context.Background(), ref, events.Messages(evs[:n]...))
		if err != nil {
			t.Fatalf("Append %d-%d: %v", evs[0].GetSequence(), evs[n-1].GetSequence(), err)
		}
		evs = evs[n:]
	}
	return h
}
