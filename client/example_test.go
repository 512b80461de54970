package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/worker"
)

// Submit a command and follow its output live until it ends.
func Example() {
	url, key, stop := exampleSpool() // a server and a worker; yours run elsewhere
	defer stop()
	ctx := context.Background()

	// Or: client.New(client.Config{URL: client.URLFromEnv(), APIKey: client.APIKeyFromEnv()})
	c, err := client.New(client.Config{URL: url, APIKey: key})
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Submit(ctx, client.SubmitParams{Script: "echo building; echo done"})
	if err != nil {
		log.Fatal(err)
	}
	s := c.Events(ctx, job.ID, client.StreamOptions{Follow: true,
		Types: []spool.EventType{spool.EventOutput}})
	for ev, err := range s.All() {
		if err != nil {
			log.Fatal(err)
		}
		for _, line := range ev.Lines {
			fmt.Println(line.Number, line.Stream, line.Text)
		}
	}
	fmt.Println("the job", s.Finished().State)
	// Output:
	// 1 stdout building
	// 2 stdout done
	// the job succeeded
}

// Follow a job's output, line by line, until it ends.
func ExampleClient_Lines() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	job, _, err := c.Submit(ctx, client.SubmitParams{Script: "echo compiling; echo linking; echo done"})
	if err != nil {
		log.Fatal(err)
	}
	for line, err := range c.Lines(ctx, job.ID, client.StreamOptions{Follow: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(line.Number, line.Stream, line.Text)
	}
	// Output:
	// 1 stdout compiling
	// 2 stdout linking
	// 3 stdout done
}

// Replay a finished job's output from line 8: the read seeks straight to
// the stored batch that holds it.
func ExampleClient_Events_fromLine() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	job, _, err := c.Submit(ctx, client.SubmitParams{Argv: []string{"seq", "1", "10"}})
	if err != nil {
		log.Fatal(err)
	}
	waitFinal(ctx, c, job.ID)

	for ev, err := range c.Events(ctx, job.ID, client.StreamOptions{FromLine: 8}).All() {
		if err != nil {
			log.Fatal(err)
		}
		for _, line := range ev.Lines {
			fmt.Printf("line %d: %s\n", line.Number, line.Text)
		}
	}
	// Output:
	// line 8: 8
	// line 9: 9
	// line 10: 10
}

// Errors carry spool's kinds: branch on them with errors.Is.
func ExampleClient_Job_notFound() {
	c, stop := exampleClient()
	defer stop()
	_, err := c.Job(context.Background(), "no-such-job")
	fmt.Println(errors.Is(err, spool.ErrNotFound))
	// Output: true
}

// Run a failed job again, then tidy up: the old job goes with its log.
func ExampleClient_Rerun() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	first, _, err := c.Submit(ctx, client.SubmitParams{Script: "echo flaky; exit 1"})
	if err != nil {
		log.Fatal(err)
	}
	// A job must have finished to be run again (or it is spool.ErrConflict).
	s := c.Events(ctx, first.ID, client.StreamOptions{Follow: true})
	for _, err := range s.All() {
		if err != nil {
			log.Fatal(err)
		}
	}
	again, err := c.Rerun(ctx, first.ID, "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rerun of the first:", again.RerunOf == first.ID)
	if err := c.Delete(ctx, first.ID); err != nil {
		log.Fatal(err)
	}
	_, err = c.Job(ctx, first.ID)
	fmt.Println("first deleted:", errors.Is(err, spool.ErrNotFound))
	// Output:
	// rerun of the first: true
	// first deleted: true
}

// Pause a queue for maintenance: its jobs wait, and no worker takes them
// until it is resumed.
func ExampleClient_PauseQueue() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	// A queue is there once a job names it (or a worker polls it).
	if _, _, err := c.Submit(ctx, client.SubmitParams{Queue: "deploys", Argv: []string{"./deploy.sh"}}); err != nil {
		log.Fatal(err)
	}
	if _, err := c.PauseQueue(ctx, "deploys"); err != nil {
		log.Fatal(err)
	}
	queues, _, err := c.Queues(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range queues {
		if q.Name != "deploys" {
			continue // the worker's own queue, "default", shows too
		}
		fmt.Printf("%s paused=%v queued=%d running=%d\n", q.Name, q.Paused, q.Queued, q.Running)
	}
	// Output: deploys paused=true queued=1 running=0
}

