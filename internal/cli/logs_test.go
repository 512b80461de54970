package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

func TestLogs(t *testing.T) {
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, mixedLog(10000)...)
	id := job.GetJobId()

	r := run(srv, "logs", "--from", "9000", id)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 9000, 10000)
	if !strings.HasPrefix(r.stderr, "9000\n9100\n") || !strings.HasPrefix(r.stdout, "9001\n") {
		t.Fatalf("from line 9000: stdout %q, stderr %q", head(r.stdout), head(r.stderr))
	}

	wantOutput(t, run(srv, "logs", id), 1, 10000)
	wantOutput(t, run(srv, "logs", "--from=-150", id), 9851, 10000)
	wantOutput(t, run(srv, "logs", "--from", "-150", id), 9851, 10000)

	r = run(srv, "logs", "no-such-job")
	if r.code != 1 || !strings.Contains(r.stderr, `job "no-such-job" not found`) || r.stdout != "" {
		t.Fatalf("unknown job: %+v", r)
	}
}

// TestLogsFollow: logs -f prints what is stored, then the rest live, and
// exits when the job ends.
func TestLogsFollow(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	submitJob(t, c)
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	lines := mixedLog(1000)
	l.Write(lines[:300]...)
	done := start(srv, "logs", "-f", "--from", "250", l.JobID())
	for i := 300; i < 1000; i += 175 {
		l.Write(lines[i:min(i+175, 1000)]...)
	}
	l.End(0)
	r := await(t, done)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 250, 1000)

	// Without -f, a running job's stored output is printed and logs exits.
	submitJob(t, c)
	l = spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(lines[:300]...)
	r = run(srv, "logs", l.JobID())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 1, 300)
}

// TestLogsMarkAttempts: the output of each attempt after the first (a
// retry) is introduced on stderr, so the log shows where it begins.
func TestLogsMarkAttempts(t *testing.T) {
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(context.Background(), client.Submission{Script: "flaky", Retries: 1}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Line{Text: "first try"})
	l.End(1)
	l = spooltest.LeaseJob(t, srv, "") // after the retry's backoff
	l.Begin()
	l.Write(spooltest.Line{Text: "second try"})
	l.End(0)
	r := run(srv, "logs", l.JobID())
	if r.code != 0 || r.stdout != "first try\nsecond try\n" || r.stderr != "spool: ── attempt 2 ──\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
