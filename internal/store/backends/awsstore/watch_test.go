package awsstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store/backends/awsstore"
	"github.com/spool-run/spool/internal/store/backends/awsstore/awstest"
	"github.com/spool-run/spool/internal/store/storekit"
)

// TestWatchesForgotten: the watcher keeps and polls a job only while a
// watch of it lasts. Watches of made-up ids that end at once are never
// polled in bulk, a watch given up on a quiet job is not kept, and once
// nobody watches the watcher keeps nothing (and stops polling). A watch
// that lasts is still woken.
func TestWatchesForgotten(t *testing.T) {
	t.Parallel()
	cfg := awstest.Shared(t).NewConfig(t)
	s, calls, err := awsstore.OpenCounting(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, _, err := s.Enqueue(ctx, newJob(newQueue()))
	if err != nil {
		t.Fatal(err)
	}
	id := j.GetJobId()

	// The job's first watch fires at the first poll (its rev is not known
	// yet); the next one waits for a change, which never comes.
	select {
	case <-s.Watch(ctx, id):
	case <-ctx.Done():
		t.Fatal("the first watch never fired")
	}
	quietCtx, giveUp := context.WithCancel(ctx)
	quiet := s.Watch(quietCtx, id)
	// A follower of the job, which leaves while waiting.
	followCtx, leave := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() {
		var last error
		for _, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: id, Follow: true}).Events(followCtx) {
			last = err
		}
		followed <- last
	}()
	calls.Take()
	for i := range 10_000 {
		wctx, end := context.WithCancel(ctx)
		s.Watch(wctx, fmt.Sprint("made-up-", i))
		end()
	}
	for i := range 10 {
		for _, err := range storekit.NewFeed(s, storekit.FeedRequest{JobID: fmt.Sprint("made-up-feed-", i), Follow: true}).Events(ctx) {
			if !errors.Is(err, spool.ErrNotFound) {
				t.Fatalf("feed of a made-up job: %v, want not found", err)
			}
		}
	}
	giveUp()
	leave()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("the follower ended with %v, want its context's end", err)
	}
	for awsstore.Watching(s) > 0 {
		if ctx.Err() != nil {
			t.Fatalf("the watcher keeps %d jobs with nobody watching", awsstore.Watching(s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-quiet:
		t.Fatal("a watch of a job that did not change fired")
	default:
	}
	// A poll reads up to 100 jobs a call: had the made-up ids been kept
	// until a poll, it would have taken 100 calls.
	if n, _ := calls.Take(); n["DynamoDB.BatchGetItem"] >= 50 {
		t.Fatalf("%d polls for watches that had ended", n["DynamoDB.BatchGetItem"])
	}

	w := s.Watch(ctx, id)
	if _, err := s.Cancel(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w:
	case <-ctx.Done():
		t.Fatal("a watch was not woken by a change of its job")
	}
}
