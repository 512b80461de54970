// Package cli is the spool command line: one cobra command per file. Each
// command is a config struct, filled from its flags and arguments, and a
// run function that does the work with it (tests call that directly); the
// cobra command only binds the flags and calls it. Drawing on a terminal
// is internal/termview's.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/termview"
)

// Version is set at build time with -ldflags "-X …/cli.Version=v1.2.3";
// without it, spool version says what the Go toolchain recorded.
var Version = "dev"

// exitError ends the program with a status and no further message (the
// command has already said what happened, or the status is the job's).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// env is what every command's run function gets beside its own config:
// where the server is, the key to show it, and the streams, with what
// kind of screen each output is (tests set these to draw as on one).
type env struct {
	server  string
	creds   credentials
	in      io.Reader
	out     io.Writer
	errOut  io.Writer
	outTerm termview.Info
	errTerm termview.Info
}

// client is the client of commands: a call that finds the server (or its
// store) away is tried again for up to callRetry, and the person is told
// once.
func (e *env) client() (*client.Client, error) {
	var told sync.Once
	retry := client.Retry{For: callRetry, OnRetry: func(err error, _ time.Duration) {
		told.Do(func() {
			fmt.Fprintf(e.errOut, "spool: the server at %s did not serve the call (%s); trying again for up to %s\n", e.server, reason(err), callRetry)
		})
	}}
	cfg := e.clientConfig()
	cfg.Retry = retry
	return client.New(cfg)
}

// clientNow is a client whose calls are not tried again: for answers
// wanted at once or not at all (Tab completion).
func (e *env) clientNow() (*client.Client, error) { return client.New(e.clientConfig()) }

// callRetry is how long a command keeps trying a call that finds the
// server or its store away (a restart, a database failing over), before
// it reports that it cannot reach it.
const callRetry = 10 * time.Second

// Main runs the command line and returns the process's exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks commands to finish gracefully; once it has
	// arrived, the default handling is back, so a second one ends spool.
	go func() {
		<-ctx.Done()
		stop()
	}()
	e := &env{in: stdin, out: stdout, errOut: stderr, outTerm: termview.Detect(stdout), errTerm: termview.Detect(stderr)}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	fmt.Fprintf(stderr, "spool: %s\n", explain(err, e))
	return 1
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "spool",
		Short: "A job runner with cheap, replayable, live output",
		Long: `spool runs commands on workers and keeps every line they print.

Submit a command to a queue, let a worker run it, and watch its output live
or replay it later from any line: in the terminal, over HTTP, in a browser.
Output is stored in batches, so a 10,000-line job costs about 200 writes.

Start here:
  spool server                     # the server, with an embedded database
  spool submit -- make test        # prints the new job's id
  spool jobs list                  # what is queued, running and done`,
		Version:       versionText(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints the line spool version prints.
	root.SetVersionTemplate("spool {{.Version}}\n")
	root.PersistentFlags().StringVar(&e.server, "server", client.URLFromEnv(), "spool server address (or set SPOOL_SERVER)")
	root.PersistentFlags().StringVar(&e.creds.key, "api-key", "", "API key to send (better: spool login, or SPOOL_API_KEY, which other users cannot see in ps); without one, the key spool login stored for the server is sent, or on the server's machine the admin key in ./spool-data/admin.key")
	root.PersistentFlags().StringVar(&e.creds.ca, "ca", "", "CA certificate (PEM) to trust for an https:// server with a private CA (or set SPOOL_CA)")
	root.AddCommand(newKeysCmd(e), newServerCmd(e), newWorkerCmd(e), newSubmitCmd(e), newScatterCmd(e), newJobsCmd(e), newScattersCmd(e), newConsumeCmd(e), newIngestCmd(e), newLogsCmd(e), newMonitorCmd(e), newDemoCmd(e), newDevCmd(e), newAWSCmd(e),
		newQueuesCmd(e), newSchedulesCmd(e), newVersionCmd(e), newCompletionCmd(e), newLoginCmd(e), newLogoutCmd(e), newArtifactCmd(e))
	tidyCommands(root)
	return root
}
