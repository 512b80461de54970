package awsstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/conformance"
	"github.com/spool-run/spool/internal/store/storekit"
)

// TestZombieAppendIsFenced: a server reads the job and plans a publish of
// attempt 1, then stalls; the lease expires and attempt 2 runs on another
// server, continuing the log right after attempt 1's. When the stalled
// server wakes and writes its item (BatchWriteItem has no conditions), at
// a sequence attempt 2 has written too, it must not overwrite or
// interleave with attempt 2's log, and its commit must be refused.
func TestZombieAppendIsFenced(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	zombie, live := openStore(t, cfg), openStore(t, cfg)
	ctx := context.Background()
	q := newQueue()
	l1 := running(t, zombie, newJob(q), time.Second)
	appendAll(t, zombie, l1.LeaseRef, []*spoolv1.JobEvent{startEvent(1), batch(2, "a1", "a2", "a3")})

	planned, resume := make(chan struct{}), make(chan struct{})
	awsstore.BeforeWrite(zombie, func(ctx context.Context) error {
		close(planned)
		<-resume
		return nil
	})
	zombieErr := make(chan error, 1)
	go func() {
		_, err := zombie.Append(ctx, l1.LeaseRef, events.Messages(batch(5, "z1")))
		zombieErr <- err
	}()
	<-planned

	time.Sleep(1200 * time.Millisecond) // attempt 1's lease runs out
	if _, err := live.ExpireLeases(ctx, conformance.Sweep); err != nil {
		t.Fatal(err)
	}
	l2 := leaseOne(t, live, q, time.Minute)
	// Nothing of attempt 1 past its head was committed: attempt 2 goes on
	// right after it, at the sequence the zombie is about to write.
	if l2.Attempt != 2 || l2.Head != (store.Head{NextSequence: 5, NextLine: 4}) {
		t.Fatalf("attempt %d starts at %+v, want attempt 2 at sequence 5, line 4", l2.Attempt, l2.Head)
	}
	appendAll(t, live, l2.LeaseRef, []*spoolv1.JobEvent{startEvent(5), batch(6, "b1", "b2"), endEvent(8)})

	close(resume) // the zombie writes its item now, then tries to commit
	if err := <-zombieErr; !errors.Is(err, spool.ErrStaleLease) {
		t.Fatalf("zombie append: %v, want a stale lease", err)
	}
	if _, err := live.Complete(ctx, l2.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1:1:0:EVENT_TYPE_PROCESS_START", "1:2:1:a1", "1:3:2:a2", "1:4:3:a3",
		"2:5:0:EVENT_TYPE_PROCESS_START", "2:6:4:b1", "2:7:5:b2", "2:8:0:EVENT_TYPE_PROCESS_END",
	}
	for _, s := range []*awsstore.Store{zombie, live} {
		if got := summary(logOf(t, s, l1.JobID)); !slices.Equal(got, want) {
			t.Fatalf("log after the zombie wrote:\n%v\nwant\n%v", got, want)
		}
	}
	// Reading from a line or a sequence does not land on the zombie's
	// item either, though its line number (4, ending before attempt 2's
	// batch) comes first in the by-line index.
	var first *spoolv1.JobEvent
	for ev, err := range storekit.Read(ctx, live, store.ReadRequest{JobID: l1.JobID, FromLine: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		first = ev
		break
	}
	if first.GetSequence() != 6 || first.GetAttempt() != 2 {
		t.Fatalf("read from line 5 starts at sequence %d of attempt %d, want 6 (lines 4-5) of attempt 2", first.GetSequence(), first.GetAttempt())
	}
	if got := summary(readAll(t, live, store.ReadRequest{JobID: l1.JobID, FromSequence: 5})); !slices.Equal(got, want[4:]) {
		t.Fatalf("read from sequence 5:\n%v\nwant\n%v", got, want[4:])
	}
}

// TestRetriedPublishAfterCrash: a publish that died before its commit
// (before or after writing its items) is retried by the worker, first in
// part, then whole; the retries store the events once.
func TestRetriedPublishAfterCrash(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	crash := errors.New("server crashed")
	evs := []*spoolv1.JobEvent{startEvent(1), batch(2, lines(1, 50)...), batch(52, lines(51, 60)...)}
	for name, setHook := range map[string]func(*awsstore.Store, func(context.Context) error){
		"before writing": awsstore.BeforeWrite,
		"after writing":  awsstore.AfterWrite,
	} {
		t.Run(name, func(t *testing.T) {
			l := running(t, s, newJob(newQueue()), time.Minute)
			setHook(s, func(context.Context) error { return crash })
			if _, err := s.Append(ctx, l.LeaseRef, events.Messages(evs...)); !errors.Is(err, crash) {
				t.Fatalf("crashing append: %v", err)
			}
			setHook(s, nil)
			if j, _ := s.Get(ctx, l.JobID); j.GetLastSequence() != 0 {
				t.Fatalf("an unfinished append shows: last_sequence %d", j.GetLastSequence())
			}
			// A worker restarted after the cut-off publish may resend a
			// shorter prefix first: it is stored, and nothing of the old
			// publish past it shows.
			h, err := s.Append(ctx, l.LeaseRef, events.Messages(evs[:2]...))
			if err != nil || h != (store.Head{NextSequence: 52, NextLine: 51}) {
				t.Fatalf("partial resend: head %+v, err %v", h, err)
			}
			if got := logOf(t, s, l.JobID); len(got) != 51 || got[50].GetOutputData().GetLineNumber() != 50 {
				t.Fatalf("log after the partial resend has %d events", len(got))
			}
			h, err = s.Append(ctx, l.LeaseRef, events.Messages(evs...))
			if err != nil || h != (store.Head{NextSequence: 62, NextLine: 61}) {
				t.Fatalf("retry: head %+v, err %v", h, err)
			}
			got := logOf(t, s, l.JobID)
			if len(got) != 61 || got[60].GetOutputData().GetLineNumber() != 60 {
				t.Fatalf("log after the retry has %d events", len(got))
			}
			if h, err := s.Append(ctx, l.LeaseRef, events.Messages(endEvent(62))); err != nil || h.NextSequence != 63 {
				t.Fatalf("append after the retry: %+v %v", h, err)
			}
		})
	}
}

// TestSlowPublishAndItsRetry: a publish stalls before writing; the
// worker, tired of waiting, sends the same events again, which stores
// them. When the first call wakes, it writes the same items again and
// reports success: the events are stored once.
func TestSlowPublishAndItsRetry(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	l := running(t, s, newJob(newQueue()), time.Minute)
	evs := []*spoolv1.JobEvent{startEvent(1), batch(2, lines(1, 50)...)}
	var once sync.Once
	planned, resume := make(chan struct{}), make(chan struct{})
	awsstore.BeforeWrite(s, func(context.Context) error {
		stall := false
		once.Do(func() { stall = true })
		if stall {
			close(planned)
			<-resume
		}
		return nil
	})
	slow := make(chan error, 1)
	go func() {
		h, err := s.Append(ctx, l.LeaseRef, events.Messages(evs...))
		if err == nil && h.NextSequence != 52 {
			err = fmt.Errorf("head %+v", h)
		}
		slow <- err
	}()
	<-planned
	if h, err := s.Append(ctx, l.LeaseRef, events.Messages(evs...)); err != nil || h != (store.Head{NextSequence: 52, NextLine: 51}) {
		t.Fatalf("retry while the first call stalls: head %+v, err %v", h, err)
	}
	close(resume)
	if err := <-slow; err != nil {
		t.Fatalf("the slow first call: %v", err)
	}
	if got := logOf(t, s, l.JobID); len(got) != 51 {
		t.Fatalf("log holds %d events, want 51", len(got))
	}
}

// TestResendCutDifferently: a publish dies after writing its items, and
// the worker resends the same events cut into other batches. The first
// call's items past the start of the resent ones are never deleted
// (finding them would cost every publish a query); readers skip an item
// that starts inside the one before it, so every read yields each event
// once, in order.
func TestResendCutDifferently(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	l := running(t, s, newJob(newQueue()), time.Minute)
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{startEvent(1)})
	crash := errors.New("server crashed")
	awsstore.AfterWrite(s, func(context.Context) error { return crash })
	if _, err := s.Append(ctx, l.LeaseRef, events.Messages(batch(2, lines(1, 25)...), batch(27, lines(26, 50)...))); !errors.Is(err, crash) {
		t.Fatalf("crashing append: %v", err)
	}
	awsstore.AfterWrite(s, nil)
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{batch(2, lines(1, 50)...), endEvent(52)})

	wantRun := func(name string, evs []*spoolv1.JobEvent, from int64) {
		t.Helper()
		if len(evs) == 0 || evs[0].GetSequence() > from || evs[len(evs)-1].GetSequence() != 52 {
			t.Fatalf("%s: %v, want each event from %d to 52", name, summary(evs), from)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].GetSequence() != evs[i-1].GetSequence()+1 {
				t.Fatalf("%s: sequence %d follows %d: %v", name, evs[i].GetSequence(), evs[i-1].GetSequence(), summary(evs))
			}
		}
	}
	wantRun("the whole log", logOf(t, s, l.JobID), 1)
	wantRun("read from sequence 30", readAll(t, s, store.ReadRequest{JobID: l.JobID, FromSequence: 30}), 30)
	fromLine := readAll(t, s, store.ReadRequest{JobID: l.JobID, FromLine: 40})
	wantRun("read from line 40", fromLine, 41)
}

