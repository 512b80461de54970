package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// progressMinLines is how long a replay must be for spool logs to show its
// progress: shorter ones are over before a progress line would help.
const progressMinLines = 20000

// progressEvery is how often the progress line is redrawn at most: often
// enough to look alive, rarely enough to cost the terminal nothing.
const progressEvery = 250 * time.Millisecond

func newLogsCmd(e *env) *cobra.Command {
	var opts logsOptions
	cmd := &cobra.Command{
		Use:   "logs [flags] JOB_ID",
		Short: "Print a job's output from any line; follow it live with -f",
		Long: `Print a job's output: stdout lines to stdout, stderr lines to stderr, as the
job wrote them. Reading from line 9000 of a long log costs about as much as
reading its last few batches.

With --timestamps, each line starts with the time the job wrote it, in UTC
to the millisecond (2026-11-25T08:56:11.250Z), as docker logs -t does.

While a long log (over 20,000 lines) is printed and stderr is a terminal,
a line on stderr shows how far it has got; it is gone once the output is
all there (with -f, once the live end is reached), and never appears when
stderr goes to a pipe or a file.`,
		Example: `  spool logs JOB
  spool logs --from 9000 JOB
  spool logs --from -20 -f JOB     # the last 20 lines, then live until it ends
  spool logs --timestamps JOB > build.log`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.errTerm = detectTerm(e.errOut)
			opts.outTTY = detectTerm(e.out).tty
			opts.progressMin = progressMinLines
			opts.now = time.Now
			return printLogs(cmd.Context(), e, args[0], opts)
		},
	}
	cmd.Flags().Int64Var(&opts.from, "from", 0, "start at this line (negative: that many lines before the end)")
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing new output until the job ends")
	cmd.Flags().BoolVarP(&opts.timestamps, "timestamps", "t", false, "start each line with the time it was written (RFC 3339, UTC, milliseconds)")
	cmd.AddCommand(newLogsRebuildCmd(e))
	return cmd
}

// logsOptions are spool logs' flags, and what it found about its streams.
type logsOptions struct {
	from               int64
	follow, timestamps bool
	errTerm            termInfo // stderr: a terminal gets the progress line
	outTTY             bool     // stdout is a terminal (the same one, surely)
	progressMin        int64    // lines a replay needs for a progress line
	now                func() time.Time
}

func printLogs(ctx context.Context, e *env, jobID string, opts logsOptions) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	// Ask for the job first: a wrong id or an unreachable server is
	// reported at once instead of being retried as a lost stream.
	job, err := c.Job(ctx, jobID)
	if err != nil {
		return err
	}
	from := startLine(opts.from, job)
	popts := printOptions{timestamps: opts.timestamps}
	// What is stored now is the replay; the progress line is about that
	// part, since nobody knows how long a live job's log will get.
	last := job.GetLineCount()
	if opts.errTerm.tty && last-max(from, 1)+1 > opts.progressMin {
		p := &logProgress{term: opts.errTerm, w: e.errOut, first: max(from, 1), last: last, now: opts.now, began: opts.now()}
		p.drawnAt = p.began
		defer p.end()
		shared := *e
		// Whatever reaches the terminal takes the progress line off
		// first, so no output lands on the row it occupied.
		shared.errOut = erasing{p: p, w: e.errOut}
		if opts.outTTY {
			shared.out = erasing{p: p, w: e.out}
		}
		e = &shared
		popts.printed = p.printed
	}
	_, _, err = printOutput(ctx, e, c, job.GetJobId(), from, opts.follow, popts)
	if err != nil && ctx.Err() != nil {
		return interrupted
	}
	return err
}

// logProgress is the line spool logs keeps on a terminal's stderr while it
// prints a long log: "spool: 12,000 of 80,000 lines (15%) · 41,000 lines/s".
// It is drawn between batches, without a newline, and erased (the cursor
// back to the start of the row, the row cleared) before anything else is
// written to the terminal, and for good once the replay is done.
type logProgress struct {
	term        termInfo
	w           io.Writer // the terminal
	first, last int64     // the lines of the replay
	now         func() time.Time
	began       time.Time
	drawnAt     time.Time // the last draw (began until the first)
	drawn       bool      // the line is on the screen
	over        bool      // the replay is done: nothing more to show
}

// printed is told the last line printed after each batch.
func (p *logProgress) printed(line int64) {
	if p.over {
		return
	}
	if line >= p.last {
		// Everything that was stored is out: the rest, with -f, is live
		// output, which needs no progress line.
		p.end()
		return
	}
	now := p.now()
	if now.Sub(p.drawnAt) < progressEvery {
		return
	}
	p.drawnAt = now
	done, total := line-p.first+1, p.last-p.first+1
	text := fmt.Sprintf("spool: %s of %s lines (%d%%)", thousands(done), thousands(total), done*100/total)
	if secs := now.Sub(p.began).Seconds(); secs > 0 {
		text += fmt.Sprintf(" · %s lines/s", thousands(int64(float64(done)/secs)))
	}
	// Cut to the width: a line that wrapped could not be erased.
	text = truncate(text, max(1, p.term.width-1))
	if p.term.color {
		text = ansiDim + text + ansiReset
	}
	p.erase()
	io.WriteString(p.w, text)
	p.drawn = true
}

// erase takes the progress line off the screen, if it is on it.
func (p *logProgress) erase() {
	if p.drawn {
		io.WriteString(p.w, ansiClearLine)
		p.drawn = false
	}
}

// end erases the progress line for good.
func (p *logProgress) end() {
	p.erase()
	p.over = true
}

// erasing is a stream to the terminal that erases the progress line before
// each write.
type erasing struct {
	p *logProgress
	w io.Writer
}

func (e erasing) Write(b []byte) (int, error) {
	e.p.erase()
	return e.w.Write(b)
}

// thousands writes a count (never negative) with commas between groups of
// three digits, easier to take in at a glance: 1234567 is 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := len(s) % 3
	out := s[:start]
	for i := start; i < len(s); i += 3 {
		if out != "" {
			out += ","
		}
		out += s[i : i+3]
	}
	return out
}
