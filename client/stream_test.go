package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// fastRetry reconnects quickly, so tests that cut streams stay short.
var fastRetry = client.Reconnect{First: 20 * time.Millisecond, Max: 200 * time.Millisecond}

// collect ranges over s.All and returns what it yielded, failing the test
// on an error.
func collect(t *testing.T, s *client.EventStream) []*spool.Event {
	t.Helper()
	var got []*spool.Event
	for ev, err := range s.All() {
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, ev)
	}
	return got
}

// checkSeq fails unless evs are exactly the sequences from..to in order,
// one line per output event, and every output line's text is its line
// number (a `seq`-shaped log).
func checkSeq(t *testing.T, evs []*spool.Event, from, to int64) {
	t.Helper()
	if int64(len(evs)) != to-from+1 {
		t.Fatalf("got %d events, want sequences %d..%d (%d)", len(evs), from, to, to-from+1)
	}
	for i, ev := range evs {
		if want := from + int64(i); ev.Sequence != want {
			t.Fatalf("event %d has sequence %d, want %d", i, ev.Sequence, want)
		}
		if ev.Type != spool.EventOutput {
			continue
		}
		if len(ev.Lines) != 1 {
			t.Fatalf("sequence %d: %d lines in one event", ev.Sequence, len(ev.Lines))
		}
		if l := ev.Lines[0]; l.Sequence != ev.Sequence || l.Text != strconv.FormatInt(l.Number, 10) {
			t.Fatalf("sequence %d: line %d (sequence %d) is %q", ev.Sequence, l.Number, l.Sequence, l.Text)
		}
	}
}

func TestEventsFromSequence(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 1000)...)
	// PROCESS_START is sequence 1, so line L is sequence L+1; PROCESS_END
	// is 1002.
	s := c.Events(context.Background(), job.ID, client.StreamOptions{FromSequence: 75})
	got := collect(t, s)
	checkSeq(t, got, 75, 1002)
	if first := got[0]; first.Type != spool.EventOutput || first.Lines[0].Number != 74 || first.Lines[0].Text != "74" {
		t.Fatalf("first event: %+v", got[0])
	}
	if last := got[len(got)-1]; last.Type != spool.EventProcessEnd || last.End == nil {
		t.Fatalf("last event: %+v", last)
	}
	if f := s.Finished(); f.State != spool.Succeeded || f.LineCount != 1000 {
		t.Fatalf("Finished() = %v", f)
	}

	log, err := c.ReadLog(context.Background(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkSeq(t, log, 1, 1002)
}

func TestEventsFromLine(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 10000)...)
	s := c.Events(context.Background(), job.ID, client.StreamOptions{
		FromLine: 9000, Types: []spool.EventType{spool.EventOutput}})
	got := collect(t, s)
	checkSeq(t, got, 9001, 10001)
	if l := got[0].Lines[0]; l.Number != 9000 || l.Text != "9000" {
		t.Fatalf("line 9000 of a seq 1 10000 log: %+v", l)
	}
}

func TestBatches(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 120)...)
	var got []*spool.Event
	for ev, err := range c.Events(context.Background(), job.ID, client.StreamOptions{FromSequence: 75}).Batches() {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	// Stored: start 1, batches 2-51, 52-101, 102-121, end 122. From 75 the
	// second batch comes trimmed.
	want := []string{"batch 75-101 line 74", "batch 102-121 line 101", "process_end 122"}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %v", len(got), len(want), got)
	}
	for i, ev := range got {
		desc := fmt.Sprintf("%s %d", ev.Type, ev.Sequence)
		if ls := ev.Lines; ls != nil {
			first, last := ls[0], ls[len(ls)-1]
			desc = fmt.Sprintf("batch %d-%d line %d", first.Sequence, last.Sequence, first.Number)
			if ev.Sequence != first.Sequence || first.Text != strconv.FormatInt(first.Number, 10) || last.Number != first.Number+int64(len(ls)-1) {
				t.Fatalf("batch %s starts with %q", desc, first.Text)
			}
		}
		if desc != want[i] {
			t.Fatalf("event %d: %s, want %s", i, desc, want[i])
		}
	}
}

