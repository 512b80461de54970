package worker_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// jobUser is the user these tests run jobs as: one with nothing of its
// own, made by scripts/test-deps.sh.
const jobUser = "spool-job-test"

// needJobUser fails the test unless it can start commands as jobUser:
// running as root, with the user made.
func needJobUser(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test runs commands as another user, which needs root: run it (make test) as root")
	}
	if _, err := user.Lookup(jobUser); err != nil {
		t.Fatalf("user %s: %v: make test creates it (scripts/test-deps.sh), or: useradd --system --no-create-home --shell /usr/sbin/nologin %s", jobUser, err, jobUser)
	}
}

// sharedSpoolDir is a spool directory in a directory every user may enter,
// as /var/lib/spool is (t.TempDir's parent is its owner's only).
func sharedSpoolDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "spool-runas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "worker")
}

// TestRunAsRefusals: RunAs is refused, with what to do, for root, for a
// user the machine does not have, and for a spool directory the user
// could not reach its jobs' directories through.
func TestRunAsRefusals(t *testing.T) {
	t.Parallel()
	needJobUser(t)
	srv := spooltest.NewServer(t)
	hidden := filepath.Join(t.TempDir(), "worker")
	for _, tc := range []struct {
		runAs, spoolDir, says string
	}{
		{"root", t.TempDir(), "RunAs root is root: jobs would have everything the worker has"},
		{"0", t.TempDir(), "RunAs 0 is root"},
		{"no-such-user-of-spool", t.TempDir(), "RunAs no-such-user-of-spool is not a user of this machine: create one for jobs (useradd"},
		{jobUser, hidden, "SpoolDir " + hidden + " cannot be reached by user " + jobUser + ", who runs the jobs: " + filepath.Dir(filepath.Dir(hidden)) + " has mode 0700"},
	} {
		_, err := worker.New(worker.Config{Server: srv.URL, SpoolDir: tc.spoolDir, RunAs: tc.runAs})
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("RunAs %s, SpoolDir %s: %v; want it refused saying %q", tc.runAs, tc.spoolDir, err, tc.says)
		}
	}
}

// TestRunAsScatter: a scatter's batch run as another user reads its input
// from $SPOOL_BATCH_FILE and leaves its result in $SPOOL_RESULT; a result
// that is a link to a file of the worker's (which the worker, root, could
// read) is refused, not sent.
func TestRunAsScatter(t *testing.T) {
	t.Parallel()
	needJobUser(t)
	e := newEnv(t, 1, func(c *worker.Config) { c.SpoolDir, c.RunAs = sharedSpoolDir(t), jobUser })
	run := func(script string) *spool.Job {
		sc, err := e.c.StartScatter(t.Context(), client.ScatterParams{Job: client.SubmitParams{Script: script},
			Batches: []json.RawMessage{json.RawMessage(`["x"]`)}})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			batches, _, err := e.c.ScatterBatches(t.Context(), sc.ID, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(batches) == 1 && batches[0].Job != nil {
				return e.wait(t, batches[0].Job.ID)
			}
		}
		t.Fatal("the scatter's batch never got a job")
		return nil
	}
	j := run(`set -e; item=$(sed 's/.*"items":\["\([a-z]*\)".*/\1/' "$SPOOL_BATCH_FILE"); printf '{"user":"%s","item":"%s"}' "$(id -un)" "$item" > "$SPOOL_RESULT"`)
	if j.State != spool.Succeeded || string(j.Result.Output) != `{"user":"`+jobUser+`","item":"x"}` {
		t.Fatalf("a batch as %s: %s, result %q, error %q", jobUser, j.State, j.Result.Output, j.Result.Error)
	}
	j = run(`ln -s /etc/shadow "$SPOOL_RESULT"`)
	if j.State != spool.Failed || j.Result.Output != nil || !strings.Contains(j.Result.Error, "$SPOOL_RESULT: it is a symbolic link") {
		t.Fatalf("a result linked to /etc/shadow: %s, result %q, error %q", j.State, j.Result.Output, j.Result.Error)
	}
}

// TestRunAsTerminal: a job on a pseudo-terminal, run as another user, owns
// its terminal, and its USER, LOGNAME and HOME are that user's (HOME its
// own directory, the user having no home).
func TestRunAsTerminal(t *testing.T) {
	t.Parallel()
	needJobUser(t)
	spoolDir := sharedSpoolDir(t)
	e := newEnv(t, 1, func(c *worker.Config) { c.SpoolDir, c.RunAs = spoolDir, jobUser })
	s := sh(`id -un; stat -c %U "$(tty)"; echo "$USER $LOGNAME $HOME"`)
	s.PTY = true
	id := e.submit(t, s)
	if j := e.wait(t, id); j.State != spool.Succeeded {
		t.Fatalf("job: %v", j.Result)
	}
	out, _ := output(e.logOf(t, id))
	own := filepath.Join(spoolDir, "jobs", id+"-a1")
	if want := jobUser + "\n" + jobUser + "\n" + jobUser + " " + jobUser + " " + own + "\n"; string(out) != want {
		t.Fatalf("the job printed %q, want %q", out, want)
	}
}
