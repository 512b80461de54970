package awsstore_test

import (
	"context"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// TestFeedAcrossReplicas: two servers on the same tables. A follower on
// B sees what a worker publishes through A, every event exactly once and
// in order, while it is being written, and stops when A completes the job.
func TestFeedAcrossReplicas(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	a, b := openStore(t, cfg), openStore(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := running(t, a, newJob(newQueue()), time.Minute)
	h := appendAll(t, a, l.LeaseRef, []*spoolv1.JobEvent{startEvent(1), batch(2, lines(1, 20)...)})

	type got struct {
		ev *spoolv1.JobEvent
		at time.Time
	}
	var (
		seen []got
		feed = storekit.NewFeed(b, storekit.FeedRequest{JobID: l.JobID, Follow: true})
		done = make(chan error, 1)
	)
	go func() {
		for ev, err := range feed.Events(ctx) {
			if err != nil {
				done <- err
				return
			}
			for _, e := range events.Unpack(ev) {
				seen = append(seen, got{e, time.Now()})
			}
		}
		done <- nil
	}()

	// 300 more lines in batches of 7, over about a second.
	line := 21
	for line <= 320 {
		k := min(7, 321-line)
		var err error
		if h, err = a.Append(ctx, l.LeaseRef, events.Messages(batch(h.NextSequence, lines(line, line+k-1)...))); err != nil {
			t.Fatal(err)
		}
		line += k
		time.Sleep(25 * time.Millisecond)
	}
	lastWrite := time.Now()
	if _, err := a.Append(ctx, l.LeaseRef, events.Messages(endEvent(h.NextSequence))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Complete(ctx, l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("feed on B: %v", err)
	}
	if f := feed.Finished(); f.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("feed on B ended with the job %v", f)
	}
	want := h.NextSequence // 1 start + 320 lines + end
	if int64(len(seen)) != want {
		t.Fatalf("B saw %d events, want %d", len(seen), want)
	}
	for i, g := range seen {
		if g.ev.GetSequence() != int64(i)+1 {
			t.Fatalf("event %d has sequence %d: not exactly once in order", i, g.ev.GetSequence())
		}
	}
	// Live, not at the end: B (polling every 250 ms) saw most lines before
	// the last write.
	early := 0
	for _, g := range seen {
		if g.at.Before(lastWrite) {
			early++
		}
	}
	if early < len(seen)/2 {
		t.Fatalf("only %d of %d events reached B while the job was writing", early, len(seen))
	}
}

// TestWatchAcrossReplicas: Watch on B fires for a change made through A,
// not without one, and B stops polling once nobody watches.
func TestWatchAcrossReplicas(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	a := openStore(t, cfg)
	b, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	j, _, err := a.Enqueue(ctx, newJob(newQueue()))
	if err != nil {
		t.Fatal(err)
	}
	// Nobody follows the job on B (no ShareWatch): B polls it at the slow
	// pace.
	poll := awsstore.SlowPollInterval(b)
	// The first watch of a job on B fires at B's first poll: B has not seen
	// the job's revision yet, so it cannot tell whether it changed.
	select {
	case <-b.Watch(t.Context(), j.GetJobId()):
	case <-time.After(10 * poll):
		t.Fatal("first watch on B never fired")
	}
	// B stops polling, and forgets the revs it saw, as soon as a poll finds
	// nobody watching: a watch taken after that knows no rev and fires at
	// its first poll. On a busy machine this test may take its next watch
	// only after such a stop (the watch then starts a new loop); it
	// watches again until a watch finds B still polling.
	var w <-chan struct{}
	for try := 1; ; try++ {
		loops := awsstore.WatchLoops(b)
		w = b.Watch(t.Context(), j.GetJobId())
		restarted := awsstore.WatchLoops(b) > loops
		select {
		case <-w:
			if !restarted || try == 3 {
				t.Fatal("watch on B fired without a change")
			}
			continue
		case <-time.After(6 * poll):
		}
		break
	}
	changed := time.Now()
	if _, err := a.Cancel(ctx, j.GetJobId(), "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w:
		t.Logf("B saw A's change after %v", time.Since(changed).Round(time.Millisecond))
	case <-time.After(10 * poll):
		t.Fatal("watch on B did not fire for A's change")
	}
	// Once B keeps nothing for watches, six poll intervals of the clock
	// pass without a poll.
	for deadline := time.Now().Add(10 * time.Second); awsstore.Watching(b) > 0; time.Sleep(poll / 10) {
		if time.Now().After(deadline) {
			t.Fatalf("B still keeps %d jobs for watches that fired", awsstore.Watching(b))
		}
	}
	calls.Take()
	time.Sleep(6 * poll)
	if n, _ := calls.Take(); n["DynamoDB.BatchGetItem"] != 0 {
		t.Fatalf("B polled %d times with nobody watching", n["DynamoDB.BatchGetItem"])
	}
}

// TestFollowersSharedAcrossReplicas: a follower on replica B makes its job
// watched on replica A (the worker's) at A's next read of the job, here a
// heartbeat, for one write by B however often A reads; a job nobody
// follows stays unwatched.
func TestFollowersSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	a, b := openStore(t, cfg), openStore(t, cfg)
	followed := running(t, a, newJob(newQueue()), time.Minute)
	alone := running(t, a, newJob(newQueue()), time.Minute)
	onA, onB := make(chan string, 8), make(chan string, 8)
	a.OnWatchChange(func(id string) { onA <- id })
	b.OnWatchChange(func(id string) { onB <- id })

	began := time.Now()
	b.ShareWatch(followed.JobID, true)
	// B reads back its own write: that is when it has landed.
	select {
	case id := <-onB:
		if id != followed.JobID {
			t.Fatalf("B announced job %s, want %s", id, followed.JobID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("B never wrote that it follows the job")
	}
	if a.WatchedElsewhere(followed.JobID) {
		t.Fatal("A knew of B's follower before reading the job")
	}
	for range 3 {
		for _, l := range []store.Lease{followed, alone} {
			if _, _, err := a.Heartbeat(t.Context(), l.LeaseRef, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case id := <-onA:
		if id != followed.JobID {
			t.Fatalf("A announced job %s, want %s", id, followed.JobID)
		}
	default:
		t.Fatal("A's heartbeat of the followed job did not tell A's service")
	}
	if len(onA) > 0 {
		t.Fatalf("A announced %s too: once per job that becomes watched", <-onA)
	}
	if !a.WatchedElsewhere(followed.JobID) {
		t.Fatal("A does not count B's follower after reading the job")
	}
	if a.WatchedElsewhere(alone.JobID) {
		t.Fatal("A counts a follower of a job nobody follows")
	}
	b.ShareWatch(followed.JobID, false)
	// One write when the follow began, and one per renewal while it
	// lasted: nothing per read.
	if n, most := awsstore.Announced(b), 1+int(time.Since(began)/awsstore.WatchRenewEvery); n < 1 || n > most {
		t.Fatalf("B wrote %d times that it follows the job, want 1 to %d", n, most)
	}
}

// TestFollowPace: a job followed on a replica, and written through
// another, is polled there at the follow pace and strongly consistently (1
// read unit a poll); a job only watched there (as by a waiting heartbeat)
// five times less often and eventually consistently (half a unit): the
// costs docs/aws.md states. The rates are measured over a window of the
// clock, there being nothing to wait for.
func TestFollowPace(t *testing.T) {
	cfg := awstest.Shared(t).NewConfig(t)
	a := openStore(t, cfg)
	b, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	j, _, err := a.Enqueue(t.Context(), newJob(newQueue()))
	if err != nil {
		t.Fatal(err)
	}
	id := j.GetJobId()
	// B watches the job all along: the first watch fires at B's first
	// poll (B knows no rev of it yet), the next only at a change, and
	// nothing changes the job.
	ctx, cancel := context.WithCancel(t.Context())
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for ctx.Err() == nil {
			select {
			case <-b.Watch(ctx, id):
			case <-ctx.Done():
			}
		}
	}()
	defer func() { cancel(); <-watching }()

	const window = 2 * time.Second
	var made map[string]int
	var units map[string]float64
	measure := func(start func()) (polls int, perPoll float64) {
		calls.Take()
		start()
		time.Sleep(window)
		made, units = calls.Take()
		polls = made["DynamoDB.BatchGetItem"]
		if polls == 0 {
			t.Fatalf("B did not poll the watched job in %v", window)
		}
		return polls, units["DynamoDB.BatchGetItem"] / float64(polls)
	}
	watched, watchedUnits := measure(func() {})
	followed, followedUnits := measure(func() { b.ShareWatch(id, true) })
	b.ShareWatch(id, false)
	t.Logf("in %v: %d polls watched (%.2f RCU each), %d followed (%.2f RCU each)", window, watched, watchedUnits, followed, followedUnits)
	// The follow's mark: one write of one unit (the next is due in 5 s).
	if made["DynamoDB.UpdateItem"] != 1 || units["DynamoDB.UpdateItem"] != 1 {
		t.Fatalf("B marked the job followed in %d writes of %.1f WCU, want 1 of 1", made["DynamoDB.UpdateItem"], units["DynamoDB.UpdateItem"])
	}
	if watchedUnits != 0.5 || followedUnits != 1 {
		t.Fatalf("a poll cost %.2f RCU watched and %.2f followed, want 0.5 and 1", watchedUnits, followedUnits)
	}
	if most := int(window/awsstore.SlowPollInterval(b)) + 2; watched > most {
		t.Fatalf("B polled a job only watched %d times in %v, want at most %d", watched, window, most)
	}
	if followed < 2*watched {
		t.Fatalf("B polled a followed job %d times in %v, a job only watched %d: not faster", followed, window, watched)
	}
}
