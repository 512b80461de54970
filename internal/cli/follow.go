package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/backoff"
	"github.com/spool-run/spool/internal/termview"
)

// interrupted is spool's exit status after Ctrl-C, as for any program
// stopped by SIGINT.
var interrupted = exitError{code: 130}

// outputOnly asks a stream for output lines and nothing else (the job's
// outcome arrives with the stream's end anyway).
var outputOnly = []spool.EventType{spool.EventOutput}

// outputAndEnds adds how each attempt ended: only the process's end says
// which signal killed it, and a PROCESS_ERROR why spool stopped it or
// could not start it.
var outputAndEnds = []spool.EventType{spool.EventOutput, spool.EventProcessEnd, spool.EventProcessError}

// outputStream is job jobID's events of the given types from line from (0:
// the start), following it live when follow is set. onRetry hears about
// reconnects.
func outputStream(ctx context.Context, c *client.Client, jobID string, from int64, follow bool, types []spool.EventType, onRetry func(error, time.Duration)) *client.EventStream {
	return c.Events(ctx, jobID, streamOptions(from, follow, types, onRetry))
}

// streamOptions are outputStream's options, for a caller that adds to them.
func streamOptions(from int64, follow bool, types []spool.EventType, onRetry func(error, time.Duration)) client.StreamOptions {
	return client.StreamOptions{FromLine: from, Types: types, Follow: follow, Reconnect: client.Reconnect{OnRetry: onRetry}}
}

// startLine turns --from into a line number: as given when positive, the
// last -from lines of the job when negative.
func startLine(from int64, job *spool.Job) int64 {
	if from >= 0 {
		return from
	}
	return max(1, job.LineCount+1+from)
}

// printOptions are what spool logs can add to printing a job's output.
type printOptions struct {
	// Put each line's time in front of it.
	timestamps bool
	// Only lines written in this span (zero: no bound).
	since, until time.Time
	// Told the last line number printed after each batch is out, for a
	// progress line (nil: not told).
	printed func(line int64)
	// Told, once per attempt, that the attempt's command failed and how
	// ("exit 1", "timed out after 5s"); nil: not told.
	failed func(attempt int, how string)
}

// printOutput prints a job's output from line from, following it until the
// job finishes when follow is set. It returns the job as it finished (nil
// when it was still live and not followed) and the last PROCESS_END seen.
func printOutput(ctx context.Context, e *env, c *client.Client, jobID string, from int64, follow bool, opts printOptions) (*spool.Job, *spool.Event, error) {
	w := termview.NewOutputWriter(e.out, e.errOut)
	w.Timestamps = opts.timestamps
	notice := &reconnectNotice{w: e.errOut}
	so := streamOptions(from, follow, outputAndEnds, notice.lost)
	so.FromTime, so.UntilTime = opts.since, opts.until
	s := c.Events(ctx, jobID, so)
	var (
		end     *spool.Event
		attempt int
		line    int64 // the last line printed
		failed  int   // the last attempt told failed
	)
	for ev, err := range s.Batches() {
		if err != nil {
			return nil, nil, err
		}
		notice.resumed()
		// Where a new attempt's output begins (a retry, a redelivery), say
		// so between the lines, on stderr.
		if a := ev.Attempt; a > attempt {
			if attempt > 0 {
				if err := w.Flush(); err != nil {
					return nil, nil, err
				}
				fmt.Fprintf(e.errOut, "spool: ── attempt %d ──\n", a)
			}
			attempt = a
		}
		if how := attemptFailure(ev); how != "" && opts.failed != nil && ev.Attempt > failed {
			failed = ev.Attempt
			opts.failed(ev.Attempt, how)
		}
		if ev.End != nil {
			end = ev
			continue
		}
		for _, l := range ev.Lines {
			if err := w.Write(l); err != nil {
				return nil, nil, err
			}
			line = l.Number
		}
		// A batch at a time: few writes, and a follower sees lines as soon
		// as they arrive.
		if err := w.Flush(); err != nil {
			return nil, nil, err
		}
		if opts.printed != nil && line > 0 {
			opts.printed(line)
		}
	}
	return s.Finished(), end, nil
}

