package cli

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/termview"
)

// lineCountPoll is how often monitor refreshes a running job's line count
// for its status line.
const lineCountPoll = 2 * time.Second

func newMonitorCmd(e *env) *cobra.Command {
	var cfg monitorConfig
	cmd := &cobra.Command{
		Use:   "monitor [flags] JOB_ID",
		Short: "Play a job's output back with its recorded timing, then follow it live",
		Long: `Play a job's output back as it was written: each line after the pause that
preceded it (pauses longer than 2s are cut short, with a note), then follow the
job live until it ends.

On a terminal, stderr lines are red (unless NO_COLOR is set), long lines wrap
to the window, and a status line shows where playback is. Piped, it prints the
lines alone, as spool logs does.`,
		Example: `  spool monitor JOB
  spool monitor --fast --from 9000 JOB
  spool monitor --slow JOB`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runMonitor(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().Int64Var(&cfg.from, "from", 0, "start at this line (negative: that many lines before the end)")
	cmd.Flags().BoolVar(&cfg.fast, "fast", false, "no pauses: print as fast as the output arrives")
	cmd.Flags().BoolVar(&cfg.slow, "slow", false, "pauses twice as long as recorded")
	cmd.MarkFlagsMutuallyExclusive("fast", "slow")
	return cmd
}

// monitorConfig is what `spool monitor` is told on its command line.
type monitorConfig struct {
	jobID      string
	from       int64
	fast, slow bool
	// pacer, when set, paces playback in place of the one --fast or
	// --slow asks for (a test's, on a clock of its own).
	pacer *termview.Pacer
}

// newPacer is the pacer the flags ask for.
func (cfg monitorConfig) newPacer() *termview.Pacer {
	if cfg.pacer != nil {
		return cfg.pacer
	}
	scale := 1.0
	switch {
	case cfg.fast:
		scale = 0
	case cfg.slow:
		scale = 2
	}
	return termview.NewPacer(scale)
}

// runMonitor plays a job back on stdout, drawn for the screen it is.
func runMonitor(ctx context.Context, cfg monitorConfig, e *env) error {
	p, t := cfg.newPacer(), e.outTerm
	c, err := e.client()
	if err != nil {
		return err
	}
	job, err := c.Job(ctx, cfg.jobID)
	if err != nil {
		return err
	}
	// monitor follows a live job: only a finished one has an end to pass.
	if err := pastEnd(job, startLine(cfg.from, job), true); err != nil {
		return err
	}
	scr := termview.NewScreen(e.out, e.errOut, t)
	prog := &progress{}
	prog.total.Store(job.LineCount)
	if t.TTY && !job.State.IsFinal() {
		pollCtx, stop := context.WithCancel(ctx)
		defer stop()
		go prog.poll(pollCtx, c, job.ID)
	}
	// What is already on its way is shown before waiting.
	sleep := p.Sleep
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		if err := scr.Flush(); err != nil {
			return err
		}
		return sleep(ctx, d)
	}
	lost := func(error, time.Duration) { _ = scr.SetStatus(prog.text() + " · reconnecting…") }
	if !t.TTY {
		lost = (&reconnectNotice{w: e.errOut}).lost
	}
	if err := scr.SetStatus(prog.text()); err != nil {
		return err
	}
	s := outputStream(ctx, c, job.ID, startLine(cfg.from, job), true, outputOnly, lost)
	for ev, err := range s.Batches() {
		if err != nil {
			return stopMonitor(ctx, scr, err)
		}
		for _, l := range ev.Lines {
			skipped, err := p.Wait(ctx, l.Time)
			if err != nil {
				return stopMonitor(ctx, scr, err)
			}
			if skipped > 0 {
				if err := scr.Note("… paused " + termview.PauseText(skipped)); err != nil {
					return err
				}
			}
			prog.line = l.Number
			scr.NextStatus(prog.text())
			if err := scr.Line(l); err != nil {
				return err
			}
		}
		if err := scr.Flush(); err != nil {
			return err
		}
	}
	done := s.Finished()
	return scr.Finish(fmt.Sprintf("%d lines · %s", done.LineCount, outcome(done)))
}

// stopMonitor leaves the screen tidy when playback stops early: Ctrl-C
// exits quietly, anything else is reported.
func stopMonitor(ctx context.Context, scr *termview.Screen, err error) error {
	_ = scr.Clear()
	if ctx.Err() != nil {
		return interrupted
	}
	return err
}

// progress is monitor's "line N of M". M is the job's line count, kept
// current while the job runs (playback can be far behind a live job).
type progress struct {
	line  int64
	total atomic.Int64 // written by poll
}

func (p *progress) text() string {
	if p.line == 0 {
		return "waiting for output"
	}
	return fmt.Sprintf("line %d of %d", p.line, max(p.line, p.total.Load()))
}

// poll refreshes total until the job is final or ctx ends. A failed poll
// is skipped: the stream reports real trouble.
func (p *progress) poll(ctx context.Context, c *client.Client, jobID string) {
	t := time.NewTicker(lineCountPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		job, err := c.Job(ctx, jobID)
		if err != nil {
			continue
		}
		p.total.Store(job.LineCount)
		if job.State.IsFinal() {
			return
		}
	}
}
