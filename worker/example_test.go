package worker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/worker"
)

// Run a worker inside a program: it takes jobs from the "default" queue of
// the server at Config.Server until its context ends.
func Example() {
	dir, err := os.MkdirTemp("", "spool-example-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, key := exampleServer(dir) // in real use the server runs elsewhere
	defer srv.Stop(context.Background())

	w, err := worker.New(worker.Config{
		Server: srv.URL(),
		APIKey: key, // a worker key: spool keys create --role worker

		SpoolDir:    filepath.Join(dir, "worker"), // output not yet sent waits here
		Concurrency: 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	c, err := client.New(client.Config{URL: srv.URL(), APIKey: key})
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"echo", "hello from the worker"}})
	if err != nil {
		log.Fatal(err)
	}
	s := c.Events(context.Background(), job.ID, client.StreamOptions{Follow: true,
		Types: []spool.EventType{spool.EventOutput}})
	for ev, err := range s.All() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Lines[0].Text)
	}
	fmt.Println("the job", s.Finished().State)

	stop() // a graceful stop: running jobs may finish
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// hello from the worker
	// the job succeeded
}

// exampleServer starts a server with a known admin key and returns both.
func exampleServer(dir string) (*server.Server, string) {
	cfg := server.DefaultConfig()
	cfg.Server.Addr, cfg.Server.DataDir, cfg.Server.ShutdownGrace = "127.0.0.1:0", filepath.Join(dir, "server"), time.Second
	cfg.Auth.AdminKey = "spool_example-admin-key-of-at-least-32-characters"
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	return srv, cfg.Auth.AdminKey
}
