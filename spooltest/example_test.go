package spooltest_test

import (
	"context"
	"testing"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// submitAndWait is a test of code that submits jobs: a real server and
// worker, started in two lines and stopped when the test ends. (It runs as
// TestSubmitAndWait.)
func submitAndWait(t *testing.T) {
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})

	job, _, err := srv.Client().Submit(context.Background(), client.Submission{Script: "echo ok"})
	if err != nil {
		t.Fatal(err)
	}
	done := srv.WaitJob(t, job.GetJobId())
	if done.GetState() != spoolv1.JobState_JOB_STATE_SUCCEEDED || done.GetLineCount() != 1 {
		t.Fatalf("job ended %s with %d lines", done.GetState(), done.GetLineCount())
	}
}

// fakeWorker is a test of code that reads jobs' output, with the test
// playing the worker's part: no command runs, the lines are exactly the ones
// given. (It runs as TestFakeWorker.)
func fakeWorker(t *testing.T) {
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 120)...)
	log, err := srv.Client().ReadLog(context.Background(), job.GetJobId())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(log[len(log)-2].GetOutputData().GetOutput()); got != "120" {
		t.Fatalf("the last line is %q", got)
	}
}

// Tests that start a spool server and a worker, and one that plays the
// worker itself.
func Example() {}
