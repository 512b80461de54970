package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/termview"
)

func newSchedulesCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Run a command periodically: create, list, pause, resume and delete schedules",
		Long: `A schedule enqueues one job at each tick of its cron expression, once, whichever
of the servers sharing the store sees the tick first. A tick missed while no server
ran is run once when one starts (--missed run-once) or skipped (--missed skip); a
tick while the last tick's job still runs enqueues anyway (--overlap allow) or
nothing (--overlap skip).`,
	}
	cmd.AddCommand(newSchedulesCreateCmd(e), newSchedulesListCmd(e), newSchedulesGetCmd(e),
		newSchedulePauseCmd(e, true), newSchedulePauseCmd(e, false), newSchedulesDeleteCmd(e))
	return cmd
}

func newSchedulesCreateCmd(e *env) *cobra.Command {
	var cfg schedulesCreateConfig
	cmd := &cobra.Command{
		Use:   "create NAME --cron EXPR [flags] -- COMMAND [ARG...]",
		Short: "Create a schedule: a job at each tick of a cron expression",
		Example: `  spool schedules create nightly --cron '0 3 * * *' -- make nightly
  spool schedules create report --cron '30 8 * * 1-5' --timezone Europe/Paris -q reports -- ./report.sh
  spool schedules create poll --cron '@every 10m' --overlap skip --shell 'curl -fsS https://example.com/health'
  spool schedules create backup --cron @daily --missed skip --priority 1 --notify https://ops.example.com/hook -- ./backup.sh

EXPR is five fields (minute hour day-of-month month day-of-week), six with
seconds first, a descriptor (@hourly, @daily, @weekly, @monthly) or @every D.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.name, cfg.argv = args[0], args[1:]
			return runSchedulesCreate(cmd.Context(), cfg, e)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.cron, "cron", "", "when to run: a cron expression (0 3 * * *), a descriptor (@hourly) or @every D (@every 10m)")
	fl.StringVar(&cfg.timezone, "timezone", "", "the IANA time zone the expression is read in, such as Europe/Paris (default UTC)")
	enumVar(fl, &cfg.overlap, "overlap", "allow", "while the last tick's job has not ended: allow (enqueue anyway) or skip (enqueue nothing)", names(spool.Overlaps())...)
	// run_once is how the setting schedules.missed and the REST API spell it.
	enumVar(fl, &cfg.missed, "missed", "", "ticks missed while no server ran: run-once (the latest, once) or skip (default: the server's, run-once)",
		names(spool.MissedPolicies())...).aliases = map[string]string{"run_once": "run-once"}
	cfg.spec.register(cmd)
	cfg.extra.register(cmd)
	// A tick's job gets its own request id (the schedule and the tick).
	_ = fl.MarkHidden("request-id")
	fl.BoolVar(&cfg.asJSON, "json", false, "print the schedule as JSON")
	_ = cmd.MarkFlagRequired("cron")
	// Flags may follow NAME; the command starts after "--".
	return cmd
}

// names are the names of values, as flags list them.
func names[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}
	return out
}

// schedulesCreateConfig is what `spool schedules create` is told on its
// command line.
type schedulesCreateConfig struct {
	name, cron, timezone string
	overlap, missed      string
	argv                 []string
	spec                 submitFlags
	extra                jobExtraFlags
	asJSON               bool
}

func runSchedulesCreate(ctx context.Context, cfg schedulesCreateConfig, e *env) error {
	if len(cfg.argv) == 0 && cfg.spec.script == "" {
		return fmt.Errorf("say what each tick runs: spool schedules create %s --cron '%s' -- make nightly (or --shell '...')", cfg.name, cfg.cron)
	}
	job, err := cfg.spec.submission(cfg.argv)
	if err != nil {
		return err
	}
	if err := cfg.extra.apply(&job); err != nil {
		return err
	}
	p := client.ScheduleParams{Name: cfg.name, Cron: cfg.cron, Timezone: cfg.timezone, Job: job}
	if p.Overlap, err = spool.ParseOverlap(cfg.overlap); err != nil {
		return fmt.Errorf("--overlap: %w", err)
	}
	if cfg.missed != "" {
		if p.Missed, err = spool.ParseMissed(cfg.missed); err != nil {
			return fmt.Errorf("--missed: %w", err)
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	s, err := c.CreateSchedule(ctx, p)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.ScheduleView(s))
	}
	fmt.Fprintf(e.out, "schedule %s created: next run %s\n", s.Name, nextRun(s, time.Now()))
	return nil
}

// nextRun says when a schedule next runs, for people.
func nextRun(s *spool.Schedule, now time.Time) string {
	switch {
	case s.Paused:
		return "none (paused)"
	case s.NextTickAt.IsZero():
		return "-"
	}
	return fmt.Sprintf("%s (%s)", when(s.NextTickAt, now), in(s.NextTickAt.Sub(now)))
}

func newSchedulesListCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the schedules with their next and last runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSchedulesList(cmd.Context(), asJSON, e)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func runSchedulesList(ctx context.Context, asJSON bool, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	all, err := c.Schedules(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.out, jobjson.ScheduleListView(all))
	}
	if len(all) == 0 {
		fmt.Fprintln(e.out, "no schedules yet: spool schedules create NAME --cron '0 3 * * *' -- CMD")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tQUEUE\tSTATE\tNEXT RUN\tLAST RUN\tLAST JOB\tCOMMAND")
	for _, s := range all {
		state := "active"
		if s.Paused {
			state = "paused"
		}
		last, lastJob := "-", "-"
		if !s.LastTickAt.IsZero() {
			last = ago(s.LastTickAt, now)
		}
		if s.LastJobID != "" {
			lastJob = s.LastJobID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Cron, zone(s.Timezone), queueName(s.Job.Queue), state,
			nextRun(s, now), last, lastJob, termview.Truncate(commandLine(s.Job.Params), 40))
	}
	return tw.Flush()
}

// zone is a schedule's time zone as it is read: UTC when none is named.
func zone(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// queueName is the queue a job without one goes to.
func queueName(q string) string {
	if q == "" {
		return "default"
	}
	return q
}

func newSchedulesGetCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "get NAME",
		Short:             "Show one schedule: its expression, job, policies and runs",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSchedules(e, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSchedulesGet(cmd.Context(), args[0], asJSON, e)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func runSchedulesGet(ctx context.Context, name string, asJSON bool, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	s, err := c.Schedule(ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.out, jobjson.ScheduleView(s))
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s:\t"+f+"\n", append([]any{k}, a...)...) }
	row("Schedule", "%s", s.Name)
	row("Cron", "%s (%s)", s.Cron, zone(s.Timezone))
	state := "active"
	if s.Paused {
		state = "paused: no ticks run until spool schedules resume " + s.Name
	}
	row("State", "%s", state)
	row("Queue", "%s", queueName(s.Job.Queue))
	row("Command", "%s", commandLine(s.Job.Params))
	if s.Job.Priority != 0 {
		row("Priority", "%d", s.Job.Priority)
	}
	if len(s.Job.Notify) > 0 {
		row("Notify", "%s", listOf(s.Job.Notify, "and"))
	}
	row("Overlap", "%s", s.Overlap)
	row("Missed ticks", "%s", s.Missed)
	row("Next run", "%s", nextRun(s, now))
	if !s.LastTickAt.IsZero() {
		row("Last run", "%s (%s)", when(s.LastTickAt, now), ago(s.LastTickAt, now))
	}
	if s.LastJobID != "" {
		row("Last job", "%s", s.LastJobID)
	}
	row("Created", "%s (%s)", s.CreatedAt.Local().Format(time.DateTime), ago(s.CreatedAt, now))
	return tw.Flush()
}

// newSchedulePauseCmd is spool schedules pause (or, with pause false,
// resume).
func newSchedulePauseCmd(e *env, pause bool) *cobra.Command {
	use, short := "resume NAME", "Run a paused schedule's ticks again, from now"
	if pause {
		use, short = "pause NAME", "Stop a schedule's ticks; those that pass meanwhile are not run"
	}
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSchedules(e, func(s *spool.Schedule) bool { return s.Paused != pause }),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			set := c.ResumeSchedule
			if pause {
				set = c.PauseSchedule
			}
			s, err := set(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if pause {
				fmt.Fprintf(e.out, "schedule %s paused: no ticks run until spool schedules resume %s\n", s.Name, s.Name)
				return nil
			}
			fmt.Fprintf(e.out, "schedule %s resumed: next run %s\n", s.Name, nextRun(s, time.Now()))
			return nil
		},
	}
}

func newSchedulesDeleteCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a schedule; the jobs it made stay",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSchedules(e, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if err := c.DeleteSchedule(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.out, "schedule %s deleted; the jobs it made stay\n", args[0])
			return nil
		},
	}
}

// completeSchedules offers the schedules that pass keep (nil: all).
func completeSchedules(e *env, keep func(*spool.Schedule) bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := e.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		all, err := c.Schedules(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range all {
			if keep == nil || keep(s) {
				out = append(out, s.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
