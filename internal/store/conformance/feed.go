package conformance

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/convert"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// follower collects what a following feed yields, in the background.
type follower struct {
	done   chan struct{}
	evs    []*spoolv1.JobEvent
	err    error
	final  *spoolv1.Job
	pause  time.Duration // sleep after each event: a slow reader
	cancel context.CancelFunc
}

func follow(s store.JobStore, r storekit.FeedRequest, pause time.Duration) *follower {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	f := &follower{done: make(chan struct{}), pause: pause, cancel: cancel}
	r.Follow = true
	feed := storekit.NewFeed(s, r)
	go func() {
		defer close(f.done)
		for ev, err := range feed.Events(ctx) {
			if err != nil {
				f.err = err
				return
			}
			f.evs = append(f.evs, events.Unpack(ev)...)
			if f.pause > 0 {
				time.Sleep(f.pause)
			}
		}
		f.final = feed.Finished()
	}()
	return f
}

func (f *follower) wait(t *testing.T) {
	t.Helper()
	defer f.cancel()
	select {
	case <-f.done:
	case <-time.After(3 * time.Minute):
		t.Fatal("feed did not end after the job finished")
	}
	if f.err != nil {
		t.Fatalf("feed: %v", f.err)
	}
	if f.final == nil || !convert.State(f.final.GetState()).IsFinal() {
		t.Fatalf("feed ended without the finished job (got %v)", f.final)
	}
}

// writeLines publishes n lines in batches of size from the lease's head,
// pausing between batches, and returns the new head.
func writeLines(t *testing.T, s store.JobStore, l store.Lease, h store.Head, n, size int, pause time.Duration) store.Head {
	t.Helper()
	line := int(h.NextLine)
	for written := 0; written < n; {
		k := min(size, n-written)
		var err error
		h, err = s.Append(context.Background(), l.LeaseRef, events.Messages(batchEvent(h.NextSequence, numbered(line, line+k-1)...)))
		if err != nil {
			t.Errorf("Append: %v", err)
			return h
		}
		written += k
		line += k
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return h
}

func finish(t *testing.T, s store.JobStore, l store.Lease, h store.Head) {
	t.Helper()
	if _, err := s.Append(context.Background(), l.LeaseRef, events.Messages(endEvent(h.NextSequence, 0))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{}); err != nil {
		t.Fatal(err)
	}
}

// testFeedStoredThenLive: a follower that joins mid-job gets the stored
// part, then the live part, with no gap or repeat at the seam, and stops
// when the job finishes.
func testFeedStoredThenLive(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	h, err := s.Append(context.Background(), l.LeaseRef, events.Messages(startEvent(1)))
	if err != nil {
		t.Fatal(err)
	}
	h = writeLines(t, s, l, h, 500, 50, 0)                                      // stored before anyone watches
	whole := follow(s, storekit.FeedRequest{JobID: l.JobID}, 0)                 // from the start
	middle := follow(s, storekit.FeedRequest{JobID: l.JobID, FromLine: 250}, 0) // from a stored line
	ahead := follow(s, storekit.FeedRequest{JobID: l.JobID, FromLine: 1000}, 0) // from a line not yet written
	h = writeLines(t, s, l, h, 1000, 7, time.Millisecond)                       // live, in small batches
	finish(t, s, l, h)                                                          // sequence 1502

	whole.wait(t)
	wantContiguous(t, whole.evs, 1, 1502)
	middle.wait(t)
	wantContiguous(t, middle.evs, 251, 1502) // line 250 is sequence 251
	ahead.wait(t)
	wantContiguous(t, ahead.evs, 1001, 1502)
	if d := ahead.evs[0].GetOutputData(); d.GetLineNumber() != 1000 || string(d.GetOutput()) != "1000" {
		t.Fatalf("follower from line 1000 started at line %d %q", d.GetLineNumber(), d.GetOutput())
	}
	if whole.final.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("finished job state %s", whole.final.GetState())
	}

	// A follower of a finished job gets everything and ends at once.
	late := follow(s, storekit.FeedRequest{JobID: l.JobID, FromSequence: 1400}, 0)
	late.wait(t)
	wantContiguous(t, late.evs, 1400, 1502)

	// Without follow, a feed stops at what is stored.
	l2 := runningJob(t, s, newJob(newQueue()))
	writeLines(t, s, l2, l2.Head, 120, 50, 0)
	stored := feedAll(t, s, storekit.FeedRequest{JobID: l2.JobID})
	wantContiguous(t, stored, 1, 120)

	var missing error
	for _, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: "no-such-job", Follow: true}).Events(context.Background()) {
		missing = err
	}
	wantErr(t, missing, spool.ErrNotFound, "feed of an unknown job")
}

