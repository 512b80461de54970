package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/demo"
)

func newDemoCmd(e *env) *cobra.Command {
	var lines, from int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "See spool work: run a 10,000-line job, follow it, replay it, count what batching saved",
		Long: `Start a server (on the embedded SQLite store, in a temporary directory)
and a worker in this process, run a job that prints 10,000 lines, follow it
live, replay it from line 9,000, and print the figures: items stored against
one per line, items read for the replay, bytes stored per byte of output.
Nothing is left behind.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := demo.Run(cmd.Context(), demo.Options{
				Lines: lines, ReplayFrom: from, Out: e.out, Live: e.outTerm.TTY,
				Log: slog.New(slog.NewTextHandler(e.errOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			return err
		},
	}
	cmd.Flags().IntVar(&lines, "lines", 10000, "lines the job prints")
	cmd.Flags().IntVar(&from, "from", 9000, "line the replay starts at")
	return cmd
}
