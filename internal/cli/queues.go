package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/jobjson"
)

func newQueuesCmd(e *env) *cobra.Command {
	var cfg queuesConfig
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Show the queues: what waits, runs and ended in each; pause and resume them",
		Long: `Show every queue with its jobs scheduled (waiting for their time or for other
jobs), queued and running now, the most it runs at once, the jobs that succeeded,
failed or were cancelled in the last 24 hours, how long its oldest job has waited and
how many workers poll it (through the server asked, in the last minute).`,
		Example: `  spool queues
  spool queues pause builds
  spool queues resume builds
  spool queues set deploys --max-running 1   # one at a time, across every server
  spool queues set deploys --max-running 0   # no limit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQueues(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	cmd.AddCommand(newQueuePauseCmd(e, true), newQueuePauseCmd(e, false), newQueueSetCmd(e))
	return cmd
}

// queuesConfig is what `spool queues` is told on its command line.
type queuesConfig struct {
	asJSON bool
}

func runQueues(ctx context.Context, cfg queuesConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	queues, window, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.QueueListView(queues, window))
	}
	if len(queues) == 0 {
		fmt.Fprintln(e.out, "no queues yet: a queue appears with its first job (spool submit -q NAME -- CMD)")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	w := windowLabel(window)
	fmt.Fprintf(tw, "QUEUE\tSTATE\tSCHEDULED\tQUEUED\tRUNNING\tMAX RUNNING\tSUCCEEDED %s\tFAILED %s\tOLDEST WAITING\tWORKERS\n", w, w)
	for _, q := range queues {
		state := "active"
		if q.Paused {
			state = "paused " + ago(q.PausedAt, now)
		}
		failed := q.Failed
		fails := fmt.Sprint(failed)
		if n := q.Cancelled; n > 0 {
			fails += fmt.Sprintf(" (+%d cancelled)", n)
		}
		oldest := "-"
		if t := q.OldestQueuedAt; !t.IsZero() {
			oldest = duration(now.Sub(t).Truncate(time.Second))
		}
		limit := "-"
		if q.MaxRunning > 0 {
			limit = fmt.Sprint(q.MaxRunning)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%d\n", q.Name, state, q.Scheduled, q.Queued, q.Running, limit,
			q.Succeeded, fails, oldest, q.Workers)
	}
	return tw.Flush()
}

// windowLabel is how far back the counts go, as a header says it and the
// web UI's does: 24H, not 24h0m0s.
func windowLabel(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dH", d/time.Hour)
	}
	return strings.ToUpper(d.String())
}

// newQueuePauseCmd is spool queues pause (or, with pause false, resume).
func newQueuePauseCmd(e *env, pause bool) *cobra.Command {
	cfg := queuePauseConfig{pause: pause}
	use, short := "resume QUEUE", "Let workers take a paused queue's jobs again"
	if pause {
		use, short = "pause QUEUE", "Stop workers from taking a queue's jobs; running jobs go on"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeQueues(cmd.Context(), e, args, pause)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.queue = args[0]
			return runQueuePause(cmd.Context(), cfg, e)
		},
	}
}

// queuePauseConfig is what `spool queues pause` and `spool queues resume`
// are told on their command line; pause says which of the two it is.
type queuePauseConfig struct {
	queue string
	pause bool
}

func runQueuePause(ctx context.Context, cfg queuePauseConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	set, done := c.ResumeQueue, "resumed: workers take its jobs again"
	if cfg.pause {
		set, done = c.PauseQueue, "paused: workers take none of its jobs until spool queues resume"
	}
	q, err := set(ctx, cfg.queue)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "queue %s %s", q.Name, done)
	if cfg.pause && q.Running > 0 {
		fmt.Fprintf(e.out, " (%d running go on)", q.Running)
	}
	fmt.Fprintln(e.out)
	return nil
}

// completeQueues offers the queues that pause (or resume) would change.
func completeQueues(ctx context.Context, e *env, args []string, pause bool) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeQueueNames(ctx, e, args, func(q *spool.Queue) bool { return q.Paused != pause })
}

// completeQueueNames offers the queues that pass keep.
func completeQueueNames(ctx context.Context, e *env, args []string, keep func(*spool.Queue) bool) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := e.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	queues, _, err := c.Queues(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, q := range queues {
		if keep(q) {
			out = append(out, q.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func newQueueSetCmd(e *env) *cobra.Command {
	var cfg queueSetConfig
	cmd := &cobra.Command{
		Use:   "set QUEUE --max-running N",
		Short: "Change a queue's settings for every server: how many of its jobs run at once",
		Long: `Change a queue's settings, for every server sharing the store. --max-running N
lets at most N of its jobs run at once, across every worker and server (0: no
limit). Lowering it stops no running job: no more start until fewer than N run.
A queue no job names yet may be set, ahead of its first job.`,
		Example: `  spool queues set deploys --max-running 1
  spool queues set builds --max-running 0`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeQueueNames(cmd.Context(), e, args, func(*spool.Queue) bool { return true })
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.queue = args[0]
			cfg.given = givenFlags(cmd)
			return runQueueSet(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().IntVar(&cfg.maxRunning, "max-running", 0, "at most this many of the queue's jobs run at once, across every server (0: no limit; up to 10000)")
	return cmd
}

// queueSetConfig is what `spool queues set` is told on its command line.
type queueSetConfig struct {
	queue      string
	maxRunning int
	given      map[string]bool
}

func runQueueSet(ctx context.Context, cfg queueSetConfig, e *env) error {
	if !cfg.given["max-running"] {
		return fmt.Errorf("say what to set: spool queues set %s --max-running N (0: no limit)", cfg.queue)
	}
	if cfg.maxRunning < 0 {
		return fmt.Errorf("--max-running %d is negative: give the most jobs that may run at once, or 0 for no limit", cfg.maxRunning)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	q, err := c.SetMaxRunning(ctx, cfg.queue, cfg.maxRunning)
	if err != nil {
		return err
	}
	if q.MaxRunning == 0 {
		fmt.Fprintf(e.out, "queue %s: no limit on the jobs running at once\n", q.Name)
		return nil
	}
	fmt.Fprintf(e.out, "queue %s: at most %d of its jobs run at once (%d running now)\n", q.Name, q.MaxRunning, q.Running)
	return nil
}