// testFeedManyFollowers: 10 followers, one of them slow, all see every event
// of a job that writes fast, exactly once and in order.
func testFeedManyFollowers(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	var fs []*follower
	for i := range 10 {
		pause := time.Duration(0)
		if i == 0 {
			pause = 200 * time.Microsecond // ~5,000 lines/s at most
		}
		fs = append(fs, follow(s, storekit.FeedRequest{JobID: l.JobID}, pause))
	}
	finish(t, s, l, writeLines(t, s, l, l.Head, 5000, 50, 0))
	for i, f := range fs {
		f.wait(t)
		if len(f.evs) != 5001 {
			t.Fatalf("follower %d got %d events, want 5001", i, len(f.evs))
		}
		wantContiguous(t, f.evs, 1, 5001)
	}
}

// testFeedFilters: event type and time filters.
func testFeedFilters(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{
		startEvent(1), batchEvent(2, numbered(1, 50)...), errorEvent(52, "oops"), batchEvent(53, numbered(51, 60)...), endEvent(63, 1),
	})
	lifecycle := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, Types: []spoolv1.EventType{
		spoolv1.EventType_EVENT_TYPE_PROCESS_START, spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR, spoolv1.EventType_EVENT_TYPE_PROCESS_END}})
	if got := sequences(lifecycle); len(got) != 3 || got[0] != 1 || got[1] != 52 || got[2] != 63 {
		t.Fatalf("lifecycle events at %v, want [1 52 63]", got)
	}
	output := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, Types: []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA}})
	if len(output) != 60 {
		t.Fatalf("output filter: %d events, want 60 lines", len(output))
	}
	// Timestamps are epoch+sequence ms: from epoch+30 is sequence 30 onwards.
	recent := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromTime: time.UnixMilli(epochMs + 30)})
	wantContiguous(t, recent, 30, 63)
}

// testFeedUntil: an end time leaves out what was written after it, with
// or without a start time, and ends the feed there: at once when a
// stored event is past it, or, following a job that prints nothing past
// it, once the clock has passed it and its grace, with what arrived in
// time.
func testFeedUntil(t *testing.T, b Backend) {
	s := open(t, b)
	l := runningJob(t, s, newJob(newQueue()))
	// Times are epoch+sequence ms.
	h := appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{
		startEvent(1), batchEvent(2, numbered(1, 50)...), errorEvent(52, "oops"), batchEvent(53, numbered(51, 60)...),
	})
	wantContiguous(t, feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, UntilTime: time.UnixMilli(epochMs + 40)}), 1, 40)
	wantContiguous(t, feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, FromTime: time.UnixMilli(epochMs + 30),
		UntilTime: time.UnixMilli(epochMs + 55)}), 30, 55)
	if got := feedAll(t, s, storekit.FeedRequest{JobID: l.JobID, UntilTime: time.UnixMilli(epochMs)}); len(got) != 0 {
		t.Fatalf("until before the first event: %d events", len(got))
	}

	// Following: an event past the end time ends the feed, though the job
	// runs on.
	past := storekit.NewFeed(s, storekit.FeedRequest{JobID: l.JobID, Follow: true, UntilTime: time.UnixMilli(epochMs + 20)})
	got, err := drain(past)
	if err != nil || !past.UntilReached() || past.Finished() != nil {
		t.Fatalf("following until a stored time: %v, reached %v, finished %v", err, past.UntilReached(), past.Finished())
	}
	wantContiguous(t, got, 1, 20)

	// Following until a time to come: what is stored before it arrives,
	// and the feed ends once the time and its grace have passed.
	soon := storekit.NewFeed(s, storekit.FeedRequest{JobID: l.JobID, Follow: true,
		UntilTime: time.Now().Add(500 * time.Millisecond), UntilGrace: 500 * time.Millisecond})
	type result struct {
		evs []*spoolv1.JobEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		evs, err := drain(soon)
		done <- result{evs, err}
	}()
	// Written long ago, by its stamps: before the end time.
	appendAll(t, s, l.LeaseRef, []*spoolv1.JobEvent{batchEvent(h.NextSequence, numbered(61, 62)...)})
	select {
	case r := <-done:
		if r.err != nil || !soon.UntilReached() || soon.Finished() != nil {
			t.Fatalf("following until a time to come: %v, reached %v, finished %v", r.err, soon.UntilReached(), soon.Finished())
		}
		wantContiguous(t, r.evs, 1, h.NextSequence+1)
	case <-time.After(time.Minute):
		t.Fatal("a following feed went on past its end time")
	}
}

