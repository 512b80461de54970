package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
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

--since and --until keep the lines written in a span of time, bounds
included: each takes a duration before now (90s, 10m, 1h30m, 2d), a time
(2026-11-27T09:30:00Z; without a zone, 2026-11-27T09:30, it is local time)
or a date (2026-11-27, local midnight). With -f and --until, spool logs
stops at that time even while the job goes on.

While a long log (over 20,000 lines) is printed and stderr is a terminal,
a line on stderr shows how far it has got; it is gone once the output is
all there (with -f, once the live end is reached), and never appears when
stderr goes to a pipe or a file.`,
		Example: `  spool logs JOB
  spool logs --from 9000 JOB
  spool logs --from -20 -f JOB     # the last 20 lines, then live until it ends
  spool logs --timestamps JOB > build.log
  spool logs --since 10m JOB       # what it wrote in the last ten minutes
  spool logs -f --until 5m JOB     # live, up to five minutes ago
  spool logs --since 2026-11-27T09:30 --until 2026-11-27T09:45 JOB`,
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
	cmd.Flags().Var(timeFlag{t: &cfg.since, now: cfg.now}, "since", "only lines written at or after this time: 10m (ago), 2026-11-27T09:30:00Z, 2026-11-27")
	cmd.Flags().Var(timeFlag{t: &cfg.until, now: cfg.now}, "until", "only lines written at or before this time (same forms as --since)")
	cmd.AddCommand(newLogsRebuildCmd(e))
	return cmd
}

// logsConfig is what `spool logs` is told on its command line.
type logsConfig struct {
	jobID              string
	from               int64
	follow, timestamps bool
	since, until       time.Time // zero: no bound
	progressMin        int64     // lines a replay needs for a progress line
	now                func() time.Time
}

// runLogs prints a job's output. A long replay gets a progress line when
// stderr is a terminal; it is erased before stdout's lines too when stdout
// is a terminal (the same one, surely).
func runLogs(ctx context.Context, cfg logsConfig, e *env) error {
	if !cfg.since.IsZero() && !cfg.until.IsZero() && cfg.until.Before(cfg.since) {
		return fmt.Errorf("--until %s is before --since %s: no line is written in between; give an end after the start",
			cfg.until.Format(time.RFC3339), cfg.since.Format(time.RFC3339))
	}
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
	if err := pastEnd(job, from, cfg.follow); err != nil {
		return err
	}
	popts := printOptions{timestamps: cfg.timestamps, since: cfg.since, until: cfg.until}
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

// pastEnd refuses --from past the end of a job's log, which would print
// nothing and exit 0 as if the log were empty: a finished job's log grows
// no more, and without -f nothing waits for the lines to come. The line
// just after the end is no mistake: a script reading on from where it
// stopped asks for it.
func pastEnd(job *spool.Job, from int64, follow bool) error {
	if from <= job.LineCount+1 {
		return nil
	}
	has := lineCount(job.LineCount)
	switch {
	case job.State.IsFinal():
		return fmt.Errorf("job %s has %s, so --from %d is past its end: --from -20 prints its last 20 lines", job.ID, has, from)
	case !follow:
		return fmt.Errorf("job %s has %s so far, so line %d is not written yet: add -f to wait for it", job.ID, has, from)
	}
	return nil
}

// lineCount is "1 line", "10,004 lines".
func lineCount(n int64) string {
	if n == 1 {
		return "1 line"
	}
	return termview.Thousands(n) + " lines"
}
