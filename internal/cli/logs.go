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
	cfg := logsConfig{progressMin: progressMinLines, now: time.Now}
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
			cfg.jobID = args[0]
			return runLogs(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().Int64Var(&cfg.from, "from", 0, "start at this line (negative: that many lines before the end)")
	cmd.Flags().BoolVarP(&cfg.follow, "follow", "f", false, "keep printing new output until the job ends")
	cmd.Flags().BoolVarP(&cfg.timestamps, "timestamps", "t", false, "start each line with the time it was written (RFC 3339, UTC, milliseconds)")
	cmd.AddCommand(newLogsRebuildCmd(e))
	return cmd
}

// logsConfig is what `spool logs` is told on its command line.
type logsConfig struct {
	jobID              string
	from               int64
	follow, timestamps bool
	progressMin        int64 // lines a replay needs for a progress line
	now                func() time.Time
}

// runLogs prints a job's output. A long replay gets a progress line when
// stderr is a terminal; it is erased before stdout's lines too when stdout
// is a terminal (the same one, surely).
func runLogs(ctx context.Context, cfg logsConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	// Ask for the job first: a wrong id or an unreachable server is
	// reported at once instead of being retried as a lost stream.
	job, err := c.Job(ctx, cfg.jobID)
	if err != nil {
		return scatterLogs(ctx, c, cfg.jobID, err)
	}
	from := startLine(cfg.from, job)
	popts := printOptions{timestamps: cfg.timestamps}
	// What is stored now is the replay; the progress line is about that
	// part, since nobody knows how long a live job's log will get.
	last := job.LineCount
	if e.errTerm.TTY && last-max(from, 1)+1 > cfg.progressMin {
		p := termview.NewReplayProgress(e.errOut, e.errTerm, max(from, 1), last, cfg.now)
		defer p.End()
		shared := *e
		// Whatever reaches the terminal takes the progress line off
		// first, so no output lands on the row it occupied.
		shared.errOut = p.Erasing(e.errOut)
		if e.outTerm.TTY {
			shared.out = p.Erasing(e.out)
		}
		e = &shared
		popts.printed = p.Printed
	}
	_, _, err = printOutput(ctx, e, c, job.ID, from, cfg.follow, popts)
	if err != nil && ctx.Err() != nil {
		return interrupted
	}
	return err
}
