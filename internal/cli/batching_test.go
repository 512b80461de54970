package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// TestSubmitBatching: --flush-interval and --batch-lines are the job's own
// batching, stored with it as asked and as its worker gets it; a --batch
// line says the same with flush_interval and batch_lines. What the server
// bounds it refuses, naming the bound; what is no batching at all is
// refused before anything is sent.
func TestSubmitBatching(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	ctx := context.Background()
	r := run(srv, "submit", "-q", "own", "--flush-interval", "200ms", "--batch-lines", "10", "--", "seq", "100")
	if r.code != 0 {
		t.Fatalf("submit: exit %d, stderr %q", r.code, r.stderr)
	}
	job, err := c.Job(ctx, strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	want := spool.Batching{FlushInterval: 200 * time.Millisecond, MaxBatchSize: 10}
	if job.Params.Batching != want || job.Execution.FlushInterval != want.FlushInterval || job.Execution.MaxBatchSize != 10 {
		t.Fatalf("the job asked for %+v and runs with %+v; want %+v", job.Params.Batching, job.Execution, want)
	}

	file := batchFile(t, `{"argv": ["seq", "5"], "queue": "own", "flush_interval": "300ms", "batch_lines": 7}`)
	if r := run(srv, "submit", "--batch", file); r.code != 0 {
		t.Fatalf("submit --batch: exit %d, stderr %q", r.code, r.stderr)
	}
	jobs, _, err := c.JobsPage(ctx, client.ListParams{Queue: "own"})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs: %v, %v", jobs, err)
	}
	if got := jobs[0].Params.Batching; got != (spool.Batching{FlushInterval: 300 * time.Millisecond, MaxBatchSize: 7}) {
		t.Fatalf("the --batch line's job asked for %+v", got)
	}

	r = run(srv, "submit", "--batch-lines", "5000", "--", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "params.batching.max_batch_size 5000 is above this server's maximum for a job, 1000 lines a batch (execution.batching.job_max_batch_size)") {
		t.Errorf("--batch-lines over the bound: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(srv, "submit", "--flush-interval", "10ms", "--", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "params.batching.flush_interval 10ms is below this server's minimum for a job, 100ms") {
		t.Errorf("--flush-interval under the bound: exit %d, stderr %q", r.code, r.stderr)
	}
	wantRefusal(t, "negative interval", run(srv, "submit", "--flush-interval", "-1s", "--", "true"),
		"--flush-interval -1s is negative: give how often to send output (200ms, 5s), or leave it out for the server's")
	wantRefusal(t, "negative lines", run(srv, "submit", "--batch-lines", "-2", "--", "true"),
		"--batch-lines -2 is negative: give how many lines a batch may hold, or leave it out for the server's")
	wantRefusal(t, "with --batch", run(srv, "submit", "--batch", file, "--batch-lines", "3"),
		"--batch-lines cannot go with --batch: each job's line says what it runs")
	if jobs, _, err := c.JobsPage(ctx, client.ListParams{}); err != nil || len(jobs) != 2 {
		t.Fatalf("refused submissions made jobs: %d jobs, %v", len(jobs), err)
	}
}
