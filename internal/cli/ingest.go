package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/cwlogs"
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
	cfg := logsRebuildConfig{now: time.Now}
	cmd := &cobra.Command{
		Use:   "rebuild JOB_ID",
		Short: "Rebuild an external job's stored log from the events accepted for it",
		Long: `The log of an external job is stored in batches, made from the events its
source sent, which spool keeps as they were accepted. 'spool logs rebuild'
makes the batches again from those events and compares them with what is
stored: the same events always make the same log, so nothing should differ.
Anything that does (a batch lost or damaged in the store) is written again.
Needs an admin key.

With --from-cloudwatch, the job's log stream (its source, group:stream) is
first read from CloudWatch Logs and the events spool lacks are added to the
job, as 'spool ingest backfill' adds them: events a subscription never
delivered are in the rebuilt log. Only a job still open takes events; those
of a job that ended would open a new job of the source. The span read starts
an hour before the job was opened, unless --since says otherwise.`,
		Example: `  spool logs rebuild 01a21f3c-7d1e-7a44-9b0e-4f0a9d1c2b3e
  spool logs rebuild 01a21f3c-7d1e-7a44-9b0e-4f0a9d1c2b3e --from-cloudwatch --since 1d`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e, false),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.jobID = args[0]
			return runLogsRebuild(cmd.Context(), cfg, e)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&cfg.fromCloudWatch, "from-cloudwatch", false, "first add the events of the job's log stream that spool lacks, read from CloudWatch Logs")
	f.Var(timeFlag{t: &cfg.since, now: cfg.now}, "since", "with --from-cloudwatch: read events stamped at or after this time: 2d (ago), 2026-11-27T09:30:00Z (default: an hour before the job was opened)")
	f.StringVar(&cfg.aws.Region, "region", "", "with --from-cloudwatch: the log group's AWS region (default: AWS_REGION, or the shared AWS configuration's)")
	f.StringVar(&cfg.aws.Endpoint, "endpoint", "", "with --from-cloudwatch: a CloudWatch Logs endpoint URL to call instead of AWS's")
	return cmd
}

// logsRebuildConfig is what `spool logs rebuild` is told on its command line.
type logsRebuildConfig struct {
	jobID          string
	fromCloudWatch bool
	since          time.Time
	aws            cwlogs.Config
	now            func() time.Time
}

// rebuildLookback is how long before an external job was opened the
// events a --from-cloudwatch rebuild reads start: a source's first events
// can be stamped before the delivery that opened its job.
const rebuildLookback = time.Hour

func runLogsRebuild(ctx context.Context, cfg logsRebuildConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	if cfg.fromCloudWatch {
		if err := backfillJob(ctx, cfg, c, e); err != nil {
			return err
		}
	} else if !cfg.since.IsZero() || cfg.aws != (cwlogs.Config{}) {
		return errors.New("--since, --region and --endpoint say where --from-cloudwatch reads: give it too")
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

// backfillJob adds the events of the job's CloudWatch log stream that
// spool lacks, as `spool ingest backfill` does.
func backfillJob(ctx context.Context, cfg logsRebuildConfig, c *client.Client, e *env) error {
	j, err := c.Job(ctx, cfg.jobID)
	if err != nil {
		return err
	}
	if j.Params.External == nil {
		return fmt.Errorf("job %s was run by a worker, not sent from elsewhere: only an external job's log comes from CloudWatch Logs", j.ID)
	}
	group, stream, ok := strings.Cut(j.Params.External.Source, ":")
	if !ok || group == "" || stream == "" {
		return fmt.Errorf("job %s's source %q is not a CloudWatch log stream (group:stream): its events came from a shipper, not CloudWatch Logs", j.ID, j.Params.External.Source)
	}
	if j.State.IsFinal() {
		return fmt.Errorf("job %s has ended (%s): events added now would open a new job of %s, not go to this one; rebuild it without --from-cloudwatch", j.ID, j.State, j.Params.External.Source)
	}
	since := cfg.since
	if since.IsZero() {
		since = j.CreatedAt.Add(-rebuildLookback)
	}
	return runIngestBackfill(ctx, ingestBackfillConfig{query: cwlogs.Query{LogGroup: group, LogStream: stream, Since: since}, aws: cfg.aws,
		now: cfg.now, progressEvery: backfillProgressEvery}, e)
}

// count is n things, with the plural when n is not 1.
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
