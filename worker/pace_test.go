package worker

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/batcher"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/outbox"
)

// A job whose full batches come faster than its flush interval is, while
// nobody watches it, published about once per interval with its batches
// together, not in a call per batch; watched, each batch goes at once; and
// however long the interval, the command's end sends what is left at once.
func TestPublishesPacedWhileUnwatched(t *testing.T) {
	t.Parallel()
	const batches = 20
	for _, tc := range []struct {
		name     string
		interval time.Duration
		watched  bool
		// The publishes (CompleteJob carries the last events) allowed.
		least, most int
	}{
		// The first batch at once, then the rest after the interval.
		{"unwatched", 500 * time.Millisecond, false, 1, 3},
		// Held until the command ends, which sends the rest at once.
		{"ended before the interval", time.Hour, false, 1, 2},
		// Each batch at once; the process's start may go alone before
		// the first, and the completion carries the end.
		{"watched", 500 * time.Millisecond, true, batches / 4, batches + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &jobServer{stored: map[int64]int{}}
			ob, err := outbox.Create(t.TempDir(), outbox.Header{JobID: "j1", Attempt: 1, Token: "token"})
			if err != nil {
				t.Fatal(err)
			}
			w := &Worker{rpc: f, completions: &completions{rpc: f}, log: slog.New(slog.DiscardHandler), metrics: noMetrics()}
			p := newPace(tc.interval, batcher.SystemClock())
			p.setWatched(tc.watched)
			started, ended := make(chan struct{}), make(chan struct{})
			close(started)
			s := &sender{w: w, ob: ob, token: "token", log: w.log, completeTakesEvents: true, pace: p, started: started, ended: ended}
			sent := make(chan error, 1)
			go func() { sent <- s.run(context.Background()) }()

			start := &spoolv1.JobEvent{Sequence: 1, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
				EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Command: "seq"}}}
			if err := ob.Append(start); err != nil {
				t.Fatal(err)
			}
			for i := range batches {
				lines := events.TextLines(time.Now(), strconv.Itoa(i))
				if err := ob.AppendLines(lines); err != nil {
					t.Fatal(err)
				}
				if err := ob.AppendBatch(events.Batch{Sequence: int64(2 + i), Attempt: 1, Lines: lines}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(25 * time.Millisecond) // a batch fills every 25 ms
			}
			end := &spoolv1.JobEvent{Sequence: 2 + batches, Attempt: 1, EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
				EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{}}}
			if err := ob.Append(end); err != nil {
				t.Fatal(err)
			}
			if err := ob.Finish(&spoolv1.JobResult{}); err != nil {
				t.Fatal(err)
			}
			close(ended)
			select {
			case err := <-sent:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the sender still holds the output a minute after the command ended")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.completes) != 1 {
				t.Fatalf("%d completions, want 1", len(f.completes))
			}
			calls := len(f.publishes) + 1
			if calls < tc.least || calls > tc.most {
				t.Errorf("%d calls carried the %d batches (publishes and the completion), want %d to %d", calls, batches, tc.least, tc.most)
			}
			for seq := int64(1); seq <= 2+batches; seq++ {
				if f.stored[seq] != 1 && !completed(f.completes[0], seq) {
					t.Errorf("sequence %d stored %d times", seq, f.stored[seq])
				}
			}
		})
	}
}

// completed reports whether a completion carried the event at seq.
func completed(c *spoolv1.CompleteJobRequest, seq int64) bool {
	for _, ev := range sent(c.GetEvents(), c.GetEncodedEvents()) {
		if ev.GetSequence() == seq {
			return true
		}
	}
	return false
}

// Output that must not wait (a batch cut for time, a process event) ends a
// hold at once, whether it came before the hold or during it; and the next
// hold waits again.
func TestPaceDueEndsTheHold(t *testing.T) {
	t.Parallel()
	p := newPace(time.Hour, batcher.SystemClock())
	returns := func(what string, hold func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { hold(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the hold did not end", what)
		}
	}
	p.due()
	returns("due before the hold", func() { p.hold(context.Background(), time.Now(), nil) })

	held := make(chan struct{})
	go func() {
		defer close(held)
		p.hold(context.Background(), time.Now(), nil)
	}()
	select {
	case <-held:
		t.Fatal("a hold with nothing due ended before its interval")
	case <-time.After(100 * time.Millisecond):
	}
	p.due()
	returns("due during the hold", func() { <-held })
}
