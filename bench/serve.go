package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/s3items"
	"github.com/spool-run/spool/internal/service"
	"github.com/spool-run/spool/worker"
)

// serve is the server the goal measurements talk to, in a process of its
// own (the harness re-executes itself with "serve"), so that its memory is
// its own to measure and it can be killed and started again on the same
// data. It prints its URL on the first line of its output once it
// listens, and stops gracefully on SIGTERM or SIGINT.
func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "data directory")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	key := fs.String("key", "", "admin key")
	perLine := fs.Bool("per-line", false, "store each line on its own (max_batch_size 1): the per-line baseline")
	pg := fs.String("postgres", "", "store on this PostgreSQL database instead of the embedded SQLite")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this server to this file")
	memProfile := fs.String("memprofile", "", "write this server's allocations and heap, as it stops, to this file")
	scatterS3 := fs.String("scatter-s3", "", "read scatters' items from the S3 look-alike at this URL (moto_server)")
	_ = fs.Parse(args)
	defer profile(*cpuProfile, *memProfile)()
	assembly.TuneGC() // as spool server runs
	cfg := config.Default()
	cfg.Server.Addr = *addr
	cfg.Server.DataDir = *dir
	cfg.Server.ShutdownGraceSeconds = 2
	cfg.Auth.AdminKey = *key
	if *perLine {
		cfg.Execution.Batching.MaxBatchSize = 1
	}
	storeConfig(*pg != "", *pg)(cfg)
	if *scatterS3 != "" {
		cfg.Scatter.S3 = s3items.Config{Endpoint: *scatterS3, PathStyle: true, Region: "us-east-1"}
	}
	if err := cfg.Validate(); err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// Errors only: a bench stops servers with streams still open, which a
	// server rightly warns about.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv, err := assembly.Start(ctx, cfg, assembly.Options{Log: log})
	if err != nil {
		fail(err)
	}
	fmt.Println(srv.URL())
	<-ctx.Done()
	if err := srv.Stop(context.Background()); err != nil {
		fail(err)
	}
}

// serverProfiles, when set, is the directory where every server process
// writes its CPU profile, numbered in the order they start.
var (
	serverProfiles string
	serverStarts   int
)

// remote is a server in a process of its own ("serve") and a worker in
// this one, in a temporary directory.
type remote struct {
	dir, key string
	perLine  bool
	// postgres: the server stores on this PostgreSQL database ("": SQLite).
	postgres string
	// scatterS3: the server reads scatters' items from this S3 endpoint.
	scatterS3 string
	cmd       *exec.Cmd
	url       string
	Client    *client.Client

	stopWorker context.CancelFunc
	workerDone chan error
}

// startRemote starts a server process on the embedded SQLite store and a
// worker with slots slots (0: no worker).
func startRemote(ctx context.Context, slots int, perLine bool, log *slog.Logger) (*remote, error) {
	return startRemoteOn(ctx, "", slots, perLine, log)
}

// startRemoteOn is startRemote with the server on the PostgreSQL database
// at postgres ("": SQLite).
func startRemoteOn(ctx context.Context, postgres string, slots int, perLine bool, log *slog.Logger) (*remote, error) {
	dir, err := os.MkdirTemp("", "spool-bench-*")
	if err != nil {
		return nil, err
	}
	r := &remote{dir: dir, key: service.NewSecret(), perLine: perLine, postgres: postgres, workerDone: make(chan error, 1)}
	if err := r.startServer("127.0.0.1:0"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var w *worker.Worker
	r.Client, err = client.New(client.Config{URL: r.url, APIKey: r.key})
	if err == nil && slots > 0 {
		w, err = worker.New(worker.Config{Server: r.url, APIKey: r.key, SpoolDir: filepath.Join(dir, "worker"), Concurrency: slots, Logger: log})
	}
	if err != nil {
		r.killServer()
		os.RemoveAll(dir)
		return nil, err
	}
	var wctx context.Context
	wctx, r.stopWorker = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		if w == nil {
			<-wctx.Done()
			r.workerDone <- nil
			return
		}
		r.workerDone <- w.Run(wctx)
	}()
	return r, nil
}

// startServer starts the server process on addr and waits until it
// listens.
func (r *remote) startServer(addr string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"serve", "-dir", filepath.Join(r.dir, "server"), "-addr", addr, "-key", r.key}
	if r.perLine {
		args = append(args, "-per-line")
	}
	if r.postgres != "" {
		args = append(args, "-postgres", r.postgres)
	}
	if r.scatterS3 != "" {
		args = append(args, "-scatter-s3", r.scatterS3)
	}
	if serverProfiles != "" {
		serverStarts++
		args = append(args, "-cpuprofile", filepath.Join(serverProfiles, fmt.Sprintf("server-%d.pprof", serverStarts)),
			"-memprofile", filepath.Join(serverProfiles, fmt.Sprintf("server-%d.mem.pprof", serverStarts)))
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("the server process did not start: %w", err)
	}
	r.cmd, r.url = cmd, strings.TrimSpace(line)
	return nil
}

// killServer kills the server process at once, as a crash would.
func (r *remote) killServer() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

// restartServer starts the server again on the same address and data.
func (r *remote) restartServer() error {
	return r.startServer(strings.TrimPrefix(r.url, "http://"))
}

// peakRSS is the server process's peak resident memory so far, from
// /proc (Linux only; 0 elsewhere).
func (r *remote) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// stop stops the worker, then the server, and removes the directory.
func (r *remote) stop() error {
	r.stopWorker()
	err := <-r.workerDone
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case werr := <-done:
		err = errors.Join(err, werr)
	case <-time.After(10 * time.Second):
		r.killServer()
		err = errors.Join(err, errors.New("the server process did not stop within 10 s"))
	}
	return errors.Join(err, os.RemoveAll(r.dir))
}