// attemptFailure says how an event tells that its attempt's command
// failed ("exit 1", "killed by a signal (killed)", or why spool stopped it
// or could not start it), or "" when it does not.
func attemptFailure(ev *spool.Event) string {
	switch {
	case ev.Type == spool.EventProcessError:
		return ev.Error
	case ev.End == nil:
		return ""
	case ev.End.Signal != "":
		return "killed by a signal (" + ev.End.Signal + ")"
	case ev.End.ExitCode != 0:
		return fmt.Sprintf("exit %d", ev.End.ExitCode)
	}
	return ""
}

// queuedNotice is how long submit -f lets a job wait in its queue before
// saying that no worker has taken it (a variable, so tests need not wait).
var queuedNotice = 3 * time.Second

// followJob prints a job's output live until it finishes, then returns the
// error that makes spool exit as the job did. Ctrl-C stops following and
// leaves the job alone. While the job is not running the terminal is not
// left silent: a failed attempt that is retried is said so, with when the
// next one starts, and a job that no worker takes for a while is said to
// be waiting, with why.
func followJob(ctx context.Context, e *env, c *client.Client, jobID string) error {
	// The notices and the job's stderr lines share the terminal's stderr.
	shared := *e
	shared.errOut = &syncWriter{w: e.errOut}
	noticeCtx, stopNotice := context.WithCancel(ctx)
	n := &waitNotices{c: c, jobID: jobID, w: shared.errOut, failed: make(chan attemptFailed, 1)}
	noticed := make(chan struct{})
	go func() {
		defer close(noticed)
		n.run(noticeCtx)
	}()
	job, end, err := printOutput(ctx, &shared, c, jobID, 0, true, printOptions{failed: func(attempt int, how string) {
		select {
		case n.failed <- attemptFailed{attempt, how}:
		case <-noticeCtx.Done():
		}
	}})
	stopNotice()
	<-noticed
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(e.errOut, "spool: stopped following; the job is still running: spool logs -f %s\n", jobID)
		return interrupted
	case err != nil:
		return err
	}
	return jobExit(e, job, end)
}

// attemptFailed is an attempt whose command failed, and how.
type attemptFailed struct {
	attempt int
	how     string
}

// waitNotices tells the person following a job why it is not running
// when it is not: its attempt failed and the next starts after a pause,
// or it has waited queuedNotice for a worker (with why: none polls its
// queue, they are busy, the queue is paused).
type waitNotices struct {
	c      *client.Client
	jobID  string
	w      io.Writer
	failed chan attemptFailed
}

func (n *waitNotices) run(ctx context.Context) {
	t := time.NewTimer(queuedNotice)
	defer t.Stop()
	told := false // the waiting notice, once per wait
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-n.failed:
			job := n.settled(ctx, f.attempt)
			if job == nil || !waiting(job.State) || job.Attempt != f.attempt {
				continue // it failed for good, or the next attempt has begun
			}
			wait := max(time.Until(job.RunAfter), 0)
			// The retries left, and the attempt about to start: a lost
			// lease could add one more, but none is expected.
			last := job.Attempt + 1 + max(job.Retries-job.RetriedAttempts, 0)
			fmt.Fprintf(n.w, "spool: attempt %d failed (%s); attempt %d of %d %s\n", f.attempt, f.how, job.Attempt+1, last, in(wait))
			t.Reset(wait + queuedNotice)
			told = false
		case <-t.C:
			job, err := n.c.Job(ctx, n.jobID)
			if err != nil || !waiting(job.State) {
				continue
			}
			if wait := time.Until(job.RunAfter); wait > 0 {
				// Waiting for its time (a retry's pause, a delay), not
				// for a worker.
				t.Reset(wait + queuedNotice)
				continue
			}
			if job.State == spool.Scheduled {
				// Waiting for the jobs it runs after: look again later.
				t.Reset(queuedNotice)
				continue
			}
			if !told {
				fmt.Fprintln(n.w, "spool: "+n.waiting(ctx, job.Queue))
				told = true
			}
		}
	}
}

// settled is the job once the worker has reported attempt's end (the
// failure is in its output a moment before), or nil if ctx ends first.
func (n *waitNotices) settled(ctx context.Context, attempt int) *spool.Job {
	pauses := backoff.New(20*time.Millisecond, time.Second)
	for {
		job, err := n.c.Job(ctx, n.jobID)
		if err == nil && (job.State != spool.Running || job.Attempt != attempt) {
			return job
		}
		if backoff.Sleep(ctx, pauses.Delay()) != nil {
			return nil
		}
	}
}

