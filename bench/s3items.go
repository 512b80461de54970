package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/mototest"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/worker"
)

// goalS3ItemsGrowth bounds how much a server's memory may grow while it
// reads a scatter's items from S3 and runs the scatter: the file is
// several times larger, so only streaming meets it.
const goalS3ItemsGrowth = 64 << 20

// s3ItemsGoal runs a scatter over an item file of lines lines in S3
// (moto_server), read by a server in a process of its own on SQLite, and
// reports how much the server's resident memory grew from before the
// scatter to its peak.
func s3ItemsGoal(ctx context.Context, lines int, log *slog.Logger) ([]goalRow, error) {
	moto, err := mototest.Start()
	if err != nil {
		return nil, err
	}
	defer moto.Stop()
	dir, err := os.MkdirTemp("", "spool-bench-s3items-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// The items, written to a file first: the SDK sends a body it can
	// read twice (to sign it), and a file is that without memory.
	path := filepath.Join(dir, "items.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	for i := range lines {
		fmt.Fprintf(w, `{"key":"photos/img-%08d.png","size":%d}`+"\n", i, 1000+i%5000)
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	size, _ := f.Seek(0, 1)
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	s3c := s3.NewFromConfig(moto.AWSConfig(), func(o *s3.Options) {
		o.UsePathStyle, o.DisableLogOutputChecksumValidationSkipped = true, true
	})
	bucket := mototest.NewName("bench-items")
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil, err
	}
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("items.jsonl"), Body: f, ContentLength: aws.Int64(size)})
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("uploading the items to moto_server: %w", err)
	}
	_ = os.Remove(path)

	r := &remote{dir: filepath.Join(dir, "spool"), key: service.NewSecret(), scatterS3: moto.URL, workerDone: make(chan error, 1)}
	if err := r.startServer("127.0.0.1:0"); err != nil {
		return nil, err
	}
	wk, err := worker.New(worker.Config{Server: r.url, APIKey: r.key, SpoolDir: filepath.Join(r.dir, "worker"), Concurrency: 8, Logger: log})
	if err == nil {
		r.Client, err = client.New(client.Config{URL: r.url, APIKey: r.key})
	}
	if err != nil {
		r.killServer()
		return nil, err
	}
	var wctx context.Context
	wctx, r.stopWorker = context.WithCancel(context.WithoutCancel(ctx))
	go func() { r.workerDone <- wk.Run(wctx) }()
	defer r.stop()

	before := r.rss()
	start := time.Now()
	sc, err := r.Client.StartScatter(ctx, client.ScatterParams{
		Job:    client.SubmitParams{Argv: []string{"true"}},
		Source: &spool.ScatterSource{Items: "s3://" + bucket + "/items.jsonl", MaxItemsPerBatch: 5000},
	})
	if err != nil {
		return nil, err
	}
	created := time.Since(start)
	stopProgress := progress(func() string {
		if now, err := r.Client.Scatter(ctx, sc.ID); err == nil && now.Reading != nil {
			return fmt.Sprintf("%d items read, %d of %d batches done", now.Reading.ItemsRead, now.Progress.Succeeded, now.Progress.BatchCount)
		}
		return ""
	})
	sc, err = r.Client.FollowScatter(ctx, sc.ID, 200*time.Millisecond, nil)
	stopProgress()
	if err != nil {
		return nil, err
	}
	if sc.State != spool.ScatterSucceeded || sc.Progress.ItemsDone != int64(lines) {
		return nil, fmt.Errorf("the scatter ended %s (%s) with %d of %d items done", sc.State, sc.Error, sc.Progress.ItemsDone, lines)
	}
	took := sinceStart(start)
	growth := r.peakRSS() - before
	return []goalRow{{
		measure:  fmt.Sprintf("S3 items: %s lines (%d MB) read and run, %d batches", thousands(float64(lines)), size>>20, sc.Progress.BatchCount),
		spool:    "RSS +" + mib(max(growth, 1)),
		baseline: fmt.Sprintf("%.0f items/s; created in %s", float64(lines)/took, created.Round(time.Millisecond)),
		goal:     "growth < " + mib(goalS3ItemsGrowth),
		met:      before > 0 && growth < goalS3ItemsGrowth,
	}}, nil
}

// rss is the server process's resident memory now, from /proc (Linux
// only; 0 elsewhere).
func (r *remote) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
