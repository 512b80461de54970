package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/setting"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/worker"
)

func newWorkerCmd(e *env) *cobra.Command {
	var (
		flags workerConfig
		cfg   = &flags.worker
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Lease jobs from a queue and run them",
		Long: `Run jobs from a queue. The worker long-polls the server for jobs, runs each
command with its output captured line by line, sends the output in batches,
and keeps the job's lease alive with heartbeats.

Output is written to --spool-dir before it is sent and re-sent until the
server confirms it, so a server that is away for a while loses nothing.

Each job runs in an empty directory of its own under --spool-dir (jobs/),
removed when it ends (--keep-job-dirs keeps it); a relative -C of
spool submit is taken inside it. --workdir runs every job in one directory
instead. A job runs as the worker's user, and can read what that user can:
on a machine shared with a server or with people's saved keys, start the
worker as root with --run-as USER, and each command runs as USER, who can
read neither --spool-dir nor files only their owners may read.

SIGTERM or Ctrl-C stops it gracefully: no new jobs, running jobs get --grace
to finish, output is flushed. A second signal stops everything at once
(unsent output stays in --spool-dir for the next start).`,
		Example: `  spool worker
  spool worker -q builds --concurrency 4 --spool-dir /var/lib/spool/worker
  sudo spool worker --run-as spool-job --spool-dir /var/lib/spool/worker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags.given = givenFlags(cmd)
			return runWorker(cmd.Context(), flags, e)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Queue, "queue", "q", "default", "queue to take jobs from")
	f.IntVarP(&cfg.Concurrency, "concurrency", "n", 1, "jobs to run at once")
	f.StringVar(&cfg.SpoolDir, "spool-dir", "./spool-worker", "directory for output not yet sent, checkouts and the jobs' own directories (made 0700: the worker's only)")
	f.StringVar(&cfg.WorkDir, "workdir", "", "run every job without --repo in `DIR`, a relative -C inside it (default: each job in an empty directory of its own); a DIR holding a server's data is refused")
	f.BoolVar(&cfg.KeepJobDirs, "keep-job-dirs", false, "keep each job's own directory (--spool-dir/jobs/JOB-aN) when it ends, to look at what it left")
	f.StringVar(&cfg.RunAs, "run-as", "", "run each command, and its --repo checkout, as `USER` (a name or uid) with its groups, in a directory it owns: it cannot read --spool-dir, a server's data or other users' keys (Linux; the worker runs as root)")
	cfg.UndeliveredMaxAge, cfg.UndeliveredMaxBytes = worker.DefaultUndeliveredMaxAge, worker.DefaultUndeliveredMaxBytes
	f.DurationVar(&cfg.UndeliveredMaxAge, "undelivered-max-age", worker.DefaultUndeliveredMaxAge, "remove output kept in --spool-dir/undelivered (it could not be delivered: the job had moved on) after this long (0: never)")
	f.Var(byteSize{&cfg.UndeliveredMaxBytes}, "undelivered-max-bytes", "keep at most this much undelivered output, removing the oldest first (0: no limit)")
	f.Var(secondsOrDuration{&cfg.Lease}, "lease", "lease length, for example 2m or 120 (seconds), from 2s to 12h; the worker renews it every half lease at most (default: the server's lease)")
	f.DurationVar(&cfg.ShutdownGrace, "grace", 30*time.Second, "on SIGTERM, how long running jobs may go on")
	f.DurationVar(&cfg.KillGrace, "kill-grace", 10*time.Second, "how long a stopped command has between SIGTERM and SIGKILL")
	f.StringVar(&cfg.ID, "id", "", "worker name in logs and job events (default: host-pid)")
	f.StringArrayVar(&cfg.PassEnv, "pass-env", nil, "also pass this environment variable of the worker to jobs (repeatable; NAME or PREFIX*); by default jobs get only "+strings.Join(worker.DefaultPassEnv(), ", "))
	f.StringVar(&flags.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (for example 127.0.0.1:9464)")
	logFlags(f, &flags.logLevel, &flags.logFormat)
	return cmd
}

// workerConfig is what `spool worker` is told on its command line: the
// worker's own settings, and how to log and serve metrics.
type workerConfig struct {
	worker                           worker.Config
	logLevel, logFormat, metricsAddr string
	given                            map[string]bool // the flags given
}

// runWorker runs a worker until ctx ends or a signal stops it.
func runWorker(ctx context.Context, flags workerConfig, e *env) error {
	cfg := flags.worker
	if cfg.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1, got %d", cfg.Concurrency)
	}
	if flags.given["lease"] && cfg.Lease < minLease {
		return fmt.Errorf("--lease %s is too short: the shortest lease is %s (the worker renews it every half lease)", cfg.Lease, minLease)
	}
	cfg.Server = e.server
	cfg.APIKey, _ = e.apiKey()
	cfg.CAFile = e.caFile()
	cfg.Logger = config.Log{Level: flags.logLevel, Format: flags.logFormat}.NewLogger(e.errOut)
	if flags.metricsAddr != "" {
		m, err := serveMetrics(ctx, flags.metricsAddr, cfg.Logger)
		if err != nil {
			return err
		}
		cfg.Meters = m.Provider()
	}
	// 0 on the command line is no bound; in worker.Config, the default.
	for _, b := range []*int64{(*int64)(&cfg.UndeliveredMaxAge), &cfg.UndeliveredMaxBytes} {
		if *b == 0 {
			*b = -1
		}
	}
	w, err := worker.New(cfg)
	if err != nil {
		return setting.Rename(err, workerSettingName)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		cfg.Logger.Info("stopping gracefully; signal again to stop now")
		if _, ok := <-sigs; ok {
			cfg.Logger.Warn("stopping now")
			w.Kill()
		}
	}()
	err = w.Run(ctx)
	if errors.Is(err, spool.ErrUnauthenticated) || errors.Is(err, spool.ErrPermissionDenied) {
		return fmt.Errorf("%w (%s)", err, e.keyHint())
	}
	return setting.Rename(err, workerSettingName)
}

// minLease is the shortest lease the server grants: renewed every second,
// it survives one late renewal.
const minLease = 2 * time.Second

// workerSettingName names worker.Config's fields by their flags.
func workerSettingName(field string) string {
	switch field {
	case "SpoolDir":
		return "--spool-dir"
	case "CheckoutDir":
		return "--spool-dir's checkouts directory"
	case "Lease":
		return "--lease"
	case "WorkDir":
		return "--workdir"
	case "RunAs":
		return "--run-as"
	}
	return field
}

// serveMetrics serves the worker's /metrics on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, log *slog.Logger) (*telemetry.Metrics, error) {
	m, err := telemetry.New()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, setting.Listen("--metrics-addr", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return m, nil
}
