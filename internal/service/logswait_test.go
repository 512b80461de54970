package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/internal/store"
)

// waitingRead is a ReadLines running on its own goroutine, and what it
// answered once it has.
type waitingRead struct {
	page *LinesPage
	err  error
	done chan struct{}
}

// readWaiting starts r and returns once it waits for a line (the service's
// awaiting hook), failing the test if it answers without waiting.
func (ls *logStore) readWaiting(t *testing.T, ctx context.Context, r LinesRequest) *waitingRead {
	t.Helper()
	waiting := make(chan struct{})
	ls.s.awaiting = func() { close(waiting) }
	wr := &waitingRead{done: make(chan struct{})}
	go func() {
		defer close(wr.done)
		wr.page, wr.err = ls.s.ReadLines(ctx, r)
	}()
	select {
	case <-waiting:
	case <-wr.done:
		t.Fatalf("the read answered without waiting: %d lines, %v", len(linesOf(wr.page)), wr.err)
	}
	return wr
}

// answer is what the read answered, once it has.
func (wr *waitingRead) answer() (*LinesPage, error) {
	<-wr.done
	return wr.page, wr.err
}

// linesOf is p's lines (none for no page), so a failed read can be
// reported alike.
func linesOf(p *LinesPage) []*spoolv1.JobEvent {
	if p == nil {
		return nil
	}
	return p.Lines
}

// stateOf is the state of p's job (unspecified for no page).
func stateOf(p *LinesPage) spoolv1.JobState {
	if p == nil {
		return spoolv1.JobState_JOB_STATE_UNSPECIFIED
	}
	return p.Job.GetState()
}

// appendLines writes lines as l's attempt, from sequence seq.
func (ls *logStore) appendLines(t *testing.T, l store.Lease, seq int64, lines []events.Line) {
	t.Helper()
	if _, err := ls.st.Append(context.Background(), l.LeaseRef, events.Messages(events.Batch{Sequence: seq, Lines: lines}.Event())); err != nil {
		t.Fatal(err)
	}
}

// TestReadLinesWaitsForALine: a read with a wait that finds no line past
// its position waits, and answers with the line stored meanwhile (the
// page as a read without a wait would give it then).
func TestReadLinesWaitsForALine(t *testing.T) {
	ls := newLogStore(t)
	l := ls.lease(t, numbered(3), true)
	wr := ls.readWaiting(t, ls.ctx, LinesRequest{JobID: l.JobID, After: 3, Wait: time.Minute})
	ls.appendLines(t, l, l.Head.NextSequence+3, textLines("four", "five"))
	page, err := wr.answer()
	if err != nil {
		t.Fatal(err)
	}
	if got := lineNumbers(page.Lines); len(got) != 2 || got[0] != 4 || got[1] != 5 || page.HasMore {
		t.Fatalf("after waiting: lines %v, has_more %v; want 4 and 5", got, page.HasMore)
	}
	// The wait's follow of the job is over: only the poll keeps it watched.
	ls.s.watchers.mu.Lock()
	n := ls.s.watchers.n[l.JobID]
	ls.s.watchers.mu.Unlock()
	if n != 1 {
		t.Errorf("after the read, the job has %d followers, want 1 (the poll)", n)
	}
}

// TestReadLinesWaitEnds: a waiting read ends, with the empty page of the
// position asked for, when the job ends (its final state in the page),
// when its wait passes and when the server drains; it ends with the
// context's error when the client goes away.
func TestReadLinesWaitEnds(t *testing.T) {
	t.Run("job ends", func(t *testing.T) {
		ls := newLogStore(t)
		l := ls.lease(t, numbered(3), true)
		wr := ls.readWaiting(t, ls.ctx, LinesRequest{JobID: l.JobID, After: 3, Wait: time.Minute})
		if _, err := ls.st.Complete(context.Background(), l.LeaseRef, &spoolv1.JobResult{ExitCode: 0}); err != nil {
			t.Fatal(err)
		}
		page, err := wr.answer()
		if err != nil || len(linesOf(page)) != 0 || stateOf(page) != spoolv1.JobState_JOB_STATE_SUCCEEDED {
			t.Fatalf("after the job ended: %d lines, state %v, %v; want none, succeeded", len(linesOf(page)), stateOf(page), err)
		}
	})
	t.Run("wait passes", func(t *testing.T) {
		ls := newLogStore(t)
		id := ls.job(t, numbered(3), true)
		wr := ls.readWaiting(t, ls.ctx, LinesRequest{JobID: id, After: 3, Wait: 20 * time.Millisecond})
		page, err := wr.answer()
		if err != nil || len(linesOf(page)) != 0 || stateOf(page) != spoolv1.JobState_JOB_STATE_RUNNING {
			t.Fatalf("after the wait: %d lines, state %v, %v; want none, running", len(linesOf(page)), stateOf(page), err)
		}
	})
	t.Run("server drains", func(t *testing.T) {
		ls := newLogStore(t)
		id := ls.job(t, numbered(3), true)
		wr := ls.readWaiting(t, ls.ctx, LinesRequest{JobID: id, After: 3, Wait: time.Minute})
		ls.s.Drain()
		page, err := wr.answer()
		if err != nil || len(linesOf(page)) != 0 {
			t.Fatalf("after the drain: %d lines, %v; want an empty page", len(linesOf(page)), err)
		}
	})
	t.Run("client goes away", func(t *testing.T) {
		ls := newLogStore(t)
		id := ls.job(t, numbered(3), true)
		ctx, cancel := context.WithCancel(ls.ctx)
		wr := ls.readWaiting(t, ctx, LinesRequest{JobID: id, After: 3, Wait: time.Minute})
		cancel()
		if _, err := wr.answer(); !errors.Is(err, context.Canceled) {
			t.Fatalf("after the client went away: %v, want context.Canceled", err)
		}
	})
}

// TestReadLinesWaitsOnlyForWhatCanCome: a read with a wait answers at once
// when it finds lines, when the job is final and when its window before
// before_line is empty; a negative wait is refused.
func TestReadLinesWaitsOnlyForWhatCanCome(t *testing.T) {
	ls := newLogStore(t)
	ls.s.awaiting = func() { t.Error("the read waited") }
	running := ls.job(t, numbered(3), true)
	done := ls.job(t, numbered(3), false)
	for _, r := range []LinesRequest{
		{JobID: running, After: 2, Wait: time.Minute},
		{JobID: running, After: 3, Before: 4, Wait: time.Minute},
		{JobID: done, After: 3, Wait: time.Minute},
	} {
		if _, err := ls.s.ReadLines(ls.ctx, r); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if _, err := ls.s.ReadLines(ls.ctx, LinesRequest{JobID: running, Wait: -time.Second}); !errors.Is(err, spool.ErrInvalidArgument) {
		t.Fatalf("a negative wait: %v, want ErrInvalidArgument", err)
	}
}
