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
//		job, _, err := c.Submit(ctx, client.Submission{Argv: []string{"make", "test"}})
//		...
//		done := srv.WaitJob(t, job.GetJobId()) // follows it until it is final
//	}
//
// For tests of code that reads jobs' output without running commands (a UI,
// a log shipper), LeaseJob plays a worker's part through the API: lease a
// job, publish lines in batches, complete it.
package spooltest
