package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/spooltest"
)

// TestSubmitFollow: submit -f streams the job's output as it is written and
// exits with the job's exit code.
func TestSubmitFollow(t *testing.T) {
	srv := spooltest.NewServer(t)
	done := start(srv, "submit", "-f", "--", "make", "test")
	l := spooltest.LeaseJob(t, srv, "")
	if got := l.Job().Params.Argv; strings.Join(got, " ") != "make test" {
		t.Fatalf("submitted %q", got)
	}
	l.Begin()
	lines := mixedLog(700)
	l.Write(lines[:250]...)
	l.Write(lines[250:]...)
	l.Write(spooltest.Line{Text: "no newline at the end", Partial: true})
	l.End(3)
	r := await(t, done)
	if r.code != 3 {
		t.Fatalf("exit %d, want the job's 3; stderr: %s", r.code, r.stderr)
	}
	out, errOut := split(lines)
	if r.stdout != out+"no newline at the end" {
		t.Fatalf("stdout: %q…", head(r.stdout))
	}
	intro := "spool: job " + l.JobID() + "; following its output (Ctrl-C stops following, not the job)\n"
	closing := "spool: job " + l.JobID() + " failed (exit 3)\n"
	if r.stderr != intro+errOut+closing {
		t.Fatalf("stderr: %q, want %q ending %q", head(r.stderr), head(intro+errOut), closing)
	}
}

// TestSubmitFollowNoExitCode: a job that ends without an exit code (here,
// cancelled before it ran) makes submit -f say why and exit 1.
func TestSubmitFollowNoExitCode(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	done := start(srv, "submit", "--follow", "--queue", "slow", "--", "sleep", "100")
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
	if _, err := c.Cancel(context.Background(), jobID, "not today"); err != nil {
		t.Fatal(err)
	}
	r := await(t, done)
	if r.code != 1 || !strings.Contains(r.stderr, "spool: job "+jobID+" cancelled: ") || !strings.Contains(r.stderr, "not today") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestFollowInterrupted: Ctrl-C stops following, leaves the job running and
// says how to pick it up again.
func TestFollowInterrupted(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	job := submitJob(t, c)
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Seq(1, 10)...)

	var out, errOut safebuf.Buffer
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: &out, errOut: &errOut}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- followJob(ctx, e, c, job.ID) }()
	eventually(t, "the stored lines", func() bool { return strings.HasSuffix(out.String(), "\n10\n") })
	cancel() // what Main's signal handler does on Ctrl-C
	err := <-done
	if err != interrupted {
		t.Fatalf("got %v, want exit status 130", err)
	}
	if want := "still running: spool logs -f " + job.ID + "\n"; !strings.HasSuffix(errOut.String(), want) {
		t.Fatalf("stderr %q does not end with %q", errOut.String(), want)
	}
	if j, err := c.Job(context.Background(), job.ID); err != nil || j.State != spool.Running {
		t.Fatalf("after Ctrl-C the job is %v (%v)", j.State, err)
	}
}
