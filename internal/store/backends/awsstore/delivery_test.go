package awsstore_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
)

// TestEnqueueFinishedAfterCrash: a server dies after recording a request
// id and before sending the job; a retry of the request (on another
// server) finishes that enqueue instead of creating a second job, and the
// job is delivered once, with the secrets the first enqueue gave it.
func TestEnqueueFinishedAfterCrash(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	crashing, other := openStore(t, cfg), openStore(t, cfg)
	ctx := context.Background()
	crash := errors.New("server died")
	awsstore.CrashAfterMarker(crashing, crash)
	awsstore.SetRollForwardAfter(other, 200*time.Millisecond)
	nj := newJob(newQueue())
	nj.RequestID = "retry-me"
	nj.Secrets = []byte("the secrets the first enqueue sealed")
	if _, _, err := crashing.Enqueue(ctx, nj); !errors.Is(err, crash) {
		t.Fatalf("crashing enqueue: %v", err)
	}
	retry := nj
	retry.Secrets = []byte("sealed again by the retry")
	j, created, err := other.Enqueue(ctx, retry)
	if err != nil || created {
		t.Fatalf("retried enqueue: created=%v err=%v, want the recorded job", created, err)
	}
	if got, err := other.JobSecrets(ctx, j.GetJobId()); err != nil || string(got) != string(nj.Secrets) {
		t.Fatalf("secrets of the finished enqueue: %q, %v; want the first enqueue's", got, err)
	}
	again, _, err := other.Enqueue(ctx, nj)
	if err != nil || again.GetJobId() != j.GetJobId() {
		t.Fatalf("third enqueue: job %s err %v, want %s", again.GetJobId(), err, j.GetJobId())
	}
	jobs, _, err := other.List(ctx, store.ListFilter{Queue: nj.Queue})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("queue holds %d jobs (err %v), want 1", len(jobs), err)
	}
	if l := leaseOne(t, other, nj.Queue, time.Minute); l.JobID != j.GetJobId() {
		t.Fatalf("leased %s, want %s", l.JobID, j.GetJobId())
	}
	ls, err := other.Dequeue(ctx, store.DequeueRequest{Queue: nj.Queue, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("job delivered twice: %d more leases, err %v", len(ls), err)
	}
}

// v7At is a UUIDv7 made at t.
func v7At(t time.Time) string {
	var u uuid.UUID
	_, _ = rand.Read(u[:])
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

// TestPoisonMessages: messages that cannot lead to a lease are deleted,
// except those that may yet (a job still being written, a job leased
// under another message), which are hidden.
func TestPoisonMessages(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	q := newQueue()
	done := running(t, s, newJob(q), time.Minute)
	if _, err := s.Complete(ctx, done.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	busy := running(t, s, newJob(q), time.Minute)
	body := func(id string) string { return fmt.Sprintf(`{"job_id":%q,"queue":%q,"attempt":0}`, id, q) }
	for _, b := range []string{
		"not json",
		`{"queue":"x"}`,
		body("not-a-uuid"),
		body(v7At(time.Now().Add(-time.Hour))), // a job that was never written
		body(done.JobID),                       // a finished job
		body(v7At(time.Now())),                 // a job perhaps still being written: kept
		body(busy.JobID),                       // a duplicate for a leased job: kept
	} {
		if err := awsstore.SendRaw(ctx, s, q, b); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("poison messages gave %d leases, err %v", len(ls), err)
	}
	// Left: the two kept messages, and the leased job's own message.
	all, inFlight, err := awsstore.QueueCounts(ctx, s, q)
	if err != nil || all != 3 || inFlight != 3 {
		t.Fatalf("queue holds %d messages, %d in flight (err %v); want 3 and 3", all, inFlight, err)
	}
	if j, _ := s.Get(ctx, busy.JobID); j.GetAttempt() != 1 || j.GetState() != spoolv1.JobState_JOB_STATE_RUNNING {
		t.Fatalf("a duplicate message changed the leased job: %v", j)
	}
}

// TestDuplicateDeliveryLeasesOnce: two messages for one job, received by
// two servers at once, give one lease.
func TestDuplicateDeliveryLeasesOnce(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	a, b := openStore(t, cfg), openStore(t, cfg)
	ctx := context.Background()
	q := newQueue()
	j, _, err := a.Enqueue(ctx, newJob(q))
	if err != nil {
		t.Fatal(err)
	}
	if err := awsstore.SendRaw(ctx, a, q, fmt.Sprintf(`{"job_id":%q,"queue":%q,"attempt":0}`, j.GetJobId(), q)); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		leases []store.Lease
		wg     sync.WaitGroup
	)
	for _, s := range []*awsstore.Store{a, b, a, b} {
		wg.Go(func() {
			ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Minute})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			leases = append(leases, ls...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(leases) != 1 || leases[0].Attempt != 1 {
		t.Fatalf("%d leases of one job (%v), want 1 of attempt 1", len(leases), leases)
	}
}

// TestDeadLetteredJobFails: when SQS gives up on a message (here after one
// receive) and moves it to the dead-letter queue, ExpireLeases fails its
// job, which would otherwise wait for a delivery that never comes.
func TestDeadLetteredJobFails(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	cfg.MaxReceiveCount = 1
	s := openStore(t, cfg)
	ctx := context.Background()
	q := newQueue()
	if _, _, err := s.Enqueue(ctx, newJob(q)); err != nil {
		t.Fatal(err)
	}
	// A receive that does not wait hides the message for the lease alone
	// (one that waits adds its wait).
	ls, err := s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 1, LeaseDuration: time.Second})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Dequeue: %d leases, err %v; want 1", len(ls), err)
	}
	l := ls[0]
	time.Sleep(1500 * time.Millisecond) // visibility ends: SQS dead-letters it
	n, err := s.ExpireLeases(ctx, conformance.Sweep)
	if err != nil || n.Settled != 1 {
		t.Fatalf("ExpireLeases: %+v, err %v; want 1 settled", n, err)
	}
	j, err := s.Get(ctx, l.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if j.GetState() != spoolv1.JobState_JOB_STATE_FAILED || !strings.Contains(j.GetResult().GetError(), "dead-letter") {
		t.Fatalf("dead-lettered job is %s: %q", j.GetState(), j.GetResult().GetError())
	}
	ls, err = s.Dequeue(ctx, store.DequeueRequest{Queue: q, Max: 10, LeaseDuration: time.Minute})
	if err != nil || len(ls) != 0 {
		t.Fatalf("a dead-lettered job was leased: %v %v", ls, err)
	}
}
