package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// TestSubmitRefusals: flags that cannot make a job are refused in the
// command line's words, before anything is sent.
func TestSubmitRefusals(t *testing.T) {
	srv := spooltest.NewServer(t)
	wantRefusal(t, "negative timeout", run(srv, "submit", "--timeout", "-5s", "--", "true"),
		"--timeout -5s is negative: give how long the command may run (10m), or 0 for no limit")
	wantRefusal(t, "ref without repo", run(srv, "submit", "--ref", "main", "--", "make"),
		"--ref main needs --repo: say which repository to check it out of")
	wantRefusal(t, "server address with a path", run(srv, "--server", srv.URL+"/api/v1", "submit", "--", "true"),
		`server address "`+srv.URL+`/api/v1" has more than a host and port: spool's API is at the root of the server; use `+srv.URL)
	if jobs, _, err := srv.Client().JobsPage(context.Background(), client.ListParams{}); err != nil || len(jobs) != 0 {
		t.Fatalf("refused submissions made jobs: %v %v", jobs, err)
	}
}

// TestSubmitFollowWaitsForWorker: submit -f says, once, that the job waits
// for a worker when none has taken it after a while.
func TestSubmitFollowWaitsForWorker(t *testing.T) {
	defer func(d time.Duration) { queuedNotice = d }(queuedNotice)
	queuedNotice = 100 * time.Millisecond
	srv := spooltest.NewServer(t)
	c := srv.Client()
	done := start(srv, "submit", "-f", "-q", "slow", "--", "make", "test")
	var jobID string
	eventually(t, "the job to be queued", func() bool {
		jobs, _, err := c.JobsPage(context.Background(), client.ListParams{Queue: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 1 {
			jobID = jobs[0].ID
		}
		return jobID != ""
	})
	time.Sleep(5 * queuedNotice)
	if _, err := c.Cancel(context.Background(), jobID, "no worker today"); err != nil {
		t.Fatal(err)
	}
	r := await(t, done)
	notice := "spool: waiting for a worker on queue slow; start one with: spool worker -q slow\n"
	if strings.Count(r.stderr, notice) != 1 {
		t.Fatalf("stderr %q does not say once %q", r.stderr, notice)
	}
}

// TestSubmitFollowKilled: a job whose command a signal killed makes
// submit -f exit as a shell would: 128 + the signal's number.
func TestSubmitFollowKilled(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	r := await(t, start(srv, "submit", "-f", "--shell", "echo before; kill -KILL $$"))
	if r.code != 137 || r.stdout != "before\n" || !strings.Contains(r.stderr, "failed: killed by a signal (killed)") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 137 and the reason", r.code, r.stdout, r.stderr)
	}
}

// TestJobsListEmptyAndLimit: an empty listing says so (with its filters)
// instead of printing a bare header, and a limit below 1 is refused.
func TestJobsListEmptyAndLimit(t *testing.T) {
	srv := spooltest.NewServer(t)
	for args, want := range map[string]string{
		"jobs list":           "no jobs\n",
		"jobs list -q builds": "no jobs in queue builds\n",
		"jobs list -q builds --state running,queued": "no jobs in queue builds with state running or queued\n",
		"jobs list --state failed --state cancelled": "no jobs with state failed or cancelled\n",
	} {
		if r := run(srv, strings.Fields(args)...); r.code != 0 || r.stdout != want || r.stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
	wantRefusal(t, "limit 0", run(srv, "jobs", "list", "--limit", "0"),
		"--limit must be at least 1, got 0 (the server returns at most 1000 a page; --cursor goes on)")
}

// TestSubmitStdin: --stdin FILE reaches the job's command on its standard
// input, inline or, larger than a job record holds, uploaded.
func TestSubmitStdin(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(srv, "submit", "-f", "--stdin", in, "--", "wc", "-l")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "3" {
		t.Fatalf("exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 300<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(srv, "submit", "-f", "--stdin", big, "--", "wc", "-c"); r.code != 0 || strings.TrimSpace(r.stdout) != "307200" {
		t.Fatalf("a stdin larger than a job record: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
}

// TestSubmitPTY: submit --pty runs the command on a terminal: followed, its
// colours arrive as it printed them and its stderr comes in its stdout;
// the job says it asked for one. Without --pty the same command sees
// pipes and keeps two streams.
func TestSubmitPTY(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: 2})
	const script = `if [ -t 1 ]; then printf '\033[32mgreen\033[0m\n'; else echo plain; fi; echo oops >&2`
	r := run(srv, "submit", "--pty", "-f", "--shell", script)
	if r.code != 0 || r.stdout != "\x1b[32mgreen\x1b[0m\noops\n" || strings.Contains(r.stderr, "oops") {
		t.Fatalf("--pty: exit %d, stdout %q, stderr %q; want the colour and the error on stdout", r.code, r.stdout, r.stderr)
	}
	r = run(srv, "submit", "-f", "--shell", script)
	if r.code != 0 || r.stdout != "plain\n" || !strings.Contains(r.stderr, "oops\n") {
		t.Fatalf("without --pty: exit %d, stdout %q, stderr %q; want plain, and the error on stderr", r.code, r.stdout, r.stderr)
	}

	r = run(srv, "submit", "--pty", "--json", "-q", "elsewhere", "--", "true")
	var job struct {
		Params struct {
			PTY bool `json:"pty"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &job); r.code != 0 || err != nil || !job.Params.PTY {
		t.Fatalf("--pty --json: exit %d (%v), stdout %s; want params.pty", r.code, err, r.stdout)
	}
}

// TestSubmitFollowRetries: between a failed attempt and its retry, submit
// -f says which attempt failed and how, and when the next starts, not that
// the job waits for a worker (one is running); the last line says how the
// job ended, exit code included.
func TestSubmitFollowRetries(t *testing.T) {
	defer func(d time.Duration) { queuedNotice = d }(queuedNotice)
	// Far shorter than the retries' pauses: the waiting notice would
	// come while the job waits out each.
	queuedNotice = 100 * time.Millisecond
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	r := await(t, start(srv, "submit", "-f", "--retries", "2", "--shell", "echo try; exit 1"))
	if r.code != 1 || r.stdout != "try\ntry\ntry\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 and three tries", r.code, r.stdout, r.stderr)
	}
	// The pauses are 2 s then 4 s from the failure; a slow machine may
	// take a second of them before the notice.
	for _, want := range []string{
		`(?m)^spool: attempt 1 failed \(exit 1\); attempt 2 of 3 in [12]s$`,
		`(?m)^spool: attempt 2 failed \(exit 1\); attempt 3 of 3 in [34]s$`,
		`(?m)^spool: job [0-9a-f-]+ failed \(exit 1\)\n\z`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stderr) {
			t.Errorf("stderr does not match %s:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "waiting") || strings.Count(r.stderr, "failed") != 3 {
		t.Errorf("stderr says more than the two retries and the end:\n%s", r.stderr)
	}
}

// TestSubmitFollowWaitsBehindBusyWorker: a job that waits because the
// queue's worker is busy is said to, not that a worker should be started;
// a paused queue is said to be paused, with the command that resumes it.
func TestSubmitFollowWaitsBehindBusyWorker(t *testing.T) {
	defer func(d time.Duration) { queuedNotice = d }(queuedNotice)
	queuedNotice = 100 * time.Millisecond
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	c := srv.Client()
	ctx := context.Background()
	busy, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the worker to be busy", func() bool {
		j, err := c.Job(ctx, busy.ID)
		return err == nil && j.State == spool.Running
	})
	behind, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut safebuf.Buffer
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: &out, errOut: &errOut}
	done := make(chan error, 1)
	go func() { done <- followJob(ctx, e, c, behind.ID) }()
	notice := "spool: waiting in queue default: its worker is busy (1 job queued)\n"
	eventually(t, "the notice", func() bool { return strings.Contains(errOut.String(), notice) })
	if _, err := c.Cancel(ctx, busy.ID, "make room"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || strings.Count(errOut.String(), "waiting") != 1 {
		t.Fatalf("followJob: %v, stderr %q; want the job to succeed after the one notice", err, errOut.String())
	}

	// A paused queue: the notice says so and how to resume it.
	if _, err := c.PauseQueue(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	paused, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	errOut = safebuf.Buffer{}
	e.errOut = &errOut
	go func() { done <- followJob(ctx, e, c, paused.ID) }()
	notice = "spool: queue default is paused: no worker takes its jobs until spool queues resume default\n"
	eventually(t, "the paused notice", func() bool { return strings.Contains(errOut.String(), notice) })
	if _, err := c.ResumeQueue(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("followJob after the resume: %v", err)
	}
}
