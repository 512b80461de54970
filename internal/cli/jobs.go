package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

func newJobsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, inspect and cancel jobs",
	}
	cmd.AddCommand(newJobsListCmd(e), newJobsGetCmd(e), newJobsCancelCmd(e))
	return cmd
}

func newJobsListCmd(e *env) *cobra.Command {
	var (
		queue, cursor string
		states        []string
		limit         int32
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, newest first",
		Example: `  spool jobs list
  spool jobs list -q builds --state running,queued
  spool jobs list --limit 100 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &spoolv1.ListJobsRequest{Queue: queue, PageSize: limit, Cursor: cursor}
			for _, s := range states {
				st, ok := spoolv1.JobState_value["JOB_STATE_"+strings.ToUpper(strings.TrimSpace(s))]
				if !ok || st == 0 {
					return fmt.Errorf("--state %q: use queued, running, succeeded, failed or cancelled", s)
				}
				req.States = append(req.States, spoolv1.JobState(st))
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			resp, err := c.ListJobs(cmd.Context(), connect.NewRequest(req))
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(e.out, resp.Msg)
			}
			now := time.Now()
			tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB ID\tQUEUE\tSTATE\tATTEMPT\tCREATED\tCOMMAND")
			for _, j := range resp.Msg.GetJobs() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.GetJobId(), j.GetQueue(), stateName(j.GetState()),
					j.GetAttempt(), j.GetMaxAttempts(), ago(j.GetCreatedAt().AsTime(), now), truncate(commandLine(j.GetParams()), 60))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if next := resp.Msg.GetNextCursor(); next != "" {
				fmt.Fprintf(e.errOut, "more: spool jobs list --cursor %s\n", next)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&queue, "queue", "q", "", "only this queue")
	cmd.Flags().StringSliceVar(&states, "state", nil, "only these states (queued, running, succeeded, failed, cancelled)")
	cmd.Flags().Int32Var(&limit, "limit", 20, "at most this many jobs (up to 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue from a previous listing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newJobsGetCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show one job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			j, err := c.Job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(e.out, j)
			}
			printJob(e, j)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newJobsCancelCmd(e *env) *cobra.Command {
	var (
		reason string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "cancel JOB_ID",
		Short: "Cancel a job: at once if queued, at its next heartbeat if running",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			j, err := c.Cancel(cmd.Context(), args[0], reason)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(e.out, j)
			}
			switch {
			case j.GetState() == spoolv1.JobState_JOB_STATE_RUNNING && j.GetCancelRequested():
				fmt.Fprintf(e.out, "%s: cancel requested; its worker will stop it within one heartbeat (%ds)\n",
					j.GetJobId(), j.GetExecutionConfig().GetHeartbeatIntervalSeconds())
			case j.GetState() == spoolv1.JobState_JOB_STATE_CANCELLED:
				fmt.Fprintf(e.out, "%s: cancelled\n", j.GetJobId())
			default:
				fmt.Fprintf(e.out, "%s: already %s, nothing to cancel\n", j.GetJobId(), stateName(j.GetState()))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the job's result")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printJob prints a job for people.
func printJob(e *env, j *spoolv1.Job) {
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s:\t"+f+"\n", append([]any{k}, a...)...) }
	now := time.Now()
	row("Job", "%s", j.GetJobId())
	row("Queue", "%s", j.GetQueue())
	state := stateName(j.GetState())
	if j.GetCancelRequested() && j.GetState() == spoolv1.JobState_JOB_STATE_RUNNING {
		state += " (cancel requested)"
	}
	row("State", "%s", state)
	row("Command", "%s", commandLine(j.GetParams()))
	if p := j.GetParams(); p.GetRepositoryUrl() != "" {
		row("Repository", "%s %s", p.GetRepositoryUrl(), p.GetRef())
	}
	row("Attempt", "%d of %d", j.GetAttempt(), j.GetMaxAttempts())
	row("Created", "%s (%s)", j.GetCreatedAt().AsTime().Local().Format(time.DateTime), ago(j.GetCreatedAt().AsTime(), now))
	if j.GetRequestId() != "" {
		row("Request id", "%s", j.GetRequestId())
	}
	row("Output", "%d lines", j.GetLineCount())
	if r := j.GetResult(); r != nil {
		row("Exit code", "%d", r.GetExitCode())
		if r.GetError() != "" {
			row("Error", "%s", r.GetError())
		}
		if r.GetStartedAt() != nil && r.GetFinishedAt() != nil {
			row("Ran for", "%s", r.GetFinishedAt().AsTime().Sub(r.GetStartedAt().AsTime()).Round(time.Millisecond))
		}
	} else if j.GetLeaseExpiresAt() != nil {
		row("Lease", "until %s", j.GetLeaseExpiresAt().AsTime().Local().Format(time.TimeOnly))
	}
	tw.Flush()
}