// TestFollowRunningJob: a follower catches up with what is stored, then
// receives the rest live until the job completes.
func TestFollowRunningJob(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "seq 1 500"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Seq(1, 100)...)

	s := c.Events(context.Background(), l.JobID(), client.StreamOptions{Follow: true})
	caughtUp := make(chan struct{})
	done := make(chan []*spool.Event, 1)
	errc := make(chan error, 1)
	go func() {
		var got []*spool.Event
		for ev, err := range s.All() {
			if err != nil {
				errc <- err
				return
			}
			if got = append(got, ev); len(got) == 101 {
				close(caughtUp)
			}
		}
		done <- got
	}()
	select {
	case <-caughtUp:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not receive the stored lines")
	}
	for from := 101; from <= 500; from += 80 {
		l.Write(spooltest.Seq(from, min(from+79, 500))...)
		time.Sleep(20 * time.Millisecond)
	}
	l.End(0)
	select {
	case got := <-done:
		checkSeq(t, got, 1, 502)
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not end when the job finished")
	}
	if s.Finished().State != spool.Succeeded {
		t.Fatalf("Finished() = %v", s.Finished())
	}
}

// TestBreakClosesStream: leaving the loop closes the stream, so the server
// stops counting the follower.
func TestBreakClosesStream(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "sleep 100"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	for _, err := range c.Events(context.Background(), l.JobID(), client.StreamOptions{Follow: true}).All() {
		if err != nil {
			t.Fatal(err)
		}
		if !watched(t, l) {
			t.Fatal("the server does not see the follower")
		}
		break
	}
	deadline := time.Now().Add(5 * time.Second)
	for watched(t, l) {
		if time.Now().After(deadline) {
			t.Fatal("the stream stayed open after the consumer left the loop")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watched asks the server, through the lease's heartbeat, whether anyone
// follows the job.
func watched(t *testing.T, l *spooltest.Lease) bool {
	t.Helper()
	_, w := l.Heartbeat()
	return w
}

func TestEventsNotFound(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	retries := 0
	s := c.Events(context.Background(), "no-such-job", client.StreamOptions{Follow: true,
		Reconnect: client.Reconnect{OnRetry: func(error, time.Duration) { retries++ }}})
	for _, err := range s.All() {
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("got %v, want NotFound", err)
		}
	}
	if retries != 0 || s.Finished() != nil {
		t.Fatalf("a missing job was retried %d times (finished %v)", retries, s.Finished())
	}
}

// TestEventsGiveUp: a server that stays away ends the stream with an error
// once the policy's patience runs out.
func TestEventsGiveUp(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 10)...)
	srv.Stop()
	retries := 0
	policy := fastRetry
	policy.GiveUpAfter = 500 * time.Millisecond
	policy.OnRetry = func(error, time.Duration) { retries++ }
	for _, err := range c.Events(context.Background(), job.ID, client.StreamOptions{Reconnect: policy}).All() {
		if err == nil {
			t.Fatal("read events from a stopped server")
		}
		if !errors.Is(err, spool.ErrUnavailable) || !strings.Contains(err.Error(), "gave up") {
			t.Fatalf("got %v, want an Unavailable error that says it gave up", err)
		}
	}
	if retries == 0 {
		t.Fatal("OnRetry was not called")
	}
}

// TestEventsEndWithContext: cancelling the context ends a follow with the
// context's error.
func TestEventsEndWithContext(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "sleep 100"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	for _, err := range c.Events(ctx, l.JobID(), client.StreamOptions{Follow: true}).All() {
		if n++; n == 1 {
			cancel()
			continue
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	}
	if n != 2 {
		t.Fatalf("%d iterations, want the start event then the error", n)
	}
}
