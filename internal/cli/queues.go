package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/jobjson"
)

func newQueuesCmd(e *env) *cobra.Command {
	var cfg queuesConfig
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Show the queues: what waits, runs and ended in each; pause and resume them",
		Long: `Show every queue with its jobs queued and running now, the jobs that succeeded,
failed or were cancelled in the last 24 hours, how long its oldest job has waited and
how many workers poll it (through the server asked, in the last minute).`,
		Example: `  spool queues
  spool queues pause builds
  spool queues resume builds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQueues(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	cmd.AddCommand(newQueuePauseCmd(e, true), newQueuePauseCmd(e, false))
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
	fmt.Fprintf(tw, "QUEUE\tSTATE\tQUEUED\tRUNNING\tSUCCEEDED %s\tFAILED %s\tOLDEST WAITING\tWORKERS\n", w, w)
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%d\n", q.Name, state, q.Queued, q.Running,
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
		if q.Paused != pause {
			out = append(out, q.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
