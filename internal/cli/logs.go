package cli

import (
	"github.com/spf13/cobra"
)

func newLogsCmd(e *env) *cobra.Command {
	var (
		from   int64
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs [flags] JOB_ID",
		Short: "Print a job's output from any line; follow it live with -f",
		Long: `Print a job's output: stdout lines to stdout, stderr lines to stderr, as the
job wrote them. Reading from line 9000 of a long log costs about as much as
reading its last few batches.`,
		Example: `  spool logs JOB
  spool logs --from 9000 JOB
  spool logs --from -20 -f JOB     # the last 20 lines, then live until it ends`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := e.client()
			if err != nil {
				return err
			}
			// Ask for the job first: a wrong id or an unreachable server is
			// reported at once instead of being retried as a lost stream.
			job, err := c.Job(ctx, args[0])
			if err != nil {
				return err
			}
			_, _, err = printOutput(ctx, e, c, job.GetJobId(), startLine(from, job), follow)
			if err != nil && ctx.Err() != nil {
				return interrupted
			}
			return err
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "start at this line (negative: that many lines before the end)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the job ends")
	cmd.AddCommand(newLogsRebuildCmd(e))
	return cmd
}
