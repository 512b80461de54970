package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

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

// outputStream is job jobID's output from line from (0: the start),
// following it live when follow is set. onRetry hears about reconnects.
func outputStream(ctx context.Context, c *client.Client, jobID string, from int64, follow bool, onRetry func(error, time.Duration)) *client.EventStream {
	return c.Events(ctx, jobID, client.StreamOptions{FromLine: from, Types: outputOnly, Follow: follow,
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

// printOutput prints a job's output from line from, following it until the
// job finishes when follow is set, and returns the job as it finished (nil
// when it was still live and not followed).
func printOutput(ctx context.Context, e *env, c *client.Client, jobID string, from int64, follow bool) (*spoolv1.Job, error) {
	w := newOutputWriter(e.out, e.errOut)
	notice := &reconnectNotice{w: e.errOut}
	s := outputStream(ctx, c, jobID, from, follow, notice.lost)
	for batch, err := range s.Batches() {
		if err != nil {
			return nil, err
		}
		notice.resumed()
		for _, ev := range events.Unpack(batch) {
			if err := w.write(ev.GetOutputData()); err != nil {
				return nil, err
			}
		}
		// A batch at a time: few writes, and a follower sees lines as soon
		// as they arrive.
		if err := w.flush(); err != nil {
			return nil, err
		}
	}
	return s.Finished(), nil
}

// followJob prints a job's output live until it finishes, then returns the
// error that makes spool exit as the job did. Ctrl-C stops following and
// leaves the job alone.
func followJob(ctx context.Context, e *env, c *client.Client, jobID string) error {
	job, err := printOutput(ctx, e, c, jobID, 0, true)
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(e.errOut, "spool: stopped following; the job is still running: spool logs -f %s\n", jobID)
		return interrupted
	case err != nil:
		return err
	}
	return jobExit(e, job)
}

// jobExit is how spool exits after following a job to its end: with the
// command's exit status, or 1 and why when it ended without one (it never
// ran, its lease was lost, it was cancelled or killed).
func jobExit(e *env, job *spoolv1.Job) error {
	switch code := job.GetResult().GetExitCode(); {
	case job.GetState() == spoolv1.JobState_JOB_STATE_SUCCEEDED:
		return nil
	case code > 0:
		return exitError{code: int(code)}
	}
	fmt.Fprintf(e.errOut, "spool: job %s %s\n", job.GetJobId(), outcome(job))
	return exitError{code: 1}
}

// outcome says how a job ended, for people: "succeeded", "failed (exit 3)",
// "failed: lease expired on attempt 3 of 3: …".
func outcome(job *spoolv1.Job) string {
	r := job.GetResult()
	state := stateName(job.GetState())
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
}

func newOutputWriter(out, errOut io.Writer) *outputWriter {
	return &outputWriter{out: bufio.NewWriter(out), errOut: bufio.NewWriter(errOut)}
}

func (w *outputWriter) write(d *spoolv1.OutputEvent) error {
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
