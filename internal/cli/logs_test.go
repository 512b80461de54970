package cli

import (
	"strings"
	"testing"

	"github.com/spool-run/spool/internal/spooltest"
)

func TestLogs(t *testing.T) {
	srv := spooltest.Start(t)
	job := spooltest.RunJob(t, srv.Client(), mixedLog(10000)...)
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
	srv := spooltest.Start(t)
	c := srv.Client()
	submitJob(t, c)
	l := spooltest.LeaseJob(t, c, "")
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
	l = spooltest.LeaseJob(t, c, "")
	l.Begin()
	l.Write(lines[:300]...)
	r = run(srv, "logs", l.JobID())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 1, 300)
}
