package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/termview"
)

func newJobsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, inspect, cancel, wait for, rerun and delete jobs",
	}
	cmd.AddCommand(newJobsListCmd(e), newJobsGetCmd(e), newJobsCancelCmd(e), newJobsWaitCmd(e), newJobsRerunCmd(e), newJobsDeleteCmd(e))
	return cmd
}

func newJobsListCmd(e *env) *cobra.Command {
	var cfg jobsListConfig
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Example: `  spool jobs list
  spool jobs list -q builds --state running,queued
  spool jobs list --state scheduled   # delayed, retrying after a pause, or waiting for other jobs
  spool jobs list --source '/aws/lambda/resize:2026/11/25/[$LATEST]0a1b'
  spool jobs list --limit 100 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJobsList(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVarP(&cfg.queue, "queue", "q", "", "only this queue")
	cmd.Flags().StringVar(&cfg.source, "source", "", "only the external jobs of this source (a CloudWatch log group:stream, a shipper's source)")
	stateFlag(cmd.Flags(), &cfg.states, "only these states (scheduled, queued, running, succeeded, failed, cancelled)")
	cmd.Flags().Int32Var(&cfg.limit, "limit", 20, "at most this many jobs (up to 1000)")
	cmd.Flags().StringVar(&cfg.cursor, "cursor", "", "continue from a previous listing")
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	return cmd
}

// jobsListConfig is what `spool jobs list` is told on its command line.
type jobsListConfig struct {
	queue, source, cursor string
	states                []string
	limit                 int32
	asJSON                bool
}

func runJobsList(ctx context.Context, cfg jobsListConfig, e *env) error {
	parsed, err := spool.ParseStates(cfg.states...)
	if err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	if cfg.limit < 1 {
		return fmt.Errorf("--limit must be at least 1, got %d (the server returns at most 1000 a page; --cursor goes on)", cfg.limit)
	}
	req := client.ListParams{Queue: cfg.queue, Source: cfg.source, PageSize: int(cfg.limit), Cursor: cfg.cursor, States: parsed}
	c, err := e.client()
	if err != nil {
		return err
	}
	jobs, next, err := c.JobsPage(ctx, req)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.ListView(jobs, next))
	}
	if len(jobs) == 0 {
		fmt.Fprintln(e.out, noJobs(cfg.queue, cfg.source, cfg.states, cfg.cursor))
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB ID\tQUEUE\tSTATE\tATTEMPT\tCREATED\tSTARTED\tELAPSED\tCOMMAND")
	for _, j := range jobs {
		attempt := fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts)
		if j.Params.External != nil {
			attempt = "-" // nothing ran, so nothing was attempted
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Queue, j.State.String(),
			attempt, ago(j.CreatedAt, now), ago(j.StartedAt, now), elapsed(j, now),
			termview.Truncate(commandLine(j.Params), 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(e.errOut, "more: spool jobs list --cursor %s\n", next)
	}
	return nil
}

// noJobs says that a listing is empty, with the filters that made it so.
func noJobs(queue, source string, states []string, cursor string) string {
	msg := "no jobs"
	if cursor != "" {
		msg = "no more jobs"
	}
	if queue != "" {
		msg += " in queue " + queue
	}
	if source != "" {
		msg += " of source " + strconv.Quote(source)
	}
	if len(states) > 0 {
		msg += " with state " + strings.Join(states, " or ")
	}
	return msg
}

func newJobsGetCmd(e *env) *cobra.Command {
	var cfg jobsGetConfig
	cmd := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show one job (or, given a scatter's id, the scatter and its progress)",
		Long: `Show one job: its state and command, what a scheduled job waits for (its
time, the jobs it runs after), the jobs that run after it, its priority, the URLs
told of its end and each delivery to them, and how it ended.`,
		Args: cobra.ExactArgs(1),
		// Tab offers jobs only: the scatters are in spool scatters list.
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runJobsGet(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	return cmd
}

// jobsGetConfig is what `spool jobs get` is told on its command line.
type jobsGetConfig struct {
	jobID  string
	asJSON bool
}

func runJobsGet(ctx context.Context, cfg jobsGetConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	j, err := c.Job(ctx, cfg.jobID)
	if err != nil {
		return scatterOrNotFound(ctx, e, c, cfg.jobID, err, cfg.asJSON)
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.View(j))
	}
	printJob(e, j)
	return nil
}

func newJobsCancelCmd(e *env) *cobra.Command {
	var cfg jobsCancelConfig
	cmd := &cobra.Command{
		Use:               "cancel JOB_ID",
		Short:             "Cancel a job: at once if queued; a running one's command is stopped within moments",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false, activeStates...),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runJobsCancel(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.reason, "reason", "", "why, recorded in the job's result")
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	return cmd
}

// jobsCancelConfig is what `spool jobs cancel` is told on its command line.
type jobsCancelConfig struct {
	jobID  string
	reason string
	asJSON bool
}

func runJobsCancel(ctx context.Context, cfg jobsCancelConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	j, err := c.Cancel(ctx, cfg.jobID, cfg.reason)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.View(j))
	}
	switch {
	case j.State == spool.Running && j.CancelRequested:
		fmt.Fprintf(e.out, "%s: cancel requested; its worker stops the command now (SIGTERM, then SIGKILL)\n", j.ID)
	case j.State == spool.Cancelled:
		fmt.Fprintf(e.out, "%s: cancelled\n", j.ID)
	default:
		fmt.Fprintf(e.out, "%s: already %s, nothing to cancel\n", j.ID, j.State.String())
	}
	return nil
}

// printJob prints a job for people.
func printJob(e *env, j *spool.Job) {
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s:\t"+f+"\n", append([]any{k}, a...)...) }
	now := time.Now()
	row("Job", "%s", j.ID)
	row("Queue", "%s", j.Queue)
	state := j.State.String()
	if j.CancelRequested && j.State == spool.Running {
		state += " (cancel requested)"
	}
	row("State", "%s", state)
	if x := j.Params.External; x != nil && x.Source != "" {
		row("Source", "%s (external: its log was sent to spool, which ran nothing)", x.Source)
	} else if cl := commandLine(j.Params); cl != "" {
		row("Command", "%s", cl)
	} else {
		row("Command", "none: recorded as rejected, never run (the error says why)")
	}
	if names := j.Params.SecretNames; len(names) > 0 {
		row("Secrets", "%s", strings.Join(names, "=***, ")+"=***")
	}
	if in := j.Params.Stdin; len(in) > 0 {
		row("Stdin", "%d bytes: %s", len(in), termview.Truncate(strconv.Quote(string(in)), 200))
	}
	if globs := j.Params.Artifacts; len(globs) > 0 {
		row("Artifacts", "%s (spool artifacts list %s)", strings.Join(globs, " "), j.ID)
	}
	if m := j.Params.Scatter; m != nil {
		if m.Gather {
			row("Scatter", "%s (its gather)", m.ScatterID)
		} else {
			row("Scatter", "%s (batch %d of %d, %d items)", m.ScatterID, m.BatchIndex, m.BatchCount, m.ItemCount)
		}
	}
	if p := j.Params; p.Repository != "" {
		row("Repository", "%s %s", p.Repository, p.Ref)
	}
	if j.Params.External == nil {
		row("Attempt", "%d (lost workers allowed: %d; retries: %d of %d used; handed back: %d)", j.Attempt, j.MaxAttempts,
			j.RetriedAttempts, j.Retries, j.ReleasedAttempts)
	}
	if j.State == spool.Scheduled {
		row("Waits", "%s", waitsFor(j, now))
	}
	if j.Priority != 0 {
		row("Priority", "%d", j.Priority)
	}
	if len(j.After) > 0 {
		row("Runs after", "%s", strings.Join(j.After, ", "))
	}
	if len(j.Followers) > 0 {
		row("Followed by", "%s", strings.Join(j.Followers, ", "))
	}
	if j.Schedule != "" {
		row("Schedule", "%s", j.Schedule)
	}
	if len(j.Notify) > 0 {
		row("Notify", "%s", strings.Join(j.Notify, ", "))
	}
	if t := j.NotifyDue; !t.IsZero() {
		row("Next delivery", "%s (%s)", when(t, now), in(t.Sub(now)))
	}
	row("Created", "%s (%s)", j.CreatedAt.Local().Format(time.DateTime), ago(j.CreatedAt, now))
	if st := j.StartedAt; !st.IsZero() {
		row("Started", "%s (%s)", st.Local().Format(time.DateTime), ago(st, now))
		if j.State == spool.Running {
			row("Running for", "%s", elapsed(j, now))
		}
	}
	if j.RerunOf != "" {
		row("Rerun of", "%s", j.RerunOf)
	}
	if rs := j.Reruns; len(rs) > 0 {
		row("Rerun as", "%s", strings.Join(rs, ", "))
	}
	if j.RequestID != "" {
		row("Request id", "%s", j.RequestID)
	}
	row("Output", "%d lines", j.LineCount)
	if r := j.Result; r != nil {
		row("Exit code", "%d", r.ExitCode)
		if r.Error != "" {
			row("Error", "%s", r.Error)
		}
		if len(r.Output) > 0 {
			row("Result", "%s", termview.Truncate(string(r.Output), 200))
		}
		if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
			row("Ran for", "%s", duration(r.FinishedAt.Sub(r.StartedAt)))
		}
	} else if !j.LeaseExpiresAt.IsZero() {
		row("Lease", "until %s", j.LeaseExpiresAt.Local().Format(time.TimeOnly))
	}
	tw.Flush()
	for _, n := range j.Notes {
		fmt.Fprintf(e.out, "Note: %s\n", n)
	}
	printDeliveries(e, j.Deliveries)
}

// printDeliveries lists each POST of a job's end to its notify URLs, as a
// table under the job.
func printDeliveries(e *env, ds []spool.Delivery) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintln(e.out, "\nDeliveries:")
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tURL\tTRY\tSTATUS\tTOOK\tRESULT")
	for _, d := range ds {
		status, result := "-", "delivered"
		if d.Status != 0 {
			status = strconv.Itoa(d.Status)
		}
		switch {
		case d.Delivered:
		case d.GivenUp:
			result = "given up: " + d.Error
		default:
			result = "failed: " + d.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", d.At.Local().Format(time.DateTime), d.URL, d.Try, status, duration(d.Took),
			termview.Truncate(result, 120))
	}
	tw.Flush()
}

func newJobsRerunCmd(e *env) *cobra.Command {
	var cfg jobsRerunConfig
	cmd := &cobra.Command{
		Use:   "rerun JOB_ID",
		Short: "Run a finished job again, as a new job with the same command and queue",
		Long: `Run a finished job again: a new job with the same queue, command, environment,
secrets, input and budgets, under the server's current settings. The two name
each other: the new job's "Rerun of" is the old one, the old one's "Rerun as"
lists its reruns.`,
		Example: `  spool jobs rerun 0195f3c2-…
  spool jobs rerun 0195f3c2-… --follow`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false, finalStates...),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runJobsRerun(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.requestID, "request-id", "", "idempotency key: repeating the command with it returns the same new job")
	cmd.Flags().BoolVarP(&cfg.follow, "follow", "f", false, "follow the new job's output and exit with its exit code")
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print the new job as JSON")
	return cmd
}

// jobsRerunConfig is what `spool jobs rerun` is told on its command line.
type jobsRerunConfig struct {
	jobID     string
	requestID string
	follow    bool
	asJSON    bool
}

func runJobsRerun(ctx context.Context, cfg jobsRerunConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	// As for submit: a repeat after the server was away finds
	// the job the first try made.
	j, err := c.Rerun(ctx, cfg.jobID, cmp.Or(cfg.requestID, newRequestID()))
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.View(j))
	}
	fmt.Fprintf(e.errOut, "rerun of %s: job %s queued in %s\n", cfg.jobID, j.ID, j.Queue)
	if !cfg.follow {
		fmt.Fprintln(e.out, j.ID)
		return nil
	}
	return followJob(ctx, e, c, j.ID)
}

func newJobsDeleteCmd(e *env) *cobra.Command {
	var cfg jobsDeleteConfig
	return &cobra.Command{
		Use:   "delete JOB_ID...",
		Short: "Delete finished jobs and their logs from the server",
		Long: `Delete finished jobs with their whole logs. A job still queued or running is
refused: cancel it first. Needs an admin key. The server also deletes jobs on its
own once they ended more than jobs.retention_days ago.`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeJobArg(e, true, finalStates...),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobIDs = args
			return runJobsDelete(cmd.Context(), cfg, e)
		},
	}
}

// jobsDeleteConfig is what `spool jobs delete` is told on its command line.
type jobsDeleteConfig struct {
	jobIDs []string
}

func runJobsDelete(ctx context.Context, cfg jobsDeleteConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	var failed error
	for _, id := range cfg.jobIDs {
		if err := c.Delete(ctx, id); err != nil {
			if len(cfg.jobIDs) == 1 {
				return err
			}
			fmt.Fprintf(e.errOut, "%s: %s\n", id, explain(err, e))
			failed = errors.New("some jobs were not deleted")
			continue
		}
		fmt.Fprintf(e.out, "%s: deleted\n", id)
	}
	return failed
}
