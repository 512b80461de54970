package cli

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/demo"
)

func newDemoCmd(e *env) *cobra.Command {
	var cfg demoConfig
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
			return runDemo(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().IntVar(&cfg.lines, "lines", 10000, "lines the job prints")
	cmd.Flags().IntVar(&cfg.from, "from", 9000, "line the replay starts at")
	return cmd
}

// demoConfig is what `spool demo` is told on its command line.
type demoConfig struct {
	lines, from int
}

func runDemo(ctx context.Context, cfg demoConfig, e *env) error {
	_, err := demo.Run(ctx, demo.Options{
		Lines: cfg.lines, ReplayFrom: cfg.from, Out: e.out, Live: e.outTerm.TTY,
		Log: slog.New(slog.NewTextHandler(e.errOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	return err
}
