package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/events"
)

// interrupted is spool's exit status after Ctrl-C, as for any program
// stopped by SIGINT.
var interrupted = exitError{code: 130}

// outputOnly asks a stream for output lines and nothing else (the job's
// outcome arrives with the stream's end anyway).
var outputOnly = []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA}

// outputAndEnds adds the PROCESS_END of each attempt: only the process's
// end says which signal killed it.
var outputAndEnds = []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_DATA, spoolv1.EventType_EVENT_TYPE_PROCESS_END}

// outputStream is job jobID's events of the given types from line from (0:
// the start), following it live when follow is set. onRetry hears about
// reconnects.
func outputStream(ctx context.Context, c *client.Client, jobID string, from int64, follow bool, types []spoolv1.EventType, onRetry func(error, time.Duration)) *client.EventStream {
	return c.Events(ctx, jobID, client.StreamOptions{FromLine: from, Types: types, Follow: follow,
		Reconnect: client.Reconnect{OnRetry: onRetry}})
}

// startLine turns --from into a line number: as given when positive, the
// last -from lines of the job when negative.
func startLine(from int64, job *spoolv1.Job) int64 {
	if from >= 0 {
		return from
	}
	return max(1, job.GetLineCount()+1+from)
}

// printOptions are what spool logs can add to printing a job's output.
type printOptions struct {
	// Put each line's time in front of it.
	timestamps bool
	// Told the last line number printed after each batch is out, for a
	// progress line (nil: not told).
	printed func(line int64)
}

// printOutput prints a job's output from line from, following it until the
// job finishes when follow is set. It returns the job as it finished (nil
// when it was still live and not followed) and the last PROCESS_END seen.
func printOutput(ctx context.Context, e *env, c *client.Client, jobID string, from int64, follow bool, opts printOptions) (*spoolv1.Job, *spoolv1.JobEvent, error) {
	w := newOutputWriter(e.out, e.errOut)
	w.timestamps = opts.timestamps
	notice := &reconnectNotice{w: e.errOut}
	s := outputStream(ctx, c, jobID, from, follow, outputAndEnds, notice.lost)
	var (
		end     *spoolv1.JobEvent
		attempt int32
		line    int64 // the last line printed
	)
	for batch, err := range s.Batches() {
		if err != nil {
			return nil, nil, err
		}
		notice.resumed()
		for _, ev := range events.Unpack(batch) {
			// Where a new attempt's output begins (a retry, a redelivery),
			// say so between the lines, on stderr.
			if a := ev.GetAttempt(); a > attempt {
				if attempt > 0 {
					if err := w.flush(); err != nil {
						return nil, nil, err
					}
					fmt.Fprintf(e.errOut, "spool: ── attempt %d ──\n", a)
				}
				attempt = a
			}
			if ev.GetProcessEnd() != nil {
				end = ev
				continue
			}
			d := ev.GetOutputData()
			if err := w.writeAt(d, ev.GetTimestamp().AsTime()); err != nil {
				return nil, nil, err
			}
			line = d.GetLineNumber()
		}
		// A batch at a time: few writes, and a follower sees lines as soon
		// as they arrive.
		if err := w.flush(); err != nil {
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
	if err != nil || job.GetState() != spoolv1.JobState_JOB_STATE_QUEUED {
		return
	}
	start := "spool worker"
	if q := job.GetQueue(); q != "default" {
		start += " -q " + q
	}
	fmt.Fprintf(w, "spool: waiting for a worker on queue %s; start one with: %s\n", job.GetQueue(), start)
}

// jobExit is how spool exits after following a job to its end: with the
// command's exit status; 128 and the signal's number when a signal killed
// it, as a shell does; or 1 and why when it ended without either (it never
// ran, its lease was lost, it was cancelled before it started).
func jobExit(e *env, job *spoolv1.Job, end *spoolv1.JobEvent) error {
	switch code := job.GetResult().GetExitCode(); {
	case job.GetState() == spoolv1.JobState_JOB_STATE_SUCCEEDED:
		return nil
	case code > 0:
		return exitError{code: int(code)}
	}
	fmt.Fprintf(e.errOut, "spool: job %s %s\n", job.GetJobId(), outcome(job))
	// Only the last attempt's process decides: an earlier one may have
	// been killed with its worker.
	if end != nil && end.GetAttempt() == job.GetAttempt() {
		if n := signalNumber(end.GetProcessEnd().GetSignal()); n > 0 {
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
func outcome(job *spoolv1.Job) string {
	r := job.GetResult()
	state := spool.StateName(job.GetState())
	switch {
	case job.GetState() == spoolv1.JobState_JOB_STATE_SUCCEEDED:
		return state
	case r.GetExitCode() > 0:
		return fmt.Sprintf("%s (exit %d)", state, r.GetExitCode())
	case r.GetError() != "":
		return state + ": " + r.GetError()
	}
	return state
}

// outputWriter prints output lines as the job wrote them: stdout lines to
// one writer, stderr lines to the other, each followed by a newline unless
// the line was partial. Runs of lines to one stream are buffered; switching
// streams flushes first, so the two interleave as they did in the job.
type outputWriter struct {
	out, errOut *bufio.Writer
	cur         *bufio.Writer // the stream written last
	// With timestamps, a line begins with the time it was written. The
	// pieces of a long or unfinished line are printed as one line, so only
	// the first piece gets one: midLine holds the streams whose last piece
	// was partial.
	timestamps bool
	midLine    map[*bufio.Writer]bool
}

// timestampLayout is RFC 3339 in UTC with milliseconds, as docker logs -t
// and kubectl logs --timestamps print it, and always as wide, so the lines
// stay aligned: 2026-11-25T08:56:11.250Z.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

func newOutputWriter(out, errOut io.Writer) *outputWriter {
	return &outputWriter{out: bufio.NewWriter(out), errOut: bufio.NewWriter(errOut), midLine: map[*bufio.Writer]bool{}}
}

// write writes a line whose time is not wanted (w.timestamps unset).
func (w *outputWriter) write(d *spoolv1.OutputEvent) error { return w.writeAt(d, time.Time{}) }

// writeAt writes a line the job wrote at at.
func (w *outputWriter) writeAt(d *spoolv1.OutputEvent, at time.Time) error {
	to := w.out
	if d.GetStream() == spoolv1.StreamType_STREAM_TYPE_STDERR {
		to = w.errOut
	}
	if w.cur != nil && w.cur != to {
		if err := w.cur.Flush(); err != nil {
			return err
		}
	}
	w.cur = to
	if w.timestamps {
		if !w.midLine[to] {
			to.WriteString(at.UTC().Format(timestampLayout) + " ")
		}
		w.midLine[to] = d.GetPartial()
	}
	if _, err := to.Write(d.GetOutput()); err != nil {
		return err
	}
	if d.GetPartial() {
		return nil
	}
	return to.WriteByte('\n')
}

func (w *outputWriter) flush() error {
	if w.cur == nil {
		return nil
	}
	return w.cur.Flush()
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
