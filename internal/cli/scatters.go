package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
	"github.com/spool-run/spool/internal/termview"
)

func newScattersCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scatters",
		Short: "List, inspect, cancel and redrive scatters (start one with spool scatter)",
	}
	cmd.AddCommand(newScattersListCmd(e), newScattersGetCmd(e), newScattersCancelCmd(e), newScattersRedriveCmd(e))
	return cmd
}

func newScattersListCmd(e *env) *cobra.Command {
	var cfg scattersListConfig
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List scatters, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runScattersList(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().Int32Var(&cfg.limit, "limit", 20, "at most this many scatters (up to 500)")
	cmd.Flags().StringVar(&cfg.cursor, "cursor", "", "continue from a previous listing")
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	return cmd
}

// scattersListConfig is what `spool scatters list` is told on its command line.
type scattersListConfig struct {
	cursor string
	limit  int32
	asJSON bool
}

func runScattersList(ctx context.Context, cfg scattersListConfig, e *env) error {
	if cfg.limit < 1 || cfg.limit > 500 {
		return fmt.Errorf("--limit must be between 1 and 500, got %d", cfg.limit)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	scs, next, err := c.ScattersPage(ctx, int(cfg.limit), cfg.cursor)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.ScatterListView(scs, next))
	}
	if len(scs) == 0 {
		fmt.Fprintln(e.out, "no scatters")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCATTER ID\tQUEUE\tSTATE\tBATCHES\tSUCCEEDED\tFAILED\tCREATED\tCOMMAND")
	for _, sc := range scs {
		p := sc.Progress
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", sc.ID, sc.Spec.Queue, sc.State.String(),
			p.BatchCount, p.Succeeded, p.Failed, ago(sc.CreatedAt, now), termview.Truncate(commandLine(sc.Spec.Params), 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(e.errOut, "more: spool scatters list --cursor %s\n", next)
	}
	return nil
}

func newScattersGetCmd(e *env) *cobra.Command {
	var cfg scattersGetConfig
	cmd := &cobra.Command{
		Use:   "get SCATTER_ID",
		Short: "Show a scatter and its progress",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.scatterID = args[0]
			return runScattersGet(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&cfg.follow, "follow", "f", false, "show a progress line until it ends; exit 0 if it succeeded")
	return cmd
}

// scattersGetConfig is what `spool scatters get` is told on its command line.
type scattersGetConfig struct {
	scatterID      string
	asJSON, follow bool
}

func runScattersGet(ctx context.Context, cfg scattersGetConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	if cfg.follow {
		return followScatter(ctx, e, c, cfg.scatterID)
	}
	sc, err := c.Scatter(ctx, cfg.scatterID)
	if err != nil {
		return err
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.ScatterView(sc))
	}
	printScatter(e, sc)
	return nil
}

func newScattersCancelCmd(e *env) *cobra.Command {
	var cfg scattersCancelConfig
	cmd := &cobra.Command{
		Use:   "cancel SCATTER_ID",
		Short: "Cancel a scatter: waiting batches never run, queued and running ones are cancelled, no gather runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.scatterID = args[0]
			return runScattersCancel(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.reason, "reason", "", "why, kept on the scatter and its cancelled jobs")
	return cmd
}

// scattersCancelConfig is what `spool scatters cancel` is told on its command line.
type scattersCancelConfig struct {
	scatterID string
	reason    string
}

func runScattersCancel(ctx context.Context, cfg scattersCancelConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	sc, err := c.CancelScatter(ctx, cfg.scatterID, cfg.reason)
	if err != nil {
		return err
	}
	printScatter(e, sc)
	return nil
}

func newScattersRedriveCmd(e *env) *cobra.Command {
	var cfg scattersRedriveConfig
	cmd := &cobra.Command{
		Use:   "redrive SCATTER_ID",
		Short: "Run a failed or cancelled scatter again from where it stopped: only its failed batches, then its gather",
		Long: `Run an ended scatter again, as Step Functions redrives a Map Run: the batches
that failed or were cancelled (or never ran) run again, each as a new job
(SCATTER_ID.i.rN for redrive N) under the scatter's --max-concurrency, then the
gather (SCATTER_ID.gather.rN) with every batch's result. Batches that succeeded
keep their jobs and results and do not run again. A scatter still running, or
one that succeeded, is refused.`,
		Example: `  spool scatters redrive 0190c3a2-…        # prints the scatter, running again
  spool scatters redrive -f 0190c3a2-…     # and follows it; exit 0 if it succeeds`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.scatterID = args[0]
			return runScattersRedrive(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().BoolVarP(&cfg.follow, "follow", "f", false, "show a progress line until it ends; exit 0 if it succeeded, 1 if not")
	return cmd
}

// scattersRedriveConfig is what `spool scatters redrive` is told on its
// command line.
type scattersRedriveConfig struct {
	scatterID string
	follow    bool
}

func runScattersRedrive(ctx context.Context, cfg scattersRedriveConfig, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	sc, err := c.RedriveScatter(ctx, cfg.scatterID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.errOut, "spool: redrive %d of scatter %s: %d batches to run again\n", sc.RedriveCount, sc.ID, sc.Progress.Waiting)
	if cfg.follow {
		return followScatter(ctx, e, c, sc.ID)
	}
	printScatter(e, sc)
	return nil
}

// scatterLogs answers `spool logs` given a scatter's id, which is not a
// job: a scatter has no log of its own, its batches and gather each have
// one. Any other id gets jobErr back.
func scatterLogs(ctx context.Context, c *client.Client, id string, jobErr error) error {
	if !errors.Is(jobErr, spool.ErrNotFound) || uuid.Validate(id) != nil {
		return jobErr
	}
	sc, err := c.Scatter(ctx, id)
	if err != nil {
		return jobErr
	}
	var where []string
	if sc.GatherJobID != "" {
		where = append(where, "its gather's: spool logs "+sc.GatherJobID)
	}
	if len(sc.FailedJobIDs) > 0 {
		where = append(where, "a failed batch's: spool logs "+sc.FailedJobIDs[0])
	}
	if len(where) == 0 {
		where = append(where, "a batch's: spool logs "+id+".0")
	}
	return fmt.Errorf("%s is a scatter, not a job: each of its batches, and its gather, has a log of its own; %s. "+
		"spool scatters get %s shows the scatter (the web UI's page /scatters/%s links every batch's log)", id, strings.Join(where, "; "), id, id)
}

// scatterOrNotFound shows the scatter of an id `spool jobs get` did not find
// as a job, so both kinds of id work there.
func scatterOrNotFound(ctx context.Context, e *env, c *client.Client, id string, jobErr error, asJSON bool) error {
	if !errors.Is(jobErr, spool.ErrNotFound) || uuid.Validate(id) != nil {
		return jobErr
	}
	sc, err := c.Scatter(ctx, id)
	if err != nil {
		return jobErr
	}
	if asJSON {
		return printJSON(e.out, jobjson.ScatterView(sc))
	}
	printScatter(e, sc)
	return nil
}

// printScatter shows a scatter as `spool jobs get` shows a job.
func printScatter(e *env, sc *spool.Scatter) {
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	row := func(k, f string, a ...any) { fmt.Fprintf(tw, "%s:\t"+f+"\n", append([]any{k}, a...)...) }
	spec, p := sc.Spec, sc.Progress
	row("Scatter", "%s", sc.ID)
	row("Queue", "%s", spec.Queue)
	row("State", "%s", sc.State.String())
	if sc.Error != "" {
		row("Error", "%s", sc.Error)
	}
	if len(sc.FailedJobIDs) > 0 {
		more := ""
		if n := p.Failed + p.Cancelled; n > len(sc.FailedJobIDs) {
			more = fmt.Sprintf(" (the first %d of %d failed or cancelled)", len(sc.FailedJobIDs), n)
		}
		row("Failed jobs", "%s%s; see why with spool logs %s", strings.Join(sc.FailedJobIDs, ", "), more, sc.FailedJobIDs[0])
	}
	if sc.RedriveCount > 0 {
		row("Redrives", "%d (redrive N runs batch I again as job %s.I.rN)", sc.RedriveCount, sc.ID)
	}
	row("Command", "%s", commandLine(spec.Params))
	row("Progress", "%s", progressLine(sc, termview.Info{}))
	row("Batches", "%d (%d items); jobs %s", p.BatchCount, p.ItemCount, batchJobPattern(sc.ID))
	if src := spec.Source; src != nil {
		row("Items", "%s", sourceLine(src, sc.Reading, sc.State))
	}
	if spec.Results != "" {
		results := spec.Results
		if sc.ResultManifest != "" {
			results += " (manifest " + sc.ResultManifest + ")"
		}
		row("Results", "%s", results)
	}
	limit := "none"
	if spec.MaxConcurrency > 0 {
		limit = fmt.Sprint(spec.MaxConcurrency)
	}
	row("Concurrency", "%s", limit)
	row("Batch input", "%s", termview.Truncate(string(spec.BatchInput), 80))
	if g := spec.Gather; g != nil {
		gather := commandLine(*g)
		if sc.GatherJobID != "" {
			gather += " (job " + sc.GatherJobID + ")"
		}
		row("Gather", "%s", gather)
	}
	row("Created", "%s (%s)", sc.CreatedAt.Local().Format(time.DateTime), ago(sc.CreatedAt, time.Now()))
	tw.Flush()
}

// batchJobPattern says how a scatter's batch jobs are named.
func batchJobPattern(id string) string { return id + ".0, " + id + ".1, …" }

// sourceLine says where the server reads a scatter's items and how far it
// has come.
func sourceLine(src *spool.ScatterSource, r *spool.ScatterReading, st spool.ScatterState) string {
	where := src.Items
	if where == "" {
		where = "the objects under " + src.ItemsPrefix
	}
	switch {
	case r == nil:
		return where
	case r.Done:
		return fmt.Sprintf("%s: all %d read", where, r.ItemsRead)
	case st.IsFinal():
		return fmt.Sprintf("%s: the reading stopped after %d items", where, r.ItemsRead)
	}
	return fmt.Sprintf("%s: reading, %d items so far", where, r.ItemsRead)
}
