package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/termview"
	"github.com/spool-run/spool/spooltest"
)

// batchFile writes lines to a file and returns its path.
func batchFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSubmitBatch: every line is a job or a reported failure, in the
// file's order; a bad line stops nothing; submitting the file again finds
// its jobs instead of making them twice.
func TestSubmitBatch(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	file := batchFile(t,
		`{"argv": ["echo", "one"]}`,
		`{"argv": ["echo", "one"]}`,
		``,
		`{"shell": "echo three", "queue": "other", "timeout": "90s"}`,
		`{"argv": ["echo", "four"`,
		`{"dir": "/tmp"}`,
		`{"argv": ["echo", "six"], "request_id": "mine-6"}`,
		`{"argv": ["echo", "seven"], "queue": "no spaces"}`,
	)
	var first map[int]string
	for round := range 2 {
		r := run(srv, "submit", "-q", "builds", "--batch", file)
		if r.code != 1 {
			t.Fatalf("round %d: exit %d, want 1 (three lines failed); stderr:\n%s", round, r.code, r.stderr)
		}
		ids := map[int]string{}
		for line := range strings.Lines(r.stdout) {
			var n int
			var id string
			if _, err := fmt.Sscanf(line, "%d\t%s", &n, &id); err != nil {
				t.Fatalf("round %d: stdout line %q: %v", round, line, err)
			}
			ids[n] = id
			if round == 1 && !strings.HasSuffix(line, "\tsubmitted before\n") {
				t.Errorf("round 1: %q does not say the job was submitted before", line)
			}
		}
		if len(ids) != 4 || ids[1] == "" || ids[2] == "" || ids[4] == "" || ids[7] == "" || ids[1] == ids[2] {
			t.Fatalf("round %d: jobs by line %v, want 4 jobs of lines 1, 2, 4 and 7", round, ids)
		}
		for _, want := range []string{
			"spool: line 5: not a job spec:",
			`spool: line 6: not a job spec: say what to run with "argv"`,
			"spool: line 8: queue",
		} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("round %d: stderr does not say %q:\n%s", round, want, r.stderr)
			}
		}
		summary := "spool: 4 jobs submitted; 3 lines failed\n"
		if round == 1 {
			summary = "spool: 4 jobs submitted (4 of them had been before); 3 lines failed\n"
		}
		if !strings.HasSuffix(r.stderr, summary) {
			t.Errorf("round %d: stderr does not end with %q:\n%s", round, summary, r.stderr)
		}
		if round == 0 {
			first = ids
		} else if fmt.Sprint(ids) != fmt.Sprint(first) {
			t.Errorf("again, jobs %v; first %v", ids, first)
		}
	}
	jobs, _, err := c.JobsPage(ctx, client.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 {
		t.Fatalf("two runs of the file made %d jobs, want 4", len(jobs))
	}
	three, err := c.Job(ctx, first[4])
	if err != nil {
		t.Fatal(err)
	}
	if three.Queue != "other" || three.Params.Script != "echo three" || three.Params.Timeout.Seconds() != 90 {
		t.Errorf("line 4's job: %+v", three)
	}
	six, err := c.Job(ctx, first[7])
	if err != nil {
		t.Fatal(err)
	}
	if six.RequestID != "mine-6" || six.Queue != "builds" {
		t.Errorf("line 7's job: request id %q, queue %q; want mine-6 in builds", six.RequestID, six.Queue)
	}

	// A new --request-id submits the file anew.
	r := run(srv, "submit", "-q", "builds", "--request-id", "again", "--batch", file)
	if !strings.HasSuffix(r.stderr, "spool: 4 jobs submitted (1 of them had been before); 3 lines failed\n") {
		t.Errorf("with a new --request-id: %s", r.stderr)
	}
}

// TestSubmitBatchFromStdin: "-" reads the jobs from stdin, more than a
// call takes; --json reports each line as an object.
func TestSubmitBatchFromStdin(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	var in strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&in, `{"argv": ["echo", "%d"], "queue": "many"}`+"\n", i)
	}
	r := runWith(strings.NewReader(in.String()), "--server", srv.URL, "--api-key", srv.AdminKey, "submit", "--json", "--batch", "-")
	if r.code != 0 || r.stderr != "spool: 2500 jobs submitted\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	n := 0
	for line := range strings.Lines(r.stdout) {
		n++
		var out struct {
			Line int
			Job  struct {
				ID     string `json:"id"`
				Params struct{ Argv []string }
			}
		}
		if err := json.Unmarshal([]byte(line), &out); err != nil || out.Line != n || out.Job.Params.Argv[1] != fmt.Sprint(n-1) {
			t.Fatalf("line %d of the output: %q (%v)", n, line, err)
		}
	}
	if n != 2500 {
		t.Fatalf("%d lines of output for 2,500 jobs", n)
	}
}

// TestSubmitBatchRefusals: flags that say what a job runs do not go with
// --batch, and a key that may not submit fails the run at its first call.
func TestSubmitBatchRefusals(t *testing.T) {
	srv := spooltest.NewServer(t)
	file := batchFile(t, `{"argv": ["true"]}`)
	wantRefusal(t, "a command besides", run(srv, "submit", "--batch", file, "--", "true"),
		"--batch takes the jobs from "+file+", one a line; give no command besides")
	wantRefusal(t, "--shell", run(srv, "submit", "--batch", file, "--shell", "true"),
		"--shell cannot go with --batch: each job's line says what it runs")
	r := runLocal("--server", srv.URL, "--api-key", srv.Key(t, spool.RoleRead), "submit", "--batch", file)
	if r.code != 1 || !strings.Contains(r.stderr, "the call with lines 1 to 1 failed") || !strings.Contains(r.stderr, "may not submit") {
		t.Errorf("a read key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestSubmitBatchProgress: with its outcomes going to a file, a run says
// on the terminal how far it has got, a line written over after each call,
// and clears it for its other messages.
func TestSubmitBatchProgress(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	var in strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&in, `{"argv": ["echo", "%d"]}`+"\n", i)
	}
	in.WriteString(`{"argv": []}` + "\n")
	var out, errOut strings.Builder
	e := &env{in: strings.NewReader(in.String()), out: &out, errOut: &errOut, errTerm: termview.Info{TTY: true}}
	root := newRoot(e)
	root.SetArgs([]string{"--server", srv.URL, "--api-key", srv.AdminKey, "submit", "--batch", "-"})
	err := root.ExecuteContext(context.Background())
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("exit: %v, want status 1 (a line failed)", err)
	}
	want := "\r\033[Kspool: 1000 lines read: 1000 jobs submitted, 0 failed" +
		"\r\033[Kspool: line 1501: not a job spec: say what to run" // cut: the rest is ParseSpec's
	if !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("stderr %q does not start with %q", errOut.String(), want)
	}
	if !strings.HasSuffix(errOut.String(), "1501 lines read: 1500 jobs submitted, 1 failed\r\033[Kspool: 1500 jobs submitted; 1 line failed\n") {
		t.Errorf("stderr %q does not end with the last progress written over by the summary", errOut.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 1500 {
		t.Errorf("%d lines of output, want 1500", n)
	}
}
