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
	"github.com/spool-run/spool/internal/termview"
)

// interrupted is spool's exit status after Ctrl-C, as for any program
// stopped by SIGINT.
var interrupted = exitError{code: 130}

// outputOnly asks a stream for output lines and nothing else (the job's
// outcome arrives with the stream's end anyway).
var outputOnly = []spool.EventType{spool.EventOutput}

// outputAndEnds adds the PROCESS_END of each attempt: only the process's
// end says which signal killed it.
var outputAndEnds = []spool.EventType{spool.EventOutput, spool.EventProcessEnd}

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

// queuedNotice is how long submit -f lets a job wait in its queue before
// saying that no worker has taken it (a variable, so tests need not wait).
var queuedNotice = 3 * time.Second

// followJob prints a job's output live until it finishes, then returns the
// error that makes spool exit as the job did. Ctrl-C stops following and
// leaves the job alone. A job that no worker takes for a while is said to
// be waiting for one, once, rather than leaving the terminal silent.
func followJob(ctx context.Context, e *env, c *client.Client, jobID string) error {
	// The notice and the job's stderr lines share the terminal's stderr.
	shared := *e
	shared.errOut = &syncWriter{w: e.errOut}
	noticeCtx, stopNotice := context.WithCancel(ctx)
	noticed := make(chan struct{})
	go func() {
		defer close(noticed)
		noticeIfQueued(noticeCtx, c, jobID, shared.errOut)
	}()
	job, end, err := printOutput(ctx, &shared, c, jobID, 0, true, printOptions{})
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

// noticeIfQueued says, after queuedNotice, that the job waits for a worker
// if it is still queued then.
func noticeIfQueued(ctx context.Context, c *client.Client, jobID string, w io.Writer) {
	t := time.NewTimer(queuedNotice)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return
	}
	job, err := c.Job(ctx, jobID)
	if err != nil || job.State != spool.Queued {
		return
	}
	start := "spool worker"
	if q := job.Queue; q != "default" {
		start += " -q " + q
	}
	fmt.Fprintf(w, "spool: waiting for a worker on queue %s; start one with: %s\n", job.Queue, start)
}

// jobExit is how spool exits after following a job to its end: with the
// command's exit status; 128 and the signal's number when a signal killed
// it, as a shell does; or 1 and why when it ended without either (it never
// ran, its lease was lost, it was cancelled before it started).
func jobExit(e *env, job *spool.Job, end *spool.Event) error {
	switch code := exitCode(job); {
	case job.State == spool.Succeeded:
		return nil
	case code > 0:
		return exitError{code: code}
	}
	fmt.Fprintf(e.errOut, "spool: job %s %s\n", job.ID, outcome(job))
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
