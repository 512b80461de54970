package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// follower ranges over a followed stream in the background, pausing after
// pauseAt events until resume is closed, and reports what it saw.
type follower struct {
	paused  chan struct{} // closed once pauseAt events were received
	resume  chan struct{}
	done    chan error
	events  []*spool.Event
	mu      sync.Mutex
	retries []error
}

func follow(c *client.Client, jobID string, pauseAt int) (*follower, *client.EventStream) {
	f := &follower{paused: make(chan struct{}), resume: make(chan struct{}), done: make(chan error, 1)}
	policy := fastRetry
	policy.OnRetry = func(err error, _ time.Duration) {
		f.mu.Lock()
		f.retries = append(f.retries, err)
		f.mu.Unlock()
	}
	s := c.Events(context.Background(), jobID, client.StreamOptions{Follow: true, Reconnect: policy})
	go func() {
		for ev, err := range s.All() {
			if err != nil {
				f.done <- err
				return
			}
			if f.events = append(f.events, ev); len(f.events) == pauseAt {
				close(f.paused)
				<-f.resume
			}
		}
		f.done <- nil
	}()
	return f, s
}

func (f *follower) wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case err := <-f.done:
		t.Fatalf("the follower ended before %s: %v", what, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func (f *follower) end(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("after %d events: %v", len(f.events), err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follower did not end when the job finished")
	}
}

func (f *follower) retried() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.retries
}

// TestResumeAcrossRestart: the server is stopped while a follower is in the
// middle of the log and started again on the same port and data directory;
// the job goes on being written after the restart. The follower sees every
// sequence exactly once, in order: a restart loses and repeats nothing.
func TestResumeAcrossRestart(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "seq 1 3000"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Seq(1, 2000)...)

	f, s := follow(c, l.JobID(), 300)
	f.wait(t, "the first 300 events", f.paused)
	srv.Stop()
	// While the server is away the follower reads what it had received,
	// then retries against a closed port until the server is back.
	close(f.resume)
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	l.Write(spooltest.Seq(2001, 3000)...)
	l.End(0)
	f.end(t)

	checkSeq(t, f.events, 1, 3002)
	if len(f.retried()) < 2 {
		t.Fatalf("the follower retried %d times: it should have lost its stream and found the server away", len(f.retried()))
	}
	t.Logf("resumed after: %v", f.retried())
	if s.Finished().State != spool.Succeeded {
		t.Fatalf("Finished() = %v", s.Finished())
	}
}

// TestResumeAfterCut: the connection is cut while the server is in the
// middle of sending a large log to a paused follower (a truncated message,
// a reset socket). The follower resumes after the last whole event.
func TestResumeAfterCut(t *testing.T) {
	srv := spooltest.NewServer(t)
	p := newCutter(t, srv.URL)
	c, err := client.New(client.Config{URL: p.url, APIKey: srv.AdminKey})
	if err != nil {
		t.Fatal(err)
	}
	// About 3 MB, enough that much of it is in flight (socket buffers, the
	// server's writes) when the follower pauses.
	lines := make([]spooltest.Line, 3000)
	for i := range lines {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		pad := hex.EncodeToString(sum[:])
		for len(pad) < 1000 {
			pad += pad
		}
		lines[i] = spooltest.Line{Text: strconv.Itoa(i+1) + " " + pad[:1000]}
	}
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "big"}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(lines...)

	f, _ := follow(c, l.JobID(), 100)
	f.wait(t, "the first 100 events", f.paused)
	time.Sleep(100 * time.Millisecond) // let the server fill the pipes
	p.cut()
	close(f.resume)
	l.End(0)
	f.end(t)

	if len(f.events) != 3002 {
		t.Fatalf("got %d events, want 3002", len(f.events))
	}
	for i, ev := range f.events {
		if ev.Sequence != int64(i+1) {
			t.Fatalf("event %d has sequence %d", i, ev.Sequence)
		}
		for _, l := range ev.Lines {
			if l.Text != lines[l.Number-1].Text {
				t.Fatalf("line %d is wrong", l.Number)
			}
		}
	}
	if len(f.retried()) == 0 {
		t.Fatal("the cut went unnoticed: the test did not test resuming")
	}
	t.Logf("resumed after: %v", f.retried())
}

// cutter is a TCP proxy in front of a server whose open connections can be
// cut at once, as a network failure would.
type cutter struct {
	url   string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, serverURL string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	target := serverURL[len("http://"):]
	p := &cutter{url: "http://" + ln.Addr().String()}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
	return p
}

func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		dst.Close()
		return
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// cut closes every connection made so far.
func (p *cutter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		// No lingering: the peer sees a reset, not a clean end.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
	p.conns = nil
}
