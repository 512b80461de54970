// Package spooltest runs real spool in Go tests: a server on embedded
// SQLite in the test's temporary directory, and workers that run real
// commands, each started with a line and stopped when the test ends. Test
// code that submits jobs, follows their output or embeds spool runs against
// the real thing instead of mocks.
//
//	func TestBuild(t *testing.T) {
//		srv := spooltest.NewServer(t)
//		spooltest.NewWorker(t, srv, worker.Config{})
//		c := srv.Client()
//		job, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"make", "test"}})
//		...
//		spooltest.RequireJob(t, c, job.ID, spool.Succeeded) // waits until it ends
//		spooltest.RequireLines(t, c, job.ID, "ok")
//	}
//
// RequireJob, RequireLines and RequireEnqueued are the assertions a test
// of code that submits jobs makes; each fails the test saying what it found
// instead.
//
// For tests of code that reads jobs' output without running commands (a UI,
// a log shipper), LeaseJob plays a worker's part through the API: lease a
// job, publish lines in batches, complete it.
package spooltest