// TestReservationOfAnOlderVersion: servers before this version reserved a
// publish's range on the job item first. A reservation such a server left
// pending, under a lease still current, is committed over by the lease's
// next publish; one left by a lease that ran out becomes a hole at the
// next lease, and the log reads on past it.
func TestReservationOfAnOlderVersion(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	reserve := func(l store.Lease, to int64) {
		t.Helper()
		_, err := awsstore.Client(s).UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        aws.String(s.Config().JobsTable),
			Key:              map[string]dbtypes.AttributeValue{"job_id": &dbtypes.AttributeValueMemberS{Value: l.JobID}},
			UpdateExpression: aws.String("SET res_seq = :s, res_line = :l, res_lease = :o, res_at = :a"),
			ExpressionAttributeValues: map[string]dbtypes.AttributeValue{
				":s": &dbtypes.AttributeValueMemberN{Value: fmt.Sprint(to)}, ":l": &dbtypes.AttributeValueMemberN{Value: "1"},
				":o": &dbtypes.AttributeValueMemberS{Value: l.LeaseID}, ":a": &dbtypes.AttributeValueMemberN{Value: "1"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	q := newQueue()
	l := running(t, s, newJob(q), time.Minute)
	reserve(l, 4)
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{startEvent(1), batch(2, "a1", "a2")})
	if it := jobItem(t, s, l.JobID); it["res_lease"] != nil {
		t.Fatalf("the old reservation is still pending after the lease's publish: %v", it["res_lease"])
	}

	l1 := running(t, s, newJob(q), time.Second)
	appendAll(t, s, l1.LeaseRef, []*spoolv1.JobEvent{startEvent(1)})
	reserve(l1, 5) // [2, 5), never committed
	time.Sleep(1200 * time.Millisecond)
	if _, err := s.ExpireLeases(ctx, conformance.Sweep); err != nil {
		t.Fatal(err)
	}
	l2 := leaseOne(t, s, q, time.Minute)
	if l2.Head != (store.Head{NextSequence: 5, NextLine: 1}) {
		t.Fatalf("attempt 2 starts at %+v, want after the hole, at sequence 5, line 1", l2.Head)
	}
	appendAll(t, s, l2.LeaseRef, []*spoolv1.JobEvent{startEvent(5), batch(6, "b1"), endEvent(7)})
	want := []string{"1:1:0:EVENT_TYPE_PROCESS_START", "2:5:0:EVENT_TYPE_PROCESS_START", "2:6:1:b1", "2:7:0:EVENT_TYPE_PROCESS_END"}
	if got := summary(logOf(t, s, l1.JobID)); !slices.Equal(got, want) {
		t.Fatalf("log:\n%v\nwant\n%v", got, want)
	}
}

// TestLateOutputBeforeTheNextLease: an attempt whose lease ran out may
// still deliver its output while its job waits queued. Output it commits
// between the next lease's read of the job and that lease stays in the
// log: the lease sees the head move and leases the job as it is then, so
// attempt 2 goes on after that output.
func TestLateOutputBeforeTheNextLease(t *testing.T) {
	t.Parallel()
	s := freshStore(t)
	ctx := context.Background()
	q := newQueue()
	l1 := running(t, s, newJob(q), time.Second)
	appendAll(t, s, l1.LeaseRef, []*spoolv1.JobEvent{startEvent(1), batch(2, "a1")})
	time.Sleep(1200 * time.Millisecond) // attempt 1's lease runs out
	if _, err := s.ExpireLeases(ctx, conformance.Sweep); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	awsstore.BeforeLease(s, func(ctx context.Context) error {
		var err error
		once.Do(func() { _, err = s.Append(ctx, l1.LeaseRef, events.Messages(batch(3, "a2"))) })
		return err
	})
	l2 := leaseOne(t, s, q, time.Minute)
	awsstore.BeforeLease(s, nil)
	if l2.Attempt != 2 || l2.Head != (store.Head{NextSequence: 4, NextLine: 3}) {
		t.Fatalf("attempt %d starts at %+v, want attempt 2 after attempt 1's late line, at sequence 4, line 3", l2.Attempt, l2.Head)
	}
	appendAll(t, s, l2.LeaseRef, []*spoolv1.JobEvent{startEvent(4), batch(5, "b1"), endEvent(6)})
	want := []string{"1:1:0:EVENT_TYPE_PROCESS_START", "1:2:1:a1", "1:3:2:a2",
		"2:4:0:EVENT_TYPE_PROCESS_START", "2:5:3:b1", "2:6:0:EVENT_TYPE_PROCESS_END"}
	if got := summary(logOf(t, s, l1.JobID)); !slices.Equal(got, want) {
		t.Fatalf("log:\n%v\nwant\n%v", got, want)
	}
}
