package spooltest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// A test of code that submits jobs: a real server and worker, started in
// two lines and stopped when the test ends, and assertions on what the job
// did.
func Example() {
	t := exampleT() // in a test: its *testing.T
	defer t.end()

	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	c := srv.Client()

	job, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "echo building; echo done"})
	if err != nil {
		log.Fatal(err)
	}
	done := spooltest.RequireJob(t, c, job.ID, spool.Succeeded)
	spooltest.RequireLines(t, c, job.ID, "building", "done")
	fmt.Println(done.State, done.LineCount, "lines")
	// Output: succeeded 2 lines
}

// RequireJob waits for a job to end and checks how it ended.
func ExampleRequireJob() {
	t := exampleT()
	defer t.end()
	srv := spooltest.NewServer(t)
	spooltest.NewWorker(t, srv, worker.Config{})
	c := srv.Client()

	job, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"false"}})
	if err != nil {
		log.Fatal(err)
	}
	failed := spooltest.RequireJob(t, c, job.ID, spool.Failed)
	fmt.Println(failed.Result.ExitCode)
	// Output: 1
}

// RequireLines checks a job's whole output. Here the test plays the
// worker's part itself: no command runs, the lines are exactly the ones
// given.
func ExampleRequireLines() {
	t := exampleT()
	defer t.end()
	srv := spooltest.NewServer(t)

	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 3)...)
	lines := spooltest.RequireLines(t, srv.Client(), job.ID, "1", "2", "3")
	fmt.Println(lines[2].Number, lines[2].Stream)
	// Output: 3 stdout
}

// RequireEnqueued finds the job that code under test submitted.
func ExampleRequireEnqueued() {
	t := exampleT()
	defer t.end()
	srv := spooltest.NewServer(t)
	c := srv.Client()

	// The code under test:
	if _, _, err := c.Submit(context.Background(), client.SubmitParams{Queue: "mail", Argv: []string{"send", "42"}}); err != nil {
		log.Fatal(err)
	}

	job := spooltest.RequireEnqueued(t, c, spooltest.Enqueued{Queue: "mail", Argv: []string{"send", "42"}})
	fmt.Println(job.State)
	// Output: queued
}