// An admin gives a build machine a key that may only run jobs of the
// "builds" queue. The secret is shown once; the server keeps its hash.
func ExampleClient_CreateKey() {
	url, adminKey, stop := exampleSpool()
	defer stop()
	ctx := context.Background()
	admin, err := client.New(client.Config{URL: url, APIKey: adminKey})
	if err != nil {
		log.Fatal(err)
	}
	key, secret, err := admin.CreateKey(ctx, client.KeyParams{Name: "builder-1", Role: spool.RoleWorker, Queues: []string{"builds"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key.Name, key.Role, key.Queues, strings.HasPrefix(secret, "spool_"))

	// A worker key may not submit jobs: the server says so.
	w, err := client.New(client.Config{URL: url, APIKey: secret})
	if err != nil {
		log.Fatal(err)
	}
	_, _, err = w.Submit(ctx, client.SubmitParams{Queue: "builds", Argv: []string{"make"}})
	fmt.Println(errors.Is(err, spool.ErrPermissionDenied))

	// Revoked, it stops working at once.
	if _, err := admin.RevokeKey(ctx, "builder-1"); err != nil {
		log.Fatal(err)
	}
	_, _, err = w.JobsPage(ctx, client.ListParams{Queue: "builds"})
	fmt.Println(errors.Is(err, spool.ErrUnauthenticated))
	// Output:
	// builder-1 worker [builds] true
	// true
	// true
}

// List the jobs that did not succeed, newest first: Jobs fetches pages as
// the loop goes on.
func ExampleClient_Jobs() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	for _, script := range []string{"exit 0", "exit 3", "exit 4"} {
		job, _, err := c.Submit(ctx, client.SubmitParams{Script: script})
		if err != nil {
			log.Fatal(err)
		}
		waitFinal(ctx, c, job.ID)
	}
	for job, err := range c.Jobs(ctx, client.ListParams{States: []spool.State{spool.Failed, spool.Cancelled}, PageSize: 1}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(job.Params.Script, job.State, job.Result.ExitCode)
	}
	// Output:
	// exit 4 failed 4
	// exit 3 failed 3
}

// Submit many jobs in one go: each is enqueued or refused on its own, and
// a request id per job makes submitting the list again harmless.
func ExampleClient_SubmitBatch() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	var jobs []client.SubmitParams
	for _, name := range []string{"alpha", "beta", "gamma"} {
		jobs = append(jobs, client.SubmitParams{Queue: "thumbnails", Argv: []string{"echo", name}, RequestID: "thumb-" + name})
	}
	jobs = append(jobs, client.SubmitParams{Queue: "thumbnails"}) // nothing to run
	results, err := c.SubmitBatch(ctx, jobs)
	if err != nil {
		log.Fatal(err) // the whole call failed: the key, the server
	}
	for i, r := range results {
		switch {
		case errors.Is(r.Err, spool.ErrInvalidArgument):
			fmt.Println(i, "refused")
		case r.Err != nil:
			log.Fatal(r.Err)
		default:
			fmt.Println(i, r.Job.Params.Argv[1], r.Job.State)
		}
	}
	again, err := c.SubmitBatch(ctx, jobs[:3])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("again:", again[0].Deduplicated, again[0].Job.ID == results[0].Job.ID)
	// Output:
	// 0 alpha queued
	// 1 beta queued
	// 2 gamma queued
	// 3 refused
	// again: true true
}

// waitFinal follows a job until it has ended.
func waitFinal(ctx context.Context, c *client.Client, id string) {
	s := c.Events(ctx, id, client.StreamOptions{Follow: true, Types: []spool.EventType{spool.EventProcessEnd}})
	for _, err := range s.All() {
		if err != nil {
			log.Fatal(err)
		}
	}
}

// exampleClient is a client of a server started by exampleSpool, with its
// admin key, and the function that stops both.
func exampleClient() (*client.Client, func()) {
	url, key, stop := exampleSpool()
	c, err := client.New(client.Config{URL: url, APIKey: key})
	if err != nil {
		log.Fatal(err)
	}
	return c, stop
}

// exampleSpool starts a server and a worker in a temporary directory, as
// the examples' stand-in for a real deployment, and returns the server's
// address, its admin key and the function that stops both.
func exampleSpool() (url, key string, stop func()) {
	dir, err := os.MkdirTemp("", "spool-example-*")
	if err != nil {
		log.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Server.Addr, cfg.Server.DataDir, cfg.Server.ShutdownGrace = "127.0.0.1:0", dir, time.Second
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	// On its first start a server writes an admin key to its data directory.
	b, err := os.ReadFile(filepath.Join(dir, "admin.key"))
	if err != nil {
		log.Fatal(err)
	}
	key = strings.TrimSpace(string(b))
	w, err := worker.New(worker.Config{Server: srv.URL(), APIKey: key, SpoolDir: dir + "/worker"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return srv.URL(), key, func() {
		cancel()
		<-done
		_ = srv.Stop(context.Background())
		os.RemoveAll(dir)
	}
}
