package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestJobsListNeverStarted: a job no worker ever took (queued, cancelled
// before a worker took it, recorded as rejected) shows "-" as its start
// and its elapsed time, not a time long ago; a job that ran shows both.
func TestJobsListNeverStarted(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	submit := func(p client.SubmitParams) string {
		t.Helper()
		p.Queue = "never"
		j, _, err := c.Submit(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	queued := submit(client.SubmitParams{Argv: []string{"make"}})
	cancelled := submit(client.SubmitParams{Argv: []string{"make"}})
	if _, err := c.Cancel(ctx, cancelled, "not needed"); err != nil {
		t.Fatal(err)
	}
	rejected := submit(client.SubmitParams{RejectReason: "message 3 cannot become a job: no command"})
	ran := spooltest.RunJob(t, srv)

	r := run(srv, "jobs", "list")
	if r.code != 0 {
		t.Fatalf("jobs list: %+v", r)
	}
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	header := strings.Fields(lines[0])
	started, elapsed := index(header, "STARTED"), index(header, "ELAPSED")
	if started < 0 || elapsed < 0 {
		t.Fatalf("header %q lacks STARTED or ELAPSED", lines[0])
	}
	for _, l := range lines[1:] {
		// The header's "JOB ID" is two fields, as a row's CREATED
		// ("0s ago") is: the columns after them line up.
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	for _, id := range []string{queued, cancelled, rejected} {
		f := rows[id]
		if f == nil {
			t.Fatalf("job %s is not listed:\n%s", id, r.stdout)
		}
		if f[started] != "-" || f[elapsed] != "-" {
			t.Errorf("job %s never started, but its row says started %q, elapsed %q:\n%s", id, f[started], f[elapsed], r.stdout)
		}
	}
	if f := rows[ran.ID]; len(f) <= started+1 || f[started] == "-" || f[started+1] != "ago" {
		t.Errorf("the job that ran shows no start: %q\n%s", f, r.stdout)
	}
}

func index(fields []string, name string) int {
	for i, f := range fields {
		if f == name {
			return i
		}
	}
	return -1
}
