package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/jobjson"
)

func newIngestCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Work with the logs of programs spool did not start (external jobs)",
		Long: `spool takes the logs of programs it did not start (ECS tasks, Lambda
functions, services elsewhere) from Amazon Data Firehose (CloudWatch Logs
subscriptions) and from log shippers such as Vector and Fluent Bit, at
POST /api/v1/ingest/firehose and POST /api/v1/ingest/lines. Each source
becomes an external job: listed with the others, followed live with
'spool logs -f', replayed and paged like any job. docs/ingest.md says how
to point a sender at spool; the sender needs a key of role ingest:

  spool keys create --role ingest --name firehose

A source's job ends after ingest.idle_timeout_seconds without a new event
(the server's setting), or when told to with 'spool ingest complete'.

'spool ingest backfill' reads CloudWatch Logs and adds the events a
subscription did not deliver.`,
	}
	cmd.AddCommand(newIngestCompleteCmd(e), newIngestBackfillCmd(e))
	return cmd
}

func newIngestCompleteCmd(e *env) *cobra.Command {
	var cfg ingestCompleteConfig
	cmd := &cobra.Command{
		Use:   "complete SOURCE | --job JOB_ID",
		Short: "End a source's open job: its log is complete",
		Long: `End the open job of SOURCE (or the external job JOB_ID). It succeeds, and
whoever follows its log sees the end. Events the source sends later open a
new job.`,
		Example: `  spool ingest complete '/ecs/api:ecs/api/4f6c0d2e'
  spool ingest complete --job 019abc…`,
		// A source is a name of the sender's, never a file here.
		ValidArgsFunction: cobra.NoFileCompletions,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (cfg.jobID != "") || len(args) > 1 {
				return fmt.Errorf("name one source, or one job with --job")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				cfg.source = args[0]
			}
			return runIngestComplete(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.jobID, "job", "", "end this external job instead of naming its source")
	// An external job that is still open is running.
	_ = cmd.RegisterFlagCompletionFunc("job", completeJobFlag(e, spool.Running))
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	return cmd
}

// ingestCompleteConfig is what `spool ingest complete` is told on its command line.
type ingestCompleteConfig struct {
	source string
	jobID  string
	asJSON bool
}

func runIngestComplete(ctx context.Context, cfg ingestCompleteConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	complete, target := c.CompleteExternal, cfg.jobID
	if cfg.jobID == "" {
		complete, target = c.CompleteSource, cfg.source
	}
	j, err := complete(ctx, target)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.View(j))
	}
	printJob(e, j)
	return nil
}

func newLogsRebuildCmd(e *env) *cobra.Command {
	var cfg logsRebuildConfig
	return &cobra.Command{
		Use:   "rebuild JOB_ID",
		Short: "Rebuild an external job's stored log from the events accepted for it",
		Long: `The log of an external job is stored in batches, made from the events its
source sent, which spool keeps as they were accepted. 'spool logs rebuild'
makes the batches again from those events and compares them with what is
stored: the same events always make the same log, so nothing should differ.
Anything that does (a batch lost or damaged in the store) is written again.
Needs an admin key.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runLogsRebuild(cmd.Context(), cfg, e)
		},
	}
}

// logsRebuildConfig is what `spool logs rebuild` is told on its command line.
type logsRebuildConfig struct {
	jobID string
}

func runLogsRebuild(ctx context.Context, cfg logsRebuildConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	r, err := c.RebuildLog(ctx, cfg.jobID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "rebuilt from %s: %s in %s\n", count(r.Events, "event"), count(r.Lines, "line"), count(r.Items, "stored item"))
	if r.ItemsChanged == 0 {
		fmt.Fprintln(e.out, "the stored log was exactly that; nothing was written")
	} else {
		fmt.Fprintf(e.out, "put right: %s that differed, were missing or were extra\n", count(r.ItemsChanged, "item"))
	}
	return nil
}

// count is n things, with the plural when n is not 1.
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
