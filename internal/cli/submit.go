package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/jobjson"
)

// submitFlags are the flags that describe a job; `spool submit` and later
// commands that start jobs share them.
type submitFlags struct {
	queue, requestID, workdir, script, repo, ref string
	env, artifacts                               []string
	maxAttempts, retries                         int32
	timeout                                      time.Duration
}

func (f *submitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.queue, "queue", "q", "", `queue to submit to (default "default")`)
	fl.StringVar(&f.requestID, "request-id", "", "idempotency key: submitting again with it returns the first job")
	fl.Int32Var(&f.retries, "retries", 0, "run a failing command (non-zero exit, timeout) again up to this many times, with backoff")
	fl.Int32Var(&f.maxAttempts, "max-attempts", 0, "how often the job may lose its worker (died, vanished) before it fails (default: the server's, 3); not used up by --retries")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set an environment variable, KEY=VALUE (repeatable)")
	fl.StringVarP(&f.workdir, "workdir", "C", "", "directory to run in on the worker: an absolute path, or one taken inside the --repo checkout, the worker's --workdir, or else the job's own directory, which starts empty (default: that directory)")
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the command after this long (e.g. 10m)")
	fl.StringVarP(&f.script, "shell", "c", "", "run this script with /bin/sh -c instead of a command")
	fl.StringVar(&f.repo, "repo", "", "clone this git repository and run in it")
	fl.StringVar(&f.ref, "ref", "", "branch, tag or commit of --repo to check out")
	fl.StringArrayVar(&f.artifacts, "artifacts", nil, "keep the files this glob matches once the command ends, whatever its exit code: relative to where it ran, ** for any depth, e.g. 'dist/**' (repeatable; see spool artifacts list)")
}

