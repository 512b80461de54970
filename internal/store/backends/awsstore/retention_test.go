package awsstore_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
	"github.com/spool-run/spool/internal/store/storekit"
)

// rawItem reads an item of one of the store's tables as stored (nil when
// absent).
func rawItem(t *testing.T, s *awsstore.Store, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := awsstore.Client(s).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func jobItemKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: id}}
}

// ttlOf is an item's ttl attribute (ok false when it has none).
func ttlOf(t *testing.T, it map[string]types.AttributeValue) (ttl int64, ok bool) {
	t.Helper()
	v, ok := it["ttl"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n, true
}

// partitionSize counts the items of one events-table partition.
func partitionSize(t *testing.T, s *awsstore.Store, part string) int {
	t.Helper()
	out, err := awsstore.Client(s).Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(s.Config().EventsTable),
		KeyConditionExpression:    aws.String("job_id = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: part}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// TestFinalJobsCarryTTL: with JobTTL set, every way a job becomes final
// gives its item a ttl of its end (its updated_at then) plus JobTTL, which
// a later note does not move; jobs not final have none, and a request
// marker expires JobTTL after its job's creation.
func TestFinalJobsCarryTTL(t *testing.T) {
	t.Parallel()
	const keep = 72 * time.Hour
	cfg := awstest.Shared(t).NewConfig(t)
	cfg.JobTTL = keep
	s := openStore(t, cfg)
	ctx := context.Background()
	q := newQueue()
	item := func(id string) map[string]types.AttributeValue {
		return rawItem(t, s, cfg.JobsTable, jobItemKey(id))
	}
	wantTTL := func(what string, j *spoolv1.Job) {
		t.Helper()
		got, ok := ttlOf(t, item(j.GetJobId()))
		if want := j.GetUpdatedAt().AsTime().Add(keep).Unix(); !ok || got != want {
			t.Errorf("%s job: ttl %d (present %v), want updated_at+%v = %d", what, got, ok, keep, want)
		}
	}
	wantNone := func(what, id string) {
		t.Helper()
		if ttl, ok := ttlOf(t, item(id)); ok {
			t.Errorf("%s job has ttl %d", what, ttl)
		}
	}

	nj := newJob(q)
	nj.RequestID = "ttl-" + q
	nj.Retries = 1
	l := running(t, s, nj, time.Minute)
	wantNone("running", l.JobID)
	retry, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{ExitCode: 1})
	if err != nil || retry.GetState() != spoolv1.JobState_JOB_STATE_SCHEDULED {
		t.Fatalf("Complete for a retry: %v, %v", retry.GetState(), err)
	}
	wantNone("retrying", l.JobID)
	// Promoted as at the end of its backoff, the retry is queued at once.
	if p, err := s.PromoteScheduled(ctx, retry.GetRunAfter().AsTime()); err != nil || p.Queued != 1 {
		t.Fatalf("PromoteScheduled at the retry's time: %+v, %v", p, err)
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute, Wait: 10 * time.Second})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue of the retry: %d, %v", len(ls), err)
	}
	done, err := s.Complete(ctx, ls[0].LeaseRef, &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	wantTTL("completed", done)
	marker := rawItem(t, s, cfg.JobsTable, awsstore.RequestMarkerKey(nj.RequestID))
	if got, ok := ttlOf(t, marker); !ok || got != done.GetCreatedAt().AsTime().Add(keep).Unix() {
		t.Errorf("request marker: ttl %d (present %v), want created_at+%v", got, ok, keep)
	}

	queued, _, err := s.Enqueue(ctx, newJob(q))
	if err != nil {
		t.Fatal(err)
	}
	wantNone("queued", queued.GetJobId())
	cancelled, err := s.Cancel(ctx, queued.GetJobId(), "not needed")
	if err != nil {
		t.Fatal(err)
	}
	wantTTL("cancelled while queued", cancelled)

	rj := newJob(q)
	rj.RejectReason = "refused"
	rejected, _, err := s.Enqueue(ctx, rj)
	if err != nil {
		t.Fatal(err)
	}
	wantTTL("rejected", rejected)

	ej := newJob(q)
	ej.MaxAttempts = 1
	lost := running(t, s, ej, time.Second)
	time.Sleep(1200 * time.Millisecond) // its lease runs out by the clock
	if _, err := s.ExpireLeases(ctx, conformance.Sweep); err != nil {
		t.Fatal(err)
	}
	failed, err := s.Get(ctx, lost.JobID)
	if err != nil || failed.GetState() != spoolv1.JobState_JOB_STATE_FAILED {
		t.Fatalf("job out of attempts after its lease ran out: %v, %v", failed.GetState(), err)
	}
	wantTTL("expired", failed)

	ext := ingestOK(t, s, newSource(), rawEvents("e", 1, 2)).Job
	wantNone("open external", ext.GetJobId())
	ended, err := s.Complete(ctx, store.ExternalLeaseRef(ext), &spoolv1.JobResult{})
	if err != nil {
		t.Fatal(err)
	}
	wantTTL("ended external", ended)

	// Seconds after its end (the ttl's unit), a note leaves it as it was.
	if _, err := s.AddNote(ctx, done.GetJobId(), "a note"); err != nil {
		t.Fatal(err)
	}
	wantTTL("noted after its end", done)
}

// TestJobsKeptWithoutTTL: with JobTTL 0 (the default) nothing expires.
func TestJobsKeptWithoutTTL(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	nj := newJob(newQueue())
	nj.RequestID = "keep-" + nj.Queue
	l := running(t, s, nj, time.Minute)
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if ttl, ok := ttlOf(t, rawItem(t, s, s.Config().JobsTable, jobItemKey(l.JobID))); ok {
		t.Errorf("finished job has ttl %d without JobTTL", ttl)
	}
	if ttl, ok := ttlOf(t, rawItem(t, s, s.Config().JobsTable, awsstore.RequestMarkerKey(nj.RequestID))); ok {
		t.Errorf("request marker has ttl %d without JobTTL", ttl)
	}
}

// TestExpiredMarkerIsReplaced: a request marker past its ttl, which
// DynamoDB has not deleted yet, counts as gone: the request id makes a new
// job.
func TestExpiredMarkerIsReplaced(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	cfg.JobTTL = time.Hour
	s := openStore(t, cfg)
	ctx := context.Background()
	nj := newJob(newQueue())
	nj.RequestID = "expiring-" + nj.Queue
	first, _, err := s.Enqueue(ctx, nj)
	if err != nil {
		t.Fatal(err)
	}
	if again, created, err := s.Enqueue(ctx, nj); err != nil || created || again.GetJobId() != first.GetJobId() {
		t.Fatalf("repeat before expiry: %s created=%v %v; want %s", again.GetJobId(), created, err, first.GetJobId())
	}
	_, err = awsstore.Client(s).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(cfg.JobsTable), Key: awsstore.RequestMarkerKey(nj.RequestID),
		UpdateExpression:          aws.String("SET #t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": "ttl"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	again, created, err := s.Enqueue(ctx, nj)
	if err != nil || !created || again.GetJobId() == first.GetJobId() {
		t.Fatalf("enqueue over an expired marker: %s created=%v %v; want a new job", again.GetJobId(), created, err)
	}
}

// TestExpiredSourceJobStaysGone: a source's newest job deleted by
// DynamoDB's TTL is not brought back from the source's record (as a job
// whose opening was cut short would be): the next events open a new job.
func TestExpiredSourceJobStaysGone(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	cfg.JobTTL = time.Millisecond
	s := openStore(t, cfg)
	ctx := context.Background()
	src := newSource()
	first := ingestOK(t, s, src, rawEvents("e", 1, 2)).Job
	if _, err := s.Complete(ctx, store.ExternalLeaseRef(first), &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	// What DynamoDB's TTL does once the job has expired.
	if _, err := awsstore.Client(s).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(cfg.JobsTable), Key: jobItemKey(first.GetJobId())}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past the job's 1 ms TTL by the clock, as DynamoDB's would be
	next := ingestOK(t, s, src, rawEvents("f", 1, 2))
	if !next.Created || next.Job.GetJobId() == first.GetJobId() {
		t.Fatalf("ingest after the newest job expired: job %s created=%v; want a new job", next.Job.GetJobId(), next.Created)
	}
	if _, err := s.Get(ctx, first.GetJobId()); err == nil {
		t.Fatal("the expired job is back")
	}
	wantLog(t, s, next.Job.GetJobId(), messagesOf(rawEvents("f", 1, 2)))
}

// TestDeleteJobLeavesNothing: DeleteJob removes every item stored for a
// job: its log, its request marker, and for an external job its accepted
// events and their markers.
func TestDeleteJobLeavesNothing(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	cfg := s.Config()
	nj := newJob(newQueue())
	nj.RequestID = "gone-" + nj.Queue
	l := running(t, s, nj, time.Minute)
	appendAll(t, s, l.LeaseRef, outputJob(300, 50))
	if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	src := newSource()
	evs := rawEvents("e", 1, 40)
	ext := ingestOK(t, s, src, evs).Job
	if _, err := s.Complete(ctx, store.ExternalLeaseRef(ext), &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if partitionSize(t, s, l.JobID) == 0 || partitionSize(t, s, "accepted#"+ext.GetJobId()) == 0 {
		t.Fatal("nothing stored to delete")
	}
	for _, id := range []string{l.JobID, ext.GetJobId()} {
		if err := s.DeleteJob(ctx, id); err != nil {
			t.Fatalf("DeleteJob(%s): %v", id, err)
		}
	}
	for _, part := range []string{l.JobID, ext.GetJobId(), "accepted#" + ext.GetJobId()} {
		if n := partitionSize(t, s, part); n != 0 {
			t.Errorf("events partition %s keeps %d items", part, n)
		}
	}
	if it := rawItem(t, s, cfg.JobsTable, awsstore.RequestMarkerKey(nj.RequestID)); it != nil {
		t.Errorf("request marker kept: %v", it)
	}
	for _, e := range evs {
		if it := rawItem(t, s, cfg.EventsTable, awsstore.MarkerKey(src, e.ID)); it != nil {
			t.Fatalf("marker of event %s kept", e.ID)
		}
	}
}

// TestQueueStatsAcrossServers: a server that never used a queue lists it
// (the queue registry), paused or with jobs.
func TestQueueStatsAcrossServers(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	a := openStore(t, cfg)
	ctx := context.Background()
	q, paused := newQueue(), newQueue()
	if _, _, err := a.Enqueue(ctx, newJob(q)); err != nil {
		t.Fatal(err)
	}
	if err := a.SetQueuePaused(ctx, paused, true, storekit.Now()); err != nil {
		t.Fatal(err)
	}
	b := openStore(t, cfg)
	stats, err := b.QueueStats(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]store.QueueStats{}
	for _, st := range stats {
		byName[st.Name] = st
	}
	if st, ok := byName[q]; !ok || st.Queued != 1 {
		t.Errorf("queue %s from another server: %+v (listed %v); want 1 queued", q, st, ok)
	}
	if st, ok := byName[paused]; !ok || !st.Paused {
		t.Errorf("paused queue %s from another server: %+v (listed %v)", paused, st, ok)
	}
	if _, ok := byName["default"]; ok {
		t.Errorf("the configured queue without jobs is listed: %+v", byName["default"])
	}
}

// TestQueueStatsBound: a queue's counts examine at most statsScan of its
// newest jobs (doc.go, Queues), so a larger backlog counts as that many.
func TestQueueStatsBound(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	awsstore.SetStatsScan(s, 3)
	ctx := context.Background()
	q := newQueue()
	var jobs []*spoolv1.Job
	for range 5 {
		j, _, err := s.Enqueue(ctx, newJob(q))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	stats, err := s.QueueStats(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(stats, func(st store.QueueStats) bool { return st.Name == q })
	if i < 0 {
		t.Fatalf("queue %s not listed", q)
	}
	if st := stats[i]; st.Queued != 3 || !st.OldestQueued.Equal(jobs[2].GetCreatedAt().AsTime()) {
		t.Fatalf("stats past the bound: %+v; want the newest 3 queued, the oldest of them created %v", st, jobs[2].GetCreatedAt().AsTime())
	}
}

// TestEndedBeforeGoesOn: each EndedBefore call goes on from where the last
// stopped, so a front of old jobs that are not to go (queued ones) longer
// than one call's work does not hide the ended jobs after it.
func TestEndedBeforeGoesOn(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	awsstore.SetEndedScan(s, 2, 1)
	ctx := context.Background()
	q := newQueue()
	for range 5 {
		if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
			t.Fatal(err)
		}
	}
	var ended []string
	for range 2 {
		l := running(t, s, newJob(newQueue()), time.Minute)
		if _, err := s.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
			t.Fatal(err)
		}
		ended = append(ended, l.JobID)
	}
	cut := storekit.Now().Add(time.Millisecond)
	var got []string
	for range 6 {
		ids, err := s.EndedBefore(ctx, cut, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 2 {
			t.Fatalf("one call of 2 entries' work returned %d ids", len(ids))
		}
		got = append(got, ids...)
		if len(got) == len(ended) {
			break
		}
	}
	if !slices.Equal(got, ended) {
		t.Fatalf("EndedBefore found %v, want %v, oldest first", got, ended)
	}
}