// waiting says why a job of queue has not started: the queue is paused,
// its workers are busy, or none polls it.
func (n *waitNotices) waiting(ctx context.Context, queue string) string {
	queues, _, err := n.c.Queues(ctx)
	if err == nil {
		for _, q := range queues {
			switch {
			case q.Name != queue:
			case q.Paused:
				return fmt.Sprintf("queue %s is paused: no worker takes its jobs until spool queues resume %s", queue, queue)
			case q.MaxRunning > 0 && q.Running >= q.MaxRunning:
				return fmt.Sprintf("waiting in queue %s: it runs at most %d at once, and %d run (spool queues set %s --max-running N changes it)",
					queue, q.MaxRunning, q.Running, queue)
			case q.Workers == 1:
				return fmt.Sprintf("waiting in queue %s: its worker is busy (%s queued)", queue, count(int64(q.Queued), "job"))
			case q.Workers > 1:
				return fmt.Sprintf("waiting in queue %s: its %d workers are busy (%s queued)", queue, q.Workers, count(int64(q.Queued), "job"))
			}
		}
	}
	start := "spool worker"
	if queue != "default" {
		start += " -q " + queue
	}
	return fmt.Sprintf("waiting for a worker on queue %s; start one with: %s", queue, start)
}

// waiting reports whether a job in state s waits to run: for a worker, or
// for its time or other jobs first.
func waiting(s spool.State) bool { return s == spool.Queued || s == spool.Scheduled }

// in says when something d from now happens: "in 4s", "now".
func in(d time.Duration) string {
	if d < 500*time.Millisecond {
		return "now"
	}
	return "in " + d.Round(time.Second).String()
}

// jobExit is how spool exits after following a job to its end: with the
// command's exit status; 128 and the signal's number when a signal killed
// it, as a shell does; or 1 when it ended without either (it never ran,
// its lease was lost, it was cancelled before it started). A job that did
// not succeed is said to have failed, and how, in a last line.
func jobExit(e *env, job *spool.Job, end *spool.Event) error {
	if job.State == spool.Succeeded {
		return nil
	}
	// The last line says how it ended, whatever the status says.
	fmt.Fprintf(e.errOut, "spool: job %s %s\n", job.ID, outcome(job))
	if code := exitCode(job); code > 0 {
		return exitError{code: code}
	}
	// Only the last attempt's process decides: an earlier one may have
	// been killed with its worker.
	if end != nil && end.Attempt == job.Attempt {
		if n := signalNumber(end.End.Signal); n > 0 {
			return exitError{code: 128 + n}
		}
	}
	return exitError{code: 1}
}

// signalNumber is the number of the signal the worker named (Go's name for
// it, as in "killed" or "terminated"), or 0.
func signalNumber(name string) int {
	if name == "" {
		return 0
	}
	for n := syscall.Signal(1); n < 65; n++ {
		if n.String() == name {
			return int(n)
		}
	}
	return 0
}

// outcome says how a job ended, for people: "succeeded", "failed (exit 3)",
// "failed: lease expired on attempt 3 of 3: …".
func outcome(job *spool.Job) string {
	state := job.State.String()
	switch {
	case job.State == spool.Succeeded:
		return state
	case exitCode(job) > 0:
		return fmt.Sprintf("%s (exit %d)", state, exitCode(job))
	case resultError(job) != "":
		return state + ": " + resultError(job)
	}
	return state
}

// exitCode is the exit status of the job's command (0 before it ended).
func exitCode(job *spool.Job) int {
	if job.Result == nil {
		return 0
	}
	return job.Result.ExitCode
}

// resultError is why the job failed apart from its exit status ("" before
// it ended).
func resultError(job *spool.Job) string {
	if job.Result == nil {
		return ""
	}
	return job.Result.Error
}

// syncWriter lets goroutines share a stream, a whole write at a time.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// reconnectNotice tells the person, once per incident, that the stream was
// lost and is being resumed.
type reconnectNotice struct {
	w    io.Writer
	told bool
}

// lost is a Reconnect.OnRetry.
func (n *reconnectNotice) lost(err error, _ time.Duration) {
	if !n.told {
		fmt.Fprintf(n.w, "spool: lost the connection to the server (%v); reconnecting…\n", err)
		n.told = true
	}
}

// resumed notes that output is flowing again.
func (n *reconnectNotice) resumed() { n.told = false }