// submission builds the job from the flags and the command's arguments.
func (f *submitFlags) submission(args []string) (client.SubmitParams, error) {
	s := client.SubmitParams{Queue: f.queue, Argv: args, Script: f.script, WorkingDir: f.workdir, Timeout: f.timeout,
		Repository: f.repo, Ref: f.ref, RequestID: f.requestID, MaxAttempts: int(f.maxAttempts), Retries: int(f.retries),
		Artifacts: f.artifacts}
	switch {
	case len(args) == 0 && f.script == "":
		return s, errors.New("say what to run: spool submit -- make test (or --shell 'make test && make lint')")
	case len(args) > 0 && f.script != "":
		return s, errors.New("give either a command or --shell, not both")
	case f.timeout < 0:
		return s, fmt.Errorf("--timeout %s is negative: give how long the command may run (10m), or 0 for no limit", f.timeout)
	case f.ref != "" && f.repo == "":
		return s, fmt.Errorf("--ref %s needs --repo: say which repository to check it out of", f.ref)
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return s, fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	return s, nil
}

func newSubmitCmd(e *env) *cobra.Command {
	var cfg submitConfig
	cmd := &cobra.Command{
		Use:   "submit [flags] -- COMMAND [ARG...]",
		Short: "Submit a command to a queue and print the job's id",
		Example: `  spool submit -- make test
  spool submit -q builds -e GOFLAGS=-race -- go test ./...
  spool submit --shell 'seq 1 10000'
  JOB=$(spool submit -- ./deploy.sh) && spool jobs get "$JOB"
  spool submit -f -- make test     # watch it run; exit as it exits
  spool submit --retries 2 -- ./flaky-test.sh
  spool submit --pty -f -- cargo test   # in colour, as on a terminal
  spool submit --secret DEPLOY_TOKEN -- ./deploy.sh   # $DEPLOY_TOKEN, never shown
  spool submit --flush-interval 200ms -f -- ./build.sh   # output seen within 200ms
  spool submit --batch jobs.jsonl   # a job a line: {"argv": ["./resize.sh", "a.png"], "queue": "images"}
  spool submit --in 10m -- ./cleanup.sh          # scheduled: queued in ten minutes
  spool submit --at 2026-11-28T02:00:00Z -- ./backup.sh
  spool submit --priority 1 -q builds -- make release   # ahead of the queue's priority-2 jobs
  DEPLOY=$(spool submit --after "$BUILD" -- ./deploy.sh)   # waits for $BUILD to succeed
  spool submit --notify https://ci.example.com/hooks/spool -- make test
  spool submit --artifacts 'dist/**' --artifacts report.html -- make dist

Two budgets: --retries runs a command that fails (non-zero exit, timeout)
again, after 2 s, 4 s, 8 s...; --max-attempts bounds how often a job may
lose its worker (a worker killed or cut off) and be redelivered. A worker
that stops gracefully hands its jobs back without using either.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.argv = args
			if cfg.batch != "" {
				return runSubmitBatch(cmd.Context(), cfg, e, cmd.Flags().Changed)
			}
			return runSubmit(cmd.Context(), cfg, e)
		},
	}
	cfg.spec.register(cmd)
	cfg.extra.register(cmd)
	cfg.when.register(cmd)
	// Tab offers the jobs a new one may wait for: those not ended yet.
	_ = cmd.RegisterFlagCompletionFunc("after", completeJobArg(e, true, activeStates...))
	cmd.Flags().StringVar(&cfg.batch, "batch", "", batchHelp)
	cfg.secrets.register(cmd)
	cmd.Flags().StringVar(&cfg.stdinFile, "stdin", "", `give the command this file on its standard input ("-": what spool submit reads); what is too large for the job record (256 KiB with the command and environment) is uploaded to the server first, up to its jobs.max_stdin_bytes`)
	cmd.Flags().BoolVar(&cfg.pty, "pty", false, "run the command on a pseudo-terminal, so tools that colour only on a terminal keep their colours; its stdout and stderr are then one stream, recorded as stdout (--stdin still comes from its file, as CMD < FILE would at a terminal)")
	cfg.batching.register(cmd)
	cmd.Flags().BoolVar(&cfg.asJSON, "json", false, "print the whole job as JSON instead of its id")
	cmd.Flags().BoolVarP(&cfg.follow, "follow", "f", false, "stream the job's output until it ends, then exit with its exit status (128+N when signal N killed it, as a shell does)")
	cmd.MarkFlagsMutuallyExclusive("json", "follow")
	// Flags end at the command: `spool submit ls -la` runs `ls -la`.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// submitConfig is what `spool submit` is told on its command line.
type submitConfig struct {
	argv           []string
	spec           submitFlags
	extra          jobExtraFlags
	when           whenFlags
	secrets        secretFlags
	asJSON, follow bool
	pty            bool
	stdinFile      string
	batching       batchingFlags
	// batch is the file of --batch: jobs, one a line.
	batch string
}

func runSubmit(ctx context.Context, cfg submitConfig, e *env) error {
	s, err := cfg.spec.submission(cfg.argv)
	if err != nil {
		return err
	}
	stdin, closeStdin, err := openStdinFile(e, cfg.stdinFile)
	if err != nil {
		return err
	}
	defer closeStdin()
	s.StdinFrom = stdin
	if s.Secrets, err = cfg.secrets.secrets(os.LookupEnv); err != nil {
		return err
	}
	s.PTY = cfg.pty
	if s.Batching, err = cfg.batching.batching(); err != nil {
		return err
	}
	if err := cfg.extra.apply(&s); err != nil {
		return err
	}
	if err := cfg.when.apply(&s, time.Now(), func(msg string) { fmt.Fprintln(e.errOut, "spool: "+msg) }); err != nil {
		return err
	}
	// The client tries a submit again when it finds the server
	// away; a request id makes the repeat find the job the first
	// try made. The user's, or one of our own.
	ownID := s.RequestID == ""
	if ownID {
		s.RequestID = newRequestID()
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	job, dedup, err := c.Submit(ctx, s)
	if err != nil {
		return err
	}
	if dedup && !ownID {
		fmt.Fprintf(e.errOut, "spool: request id %q was used before; this is its job (%s)\n", s.RequestID, job.State.String())
	}
	if cfg.follow {
		// stdout is the job's own output; its id goes with the
		// other messages.
		fmt.Fprintf(e.errOut, "spool: job %s; following its output (Ctrl-C stops following, not the job)\n", job.ID)
		if job.State == spool.Scheduled {
			fmt.Fprintf(e.errOut, "spool: job %s is scheduled: it waits %s\n", job.ID, waitsFor(job, time.Now()))
		}
		return followJob(ctx, e, c, job.ID)
	}
	if cfg.asJSON {
		return printJSON(e.out, jobjson.View(job))
	}
	fmt.Fprintln(e.out, job.ID)
	return nil
}

// openStdinFile opens what --stdin names ("": nothing, "-": spool's own
// stdin). The client reads it as it submits: inline when small, streamed
// to the server when not, so a large file is never held in memory.
func openStdinFile(e *env, name string) (io.Reader, func(), error) {
	switch name {
	case "":
		return nil, func() {}, nil
	case "-":
		return e.in, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, func() {}, fmt.Errorf("--stdin: %w", err)
	}
	return f, func() { f.Close() }, nil
}
