package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/spool-run/spool/client"
)

// Keep a job's files with --artifacts globs, list them, and download one.
func ExampleClient_ListArtifacts() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	job, _, err := c.Submit(ctx, client.SubmitParams{
		Script:    "mkdir -p dist && echo 'v1.2.3' > dist/VERSION && echo '<h1>ok</h1>' > report.html",
		Artifacts: []string{"dist/**", "report.html"},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Wait for the end: the worker uploads the files before it completes
	// the job.
	for _, err := range c.Lines(ctx, job.ID, client.StreamOptions{Follow: true}) {
		if err != nil {
			log.Fatal(err)
		}
	}
	list, err := c.ListArtifacts(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range list {
		fmt.Println(a.Path, a.Size)
	}
	rc, _, err := c.DownloadArtifact(ctx, job.ID, "dist/VERSION", 0, -1)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	_, _ = io.Copy(os.Stdout, rc)
	// Output:
	// dist/VERSION 7
	// report.html 12
	// v1.2.3
}

// Inside a job, keep a file as one of its artifacts: the worker gives the
// job's command SPOOL_SERVER, SPOOL_JOB_ID and SPOOL_JOB_TOKEN, a
// credential good for this job's artifacts only.
func ExampleClient_UploadArtifact() {
	if os.Getenv("SPOOL_JOB_TOKEN") == "" {
		return // not inside a job
	}
	c, err := client.New(client.Config{URL: client.URLFromEnv(), APIKey: client.JobTokenFromEnv()})
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("coverage.html")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	a, err := c.UploadArtifact(context.Background(), os.Getenv("SPOOL_JOB_ID"), "coverage.html", f)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("kept", a.Path, a.SHA256)
}
