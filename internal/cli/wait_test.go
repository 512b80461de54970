package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/spooltest"
)

// leaseNew submits a job to the default queue and leases it, as its
// worker, which has started it.
func leaseNew(t *testing.T, srv *spooltest.Server) *spooltest.Lease {
	t.Helper()
	submitJob(t, srv.Client())
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	return l
}

// TestJobsWaitEnded: jobs that have ended already are reported at once,
// and spool exits with the job's exit code, 0 when all succeeded.
func TestJobsWaitEnded(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	ok1 := spooltest.RunJob(t, srv).ID
	ok2 := spooltest.RunJob(t, srv).ID
	l := leaseNew(t, srv)
	l.End(3)
	failed := l.JobID()

	r := run(srv, "jobs", "wait", ok1)
	if r.code != 0 || r.stdout != "" || r.stderr != ok1+" succeeded\n" {
		t.Fatalf("one job that succeeded: %+v", r)
	}
	r = run(srv, "jobs", "wait", failed)
	if r.code != 3 || r.stderr != failed+" failed (exit 3)\n" {
		t.Fatalf("one job that failed with exit code 3: %+v", r)
	}
	r = run(srv, "jobs", "wait", ok1, ok2, ok1)
	if r.code != 0 || r.stderr != ok1+" succeeded\n"+ok2+" succeeded\n" {
		t.Fatalf("two jobs that succeeded (one named twice): %+v", r)
	}
	r = run(srv, "jobs", "wait", ok1, failed, ok2)
	if r.code != 3 || !strings.Contains(r.stderr, failed+" failed (exit 3)\n") {
		t.Fatalf("three jobs, one failed: %+v", r)
	}
}

// TestJobsWaitWhileRunning: jobs that end while spool waits are reported
// as they end, and the first to fail gives the exit status, whatever the
// order they were named in.
func TestJobsWaitWhileRunning(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	ok, first, second := leaseNew(t, srv), leaseNew(t, srv), leaseNew(t, srv)

	var errOut safebuf.Buffer
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: &errOut, errOut: &errOut}
	c := srv.Client() // here: it may fail the test, which only the test's goroutine may do
	done := make(chan error, 1)
	go func() {
		done <- waitJobs(context.Background(), e, c, []string{ok.JobID(), second.JobID(), first.JobID()}, 0)
	}()
	ok.End(0)
	eventually(t, "the first job's end", func() bool { return errOut.String() == ok.JobID()+" succeeded\n" })
	first.End(5)
	eventually(t, "the failure", func() bool { return strings.Contains(errOut.String(), first.JobID()+" failed (exit 5)\n") })
	second.End(2)
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("jobs wait did not return after the last job ended")
	}
	if err != (exitError{code: 5}) {
		t.Fatalf("got %v, want exit status 5, the first failure's", err)
	}
	want := ok.JobID() + " succeeded\n" + first.JobID() + " failed (exit 5)\n" + second.JobID() + " failed (exit 2)\n"
	if errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
}

// TestJobsWaitSeesTheEnd: a job that ends after the wait began is seen
// to end, with its outcome. (How soon is the poll's backoff, from about
// 100 ms; a timed assertion would only measure how busy the machine is.)
func TestJobsWaitSeesTheEnd(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	l := leaseNew(t, srv)
	wait := start(srv, "jobs", "wait", l.JobID())
	time.Sleep(150 * time.Millisecond)
	l.End(0)
	if r := await(t, wait); r.code != 0 || r.stderr != l.JobID()+" succeeded\n" {
		t.Fatalf("exit %d: %q", r.code, r.stderr)
	}
}

// TestJobsWaitRefusals: an unknown job is refused before waiting for the
// others; --timeout gives up with timeout(1)'s 124; a job cancelled before
// it ran exits 1 and says why.
func TestJobsWaitRefusals(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	l := leaseNew(t, srv)

	r := await(t, start(srv, "jobs", "wait", l.JobID(), "no-such-job"))
	if r.code != 1 || r.stderr != "spool: job \"no-such-job\" not found\n" {
		t.Fatalf("unknown job: %+v", r)
	}

	r = await(t, start(srv, "jobs", "wait", "--timeout", "300ms", l.JobID()))
	if want := "spool: gave up after 300ms; still not done: " + l.JobID() + " (running)\n"; r.code != 124 || r.stderr != want {
		t.Fatalf("--timeout: exit %d, stderr %q; want 124 and %q", r.code, r.stderr, want)
	}

	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "sleep 100", Queue: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	wait := start(srv, "jobs", "wait", j.ID)
	if _, err := c.Cancel(context.Background(), j.ID, "not today"); err != nil {
		t.Fatal(err)
	}
	r = await(t, wait)
	if r.code != 1 || !strings.HasPrefix(r.stderr, j.ID+" cancelled") || !strings.Contains(r.stderr, "not today") {
		t.Fatalf("cancelled job: %+v", r)
	}
}