// drain reads a feed to its end, a line an event.
func drain(f *storekit.Feed) ([]*spoolv1.JobEvent, error) {
	var out []*spoolv1.JobEvent
	for ev, err := range f.Events(context.Background()) {
		if err != nil {
			return out, err
		}
		out = append(out, events.Unpack(ev)...)
	}
	return out, nil
}

// countingReads counts the stored items its store's reads fetch.
type countingReads struct {
	store.JobStore
	stats store.ReadStats
}

// ReadStored is what a feed reads through.
func (c *countingReads) ReadStored(ctx context.Context, r store.ReadRequest) iter.Seq2[*events.Stored, error] {
	r.Stats = &c.stats
	return c.JobStore.ReadStored(ctx, r)
}

// testFeedReadsWhatItUses: a feed whose reader stops early has fetched
// about what it used, not a store page, from a sequence or a line; read to
// its end, it yields everything once.
func testFeedReadsWhatItUses(t *testing.T, b Backend) {
	s := &countingReads{JobStore: open(t, b)}
	l := seqJob(t, s, newQueue(), 5000, 50)  // 100 batches of 50 lines
	one := seqJob(t, s, newQueue(), 1200, 1) // 1,200 items of one line each
	for _, r := range []storekit.FeedRequest{
		{JobID: l.JobID, FromSequence: 1000},
		{JobID: l.JobID, FromLine: 2000},
		{JobID: one.JobID, FromSequence: 1000},
		{JobID: one.JobID, FromLine: 1000},
	} {
		s.stats = store.ReadStats{}
		used := 0
		for _, err := range storekit.NewFeed(s, r).Events(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			if used++; used == 3 {
				break
			}
		}
		// Pages of 1 and growth items hold the 3 used; a read from inside
		// a batch may also look for the batch.
		if s.stats.ItemsRead > max(2, s.Limits().FeedGrowth)*used {
			t.Errorf("a feed from %+v stopped after %d items had fetched %d", r, used, s.stats.ItemsRead)
		}
	}
	wantContiguous(t, feedAll(t, s, storekit.FeedRequest{JobID: l.JobID}), 1, 5002)
	wantContiguous(t, feedAll(t, s, storekit.FeedRequest{JobID: one.JobID, FromSequence: 1000}), 1000, 1202)
}

// testPersistence: everything survives closing and reopening the store.
func testPersistence(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := context.Background()
	q := newQueue()
	nj := newJob(q)
	nj.RequestID = "persist-" + q
	done := seqJob(t, s, q, 120, 50)
	if _, err := s.Complete(ctx, done.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	queued := enqueue(t, s, nj)
	running := runningJob(t, s, newJob(newQueue()))
	before := get(t, s, done.JobID)
	sc, batches := newScatter(4)
	if err := s.CreateScatter(ctx, sc, batches); err != nil {
		t.Fatal(err)
	}

	s = b.Reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	scatterSurvivesReopen(t, s, sc, batches)

	after := get(t, s, done.JobID)
	wantState(t, after, spoolv1.JobState_JOB_STATE_SUCCEEDED)
	if after.GetLineCount() != before.GetLineCount() || after.GetLastSequence() != before.GetLastSequence() {
		t.Fatalf("log position lost: %d lines / seq %d, was %d / %d", after.GetLineCount(), after.GetLastSequence(), before.GetLineCount(), before.GetLastSequence())
	}
	wantContiguous(t, feedAll(t, s, storekit.FeedRequest{JobID: done.JobID}), 1, 122)
	if j, created, err := s.Enqueue(ctx, nj); err != nil || created || j.GetJobId() != queued.GetJobId() {
		t.Fatalf("request_id forgotten after reopening: job %s created=%v err=%v", j.GetJobId(), created, err)
	}
	// The running job's lease still holds; the queued job is handed out.
	if _, _, err := s.Heartbeat(ctx, running.LeaseRef, time.Minute); err != nil {
		t.Fatalf("lease lost after reopening: %v", err)
	}
	if l := leaseOne(t, s, q, time.Minute); l.JobID != queued.GetJobId() {
		t.Fatalf("after reopening leased %s, want the queued job %s", l.JobID, queued.GetJobId())
	}
}
