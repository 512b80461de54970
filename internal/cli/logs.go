package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/termview"
)

// progressMinLines is how long a replay must be for spool logs to show its
// progress: shorter ones are over before a progress line would help.
const progressMinLines = 20000

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
			opts.errTerm = termview.Detect(e.errOut)
			opts.outTTY = termview.Detect(e.out).TTY
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
	errTerm            termview.Info // stderr: a terminal gets the progress line
	outTTY             bool          // stdout is a terminal (the same one, surely)
	progressMin        int64         // lines a replay needs for a progress line
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
	if opts.errTerm.TTY && last-max(from, 1)+1 > opts.progressMin {
		p := termview.NewReplayProgress(e.errOut, opts.errTerm, max(from, 1), last, opts.now)
		defer p.End()
		shared := *e
		// Whatever reaches the terminal takes the progress line off
		// first, so no output lands on the row it occupied.
		shared.errOut = p.Erasing(e.errOut)
		if opts.outTTY {
			shared.out = p.Erasing(e.out)
		}
		e = &shared
		popts.printed = p.Printed
	}
	_, _, err = printOutput(ctx, e, c, job.GetJobId(), from, opts.follow, popts)
	if err != nil && ctx.Err() != nil {
		return interrupted
	}
	return err
}
