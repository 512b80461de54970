// Package spooltest runs real spool servers for tests (embedded SQLite in a
// temporary directory) and plays a worker's part through the API: lease a
// job, publish its output in batches, complete it. Client and CLI tests use
// it to test against the real thing instead of mocks.
package spooltest

import (
	"context"
	"log/slog"
	"net/url"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/server"
)

// Server is a running server owned by a test; it is stopped at cleanup.
type Server struct {
	*server.Running
	Cfg *config.Config
	t   testing.TB
}

// Start starts a server on a free loopback port with its own data
// directory. Shutdown grace is short: tests stop servers with streams open.
func Start(t testing.TB) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.DataDir = t.TempDir()
	cfg.Server.ShutdownGraceSeconds = 1
	s := &Server{Cfg: cfg, t: t}
	s.start()
	t.Cleanup(func() { _ = s.Running.Stop() })
	return s
}

func (s *Server) start() {
	s.t.Helper()
	r, err := server.Start(context.Background(), s.Cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		s.t.Fatalf("start server: %v", err)
	}
	s.Running = r
}

// Stop stops the server, failing the test if it does not stop cleanly.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.Running.Stop(); err != nil {
		s.t.Fatalf("stop server: %v", err)
	}
}

// Restart starts the stopped server again on the same port and data
// directory, as an operator restarting it would.
func (s *Server) Restart() {
	s.t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Cfg.Server.Addr = u.Host
	s.start()
}

// Client returns a client for the server.
func (s *Server) Client() *client.Client {
	s.t.Helper()
	c, err := client.New(s.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Line is one output line to publish.
type Line struct {
	Text   string
	Stderr bool
	// No newline followed it (see OutputItem.partial).
	Partial bool
	// When it was written (zero: when it is published).
	At time.Time
}

// Seq returns the lines "from".."to", like `seq from to`.
func Seq(from, to int) []Line {
	lines := make([]Line, 0, to-from+1)
	for i := from; i <= to; i++ {
		lines = append(lines, Line{Text: strconv.Itoa(i)})
	}
	return lines
}

// Lease is a job leased by the test acting as its worker.
type Lease struct {
	*spoolv1.JobLease
	c    *client.Client
	t    testing.TB
	next int64 // the next event's sequence
}

// LeaseJob leases the next job of queue ("" for the default queue), waiting
// up to five seconds for one. The lease lasts a minute: longer than any test.
func LeaseJob(t testing.TB, c *client.Client, queue string) *Lease {
	t.Helper()
	resp, err := c.DequeueJobs(context.Background(), connect.NewRequest(&spoolv1.DequeueJobsRequest{
		Queue: queue, MaxJobs: 1, WaitSeconds: 5, VisibilityTimeoutSeconds: 60, WorkerId: "spooltest"}))
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if len(resp.Msg.GetLeases()) != 1 {
		t.Fatalf("lease: no job in queue %q", queue)
	}
	l := resp.Msg.GetLeases()[0]
	return &Lease{JobLease: l, c: c, t: t, next: l.GetNextSequence()}
}

// Client is the client the lease was taken with.
func (l *Lease) Client() *client.Client { return l.c }

// JobID is the leased job's id.
func (l *Lease) JobID() string { return l.GetJob().GetJobId() }

// NextSequence is the sequence the next published event gets.
func (l *Lease) NextSequence() int64 { return l.next }

// Begin publishes PROCESS_START.
func (l *Lease) Begin() {
	l.t.Helper()
	l.publish([]*spoolv1.JobEvent{l.single(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_START,
		EventData: &spoolv1.JobEvent_ProcessStart{ProcessStart: &spoolv1.ProcessStartEvent{Pid: 1, Command: "spooltest"}}})})
}

// Write publishes lines as batches of the job's max_batch_size, each line
// with its time.
func (l *Lease) Write(lines ...Line) {
	l.t.Helper()
	size := int(l.GetJob().GetExecutionConfig().GetBatching().GetMaxBatchSize())
	var evs []*spoolv1.JobEvent
	for len(lines) > 0 {
		n := min(size, len(lines))
		evs = append(evs, l.batch(lines[:n]))
		lines = lines[n:]
		if len(evs) == 100 {
			l.publish(evs)
			evs = nil
		}
	}
	l.publish(evs)
}

// End publishes PROCESS_END and completes the job with exitCode.
func (l *Lease) End(exitCode int32) *spoolv1.Job {
	l.t.Helper()
	end := l.single(&spoolv1.JobEvent{EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_END,
		EventData: &spoolv1.JobEvent_ProcessEnd{ProcessEnd: &spoolv1.ProcessEndEvent{ExitCode: exitCode}}})
	l.publish([]*spoolv1.JobEvent{end})
	now := end.GetTimestamp()
	resp, err := l.c.CompleteJob(context.Background(), connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: l.GetTaskToken(),
		Result: &spoolv1.JobResult{ExitCode: exitCode, StartedAt: now, FinishedAt: now}}))
	if err != nil {
		l.t.Fatalf("complete: %v", err)
	}
	return resp.Msg.GetJob()
}

// RunJob submits a job to the default queue and runs it as its worker:
// PROCESS_START, lines, PROCESS_END, complete with exit code 0. It returns
// the finished job.
func RunJob(t testing.TB, c *client.Client, lines ...Line) *spoolv1.Job {
	t.Helper()
	if _, _, err := c.Submit(context.Background(), client.Submission{Script: "spooltest"}); err != nil {
		t.Fatalf("submit: %v", err)
	}
	l := LeaseJob(t, c, "")
	l.Begin()
	l.Write(lines...)
	return l.End(0)
}

// single numbers an event that is not output and stamps it with the time.
func (l *Lease) single(ev *spoolv1.JobEvent) *spoolv1.JobEvent {
	ev.Sequence, ev.Timestamp = l.next, timestamppb.Now()
	l.next++
	return ev
}

func (l *Lease) batch(lines []Line) *spoolv1.JobEvent {
	now := time.Now()
	b := &spoolv1.OutputBatchEvent{StartSequence: l.next, EndSequence: l.next + int64(len(lines)) - 1}
	for _, ln := range lines {
		stream := spoolv1.StreamType_STREAM_TYPE_STDOUT
		if ln.Stderr {
			stream = spoolv1.StreamType_STREAM_TYPE_STDERR
		}
		at := ln.At
		if at.IsZero() {
			at = now
		}
		b.Outputs = append(b.Outputs, &spoolv1.OutputItem{Output: []byte(ln.Text), Stream: stream, Partial: ln.Partial})
		b.Timestamps = append(b.Timestamps, at.UnixMilli())
	}
	ev := &spoolv1.JobEvent{Sequence: l.next, Timestamp: timestamppb.New(time.UnixMilli(b.Timestamps[0])),
		EventType: spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH, EventData: &spoolv1.JobEvent_OutputBatch{OutputBatch: b}}
	l.next = b.EndSequence + 1
	return ev
}

func (l *Lease) publish(evs []*spoolv1.JobEvent) {
	l.t.Helper()
	if len(evs) == 0 {
		return
	}
	if _, err := l.c.PublishEvents(context.Background(), connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: l.GetTaskToken(), Events: evs})); err != nil {
		l.t.Fatalf("publish: %v", err)
	}
}
