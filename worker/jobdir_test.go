package worker_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestJobDirectories: a job that names no directory runs in an empty
// directory of its own under the spool directory (not the worker's
// working directory), removed when it ends, or kept with KeepJobDirs; a
// relative working directory is taken inside it, and one that is not
// there is said to be so, with what to do; with WorkDir, jobs run there
// as before.
func TestJobDirectories(t *testing.T) {
	t.Parallel()
	const script = `pwd; ls -A | wc -l; echo left > made-here`
	for _, keep := range []bool{false, true} {
		spoolDir := t.TempDir()
		e := newEnv(t, 1, func(c *worker.Config) { c.SpoolDir, c.KeepJobDirs = spoolDir, keep })
		id := e.submit(t, sh(script))
		if j := e.wait(t, id); j.State != spool.Succeeded {
			t.Fatalf("job: %v", j.Result)
		}
		out, _ := output(e.logOf(t, id))
		own := filepath.Join(spoolDir, "jobs", id+"-a1")
		if string(out) != own+"\n0\n" {
			t.Fatalf("the job printed %q; want it run in %s, empty", out, own)
		}
		left, err := os.ReadFile(filepath.Join(own, "made-here"))
		switch {
		case keep && (err != nil || string(left) != "left\n"):
			t.Fatalf("KeepJobDirs: the job's directory is not kept with what it left: %q, %v", left, err)
		case !keep && !errors.Is(err, os.ErrNotExist):
			t.Fatalf("the job's directory is still there once it ended (%v)", err)
		}
	}

	e := newEnv(t, 1, nil)
	j := e.wait(t, e.submit(t, client.SubmitParams{Argv: []string{"pwd"}, WorkingDir: "sub"}))
	if got := j.Result.Error; !strings.Contains(got, `the working directory "sub" is taken inside the job's own directory`) || !strings.Contains(got, "--workdir") {
		t.Fatalf("a relative working directory: %q", got)
	}

	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, 1, func(c *worker.Config) { c.WorkDir = work })
	for wd, want := range map[string]string{"": work, "sub": filepath.Join(work, "sub")} {
		id := e.submit(t, client.SubmitParams{Argv: []string{"pwd"}, WorkingDir: wd})
		e.wait(t, id)
		if out, _ := output(e.logOf(t, id)); string(out) != want+"\n" {
			t.Errorf("WorkDir %s, working directory %q: ran in %q, want %s", work, wd, out, want)
		}
	}
}

// TestJobDirectoriesReused: whether or not a job's directory is kept for
// the next (see TestSpareDirs), each job starts in an empty directory of
// mode 0700 under its own name, and none is left once the worker stops.
func TestJobDirectoriesReused(t *testing.T) {
	t.Parallel()
	spoolDir := t.TempDir()
	e := newEnv(t, 1, func(c *worker.Config) { c.SpoolDir = spoolDir })
	run := func(script string) string {
		t.Helper()
		id := e.submit(t, sh(script))
		if j := e.wait(t, id); j.State != spool.Succeeded {
			t.Fatalf("job %q: %v", script, j.Result)
		}
		out, _ := output(e.logOf(t, id))
		return strings.ReplaceAll(string(out), filepath.Join(spoolDir, "jobs", id+"-a1"), "OWN")
	}
	const look = `pwd; stat -c %a .; ls -A | wc -l`
	const empty = "OWN\n700\n0\n"
	for i, step := range []struct{ script, want string }{
		{"chmod 755 .", ""},
		{look, empty},                  // not in the directory made 0755
		{look + "; touch left", empty}, // in the previous job's, empty
		{look, empty},                  // not in the one left with a file
	} {
		if got := run(step.script); got != step.want {
			t.Fatalf("job %d (%s) printed %q, want %q", i, step.script, got, step.want)
		}
	}
	e.w.Stop()
	left, err := os.ReadDir(filepath.Join(spoolDir, "jobs"))
	if err != nil || len(left) != 0 {
		t.Fatalf("the stopped worker left %v in its jobs' directory (%v)", left, err)
	}
}

// TestWorkDirWithServerDataIsRefused: a WorkDir that holds a server's data
// (any of its keys or its database) is refused as the worker starts: every
// job would run beside the server's keys.
func TestWorkDirWithServerDataIsRefused(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	for _, name := range []string{"admin.key", "token.key", "spool.db"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := worker.New(worker.Config{Server: srv.URL, SpoolDir: t.TempDir(), WorkDir: dir})
		if !errors.Is(err, spool.ErrInvalidArgument) || !strings.Contains(err.Error(), "WorkDir "+dir+" holds a spool server's data ("+filepath.Join(dir, name)+")") {
			t.Fatalf("a WorkDir holding %s: %v", name, err)
		}
	}
}

// TestWarnsOnceOfReadableSecrets: a worker whose jobs (its own user) could
// read a server's keys or the command line's saved credentials says so
// once, in one line naming each file and the fix, however many jobs it
// runs; one with nothing of the kind around says nothing.
func TestWarnsOnceOfReadableSecrets(t *testing.T) {
	data, config := t.TempDir(), t.TempDir()
	t.Setenv("SPOOL_SERVER_DATA_DIR", data)
	t.Setenv("XDG_CONFIG_HOME", config)
	srv := spooltest.NewServer(t)
	const warning = "jobs run as this worker's user and can read a spool server's keys or data, or saved API keys"
	run := func() string {
		var logs safebuf.Buffer
		w := spooltest.NewWorker(t, srv, worker.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for range 2 {
			j, _, err := srv.Client().Submit(t.Context(), client.SubmitParams{Argv: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			srv.WaitJob(t, j.ID)
		}
		w.Stop()
		return logs.String()
	}
	if logs := run(); strings.Contains(logs, warning) {
		t.Fatalf("a warning with nothing to read:\n%s", logs)
	}

	adminKey := filepath.Join(data, "admin.key")
	creds := filepath.Join(config, "spool", "credentials.json")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{adminKey, creds} {
		if err := os.WriteFile(f, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logs := run()
	if n := strings.Count(logs, warning); n != 1 {
		t.Fatalf("the warning was said %d times, want once:\n%s", n, logs)
	}
	line := logs[strings.Index(logs, warning):]
	line = line[:strings.IndexByte(line, '\n')]
	for _, want := range []string{"--run-as USER", "docs/security.md", adminKey, creds} {
		if !strings.Contains(line, want) {
			t.Errorf("the warning does not name %s: %s", want, line)
		}
	}
}
