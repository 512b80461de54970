package worker_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// The worker's faults: what a crash, a full disk, a server away longer
// than a lease or a stop in the middle of a job must not do to a job.

// shortLeases gives a server a one-second heartbeat and three-second leases.
func shortLeases(c *server.Config) {
	c.Server.ShutdownGrace = 2 * time.Second
	c.Execution.HeartbeatInterval = time.Second
	c.Jobs.Lease = 3 * time.Second
}

// logTo is a worker config whose logger keeps what it says, for tests that
// wait for a warning.
func logTo(t *testing.T, buf *safebuf.Buffer) worker.Config {
	t.Helper()
	return worker.Config{Logger: slog.New(slog.NewTextHandler(buf, nil))}
}

// eventually polls cond until it holds, failing after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func job(t *testing.T, c *client.Client, id string) *spool.Job {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// outboxHas reports whether a segment of an outbox in dir holds text: the
// output has reached the worker's disk.
func outboxHas(dir, text string) bool {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	for _, p := range segs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// linesOfAttempt returns the output lines attempt printed, as stored.
func linesOfAttempt(t *testing.T, c *client.Client, id string, attempt int) []string {
	t.Helper()
	log, err := c.ReadLog(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range log {
		for _, l := range ev.Lines {
			if ev.Attempt == attempt {
				out = append(out, l.Text)
			}
		}
	}
	return out
}

// TestFullSpoolDiskHandsJobBack: when the outbox cannot be written (here
// its segment file is /dev/full: every write fails with ENOSPC), the job
// does not sit RUNNING for ever: the worker stops the command, hands the
// job back with the reason, and takes no work while the spool directory
// cannot be written; once it can, work resumes.
func TestFullSpoolDiskHandsJobBack(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t, spooltest.Config{Server: shortLeases})
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Queue: "full", Script: "printf 'a\\nb\\n'; sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, j.ID+"-a1.00000001.seg"), filepath.Join(dir, ".probe")} {
		if err := os.Symlink("/dev/full", p); err != nil {
			t.Fatal(err)
		}
	}
	var log safebuf.Buffer
	cfg := logTo(t, &log)
	cfg.Queue, cfg.SpoolDir = "full", dir
	spooltest.NewWorker(t, srv, cfg)

	eventually(t, "the worker to stop taking jobs", func() bool {
		return strings.Contains(log.String(), "not taking jobs: the spool directory cannot be written")
	})
	// Attempt 1 ended with the reason; a lease the worker got meanwhile
	// (it was already waiting for one) went straight back, counting
	// against nothing.
	got := job(t, c, j.ID)
	if got.State != spool.Queued || got.ReleasedAttempts != got.Attempt-1 {
		t.Fatalf("after the disk failed the job is %s on attempt %d (%d handed back), want queued with only attempt 1 lost",
			got.State, got.Attempt, got.ReleasedAttempts)
	}
	if n := got.Notes; len(n) == 0 || !strings.Contains(n[0], "attempt 1 handed back") || !strings.Contains(n[0], "could not write its spool directory") ||
		!strings.Contains(n[0], "no space left") {
		t.Fatalf("the job's notes do not say why it was handed back: %q", n)
	}
	before := got.Attempt

	// The disk has room again: the worker takes the job, which now runs.
	if err := os.Remove(filepath.Join(dir, ".probe")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the next attempt's output", func() bool { return len(linesOfAttempt(t, c, j.ID, before+1)) == 2 })
	if _, err := c.Cancel(context.Background(), j.ID, "done testing"); err != nil {
		t.Fatal(err)
	}
}

// TestGracefulStopHandsJobsBack: a job still running when a stopping
// worker's grace ends is stopped, its output sent, and handed back at once:
// it does not wait for its lease to run out, and the attempt counts against
// nothing, so even a job with max_attempts 1 runs again.
func TestGracefulStopHandsJobsBack(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "echo begin; sleep 60", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := spooltest.NewWorker(t, srv, worker.Config{ShutdownGrace: 300 * time.Millisecond})
	eventually(t, "the job's first line", func() bool { return job(t, c, j.ID).LineCount == 1 })
	w.Stop()
	got := job(t, c, j.ID)
	if got.State != spool.Queued || got.ReleasedAttempts != 1 {
		t.Fatalf("after the worker stopped: %s, released %d; want queued at once, released 1", got.State, got.ReleasedAttempts)
	}
	l := spooltest.LeaseJob(t, srv, "")
	if l.JobID() != j.ID || l.Job().Attempt != 2 {
		t.Fatalf("handed back job leased as %s attempt %d", l.JobID(), l.Job().Attempt)
	}
}

// TestRestartDeliversOutputOfExpiredLease: output a worker wrote to its
// spool directory but could not send (the server was down), from an
// attempt whose lease then ran out, is delivered by the next worker started
// on that directory, as long as no later attempt has started.
func TestRestartDeliversOutputOfExpiredLease(t *testing.T) {
	t.Parallel()
	srv, c, id, dir := crashWithUnsentOutput(t)
	spooltest.NewWorker(t, srv, worker.Config{Queue: "elsewhere", SpoolDir: dir})
	eventually(t, "attempt 1's lines", func() bool { return len(linesOfAttempt(t, c, id, 1)) == 29 })
	if got := linesOfAttempt(t, c, id, 1); got[0] != "line 1" || got[28] != "line 29" {
		t.Fatalf("attempt 1's lines: %v", got)
	}
	if n := job(t, c, id).Notes; len(n) != 0 {
		t.Fatalf("notes %q: nothing was lost", n)
	}
}

// TestRestartReportsOutputItCannotDeliver: once another attempt has
// started, such output can no longer go into the log: the loss is recorded
// on the job, the output kept on the worker's disk, and a warning names it.
func TestRestartReportsOutputItCannotDeliver(t *testing.T) {
	t.Parallel()
	srv, c, id, dir := crashWithUnsentOutput(t)
	l := spooltest.LeaseJob(t, srv, "")
	if l.JobID() != id || l.Job().Attempt != 2 {
		t.Fatalf("leased %s attempt %d", l.JobID(), l.Job().Attempt)
	}
	l.Begin()
	var log safebuf.Buffer
	cfg := logTo(t, &log)
	cfg.Queue, cfg.SpoolDir = "elsewhere", dir
	spooltest.NewWorker(t, srv, cfg)
	eventually(t, "the loss to be recorded", func() bool { return len(job(t, c, id).Notes) == 1 })
	note := job(t, c, id).Notes[0]
	kept := filepath.Join(dir, "undelivered", id+"-a1")
	if !strings.Contains(note, "attempt 1: 29 lines could not be delivered") || !strings.Contains(note, kept) {
		t.Fatalf("note %q", note)
	}
	if !outboxHas(filepath.Dir(kept), "line 29") {
		t.Fatalf("the undelivered output is not kept in %s", kept)
	}
	eventually(t, "the warning", func() bool { return strings.Contains(log.String(), kept) })
	if got := linesOfAttempt(t, c, id, 1); len(got) != 0 {
		t.Fatalf("attempt 1's output went into the log after attempt 2 began: %v", got)
	}
}

// crashWithUnsentOutput runs a job whose worker writes 29 lines to its
// spool directory while the server is down, then dies (Kill: nothing more
// happens in it); the server comes back, and the job's lease runs out. It
// returns the server, a client, the job and the dead worker's directory.
func crashWithUnsentOutput(t *testing.T) (*spooltest.Server, *client.Client, string, string) {
	t.Helper()
	srv := spooltest.NewServer(t, spooltest.Config{Server: shortLeases})
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "while [ ! -e go ]; do sleep 0.05; done; seq -f 'line %g' 1 29; sleep 60",
		WorkingDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := spooltest.NewWorker(t, srv, worker.Config{SpoolDir: dir})
	eventually(t, "the job to start", func() bool { return job(t, c, j.ID).LastSequence >= 1 })
	srv.Stop()
	if err := os.WriteFile(filepath.Join(j.Params.WorkingDir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the lines on the worker's disk", func() bool { return outboxHas(dir, "line 29") })
	w.Kill()
	srv.Restart()
	eventually(t, "the lease to run out", func() bool {
		return job(t, c, j.ID).State == spool.Queued
	})
	return srv, c, j.ID, dir
}

// TestHeartbeatFollowsTheLease: the server's heartbeat interval and lease
// length change after a job was enqueued; the worker heartbeats at the
// interval its lease allows, not the one stored with the job, and the job
// runs to the end on its first attempt.
func TestHeartbeatFollowsTheLease(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t) // 30 s heartbeats, 2 min leases
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "sleep 6; echo done"})
	if err != nil {
		t.Fatal(err)
	}
	shortLeases(srv.Config())
	srv.Restart()
	spooltest.NewWorker(t, srv, worker.Config{})
	done := srv.WaitJob(t, j.ID)
	if done.State != spool.Succeeded || done.Attempt != 1 {
		t.Fatalf("job ended %s on attempt %d: %v", done.State, done.Attempt, done.Result)
	}
}

// TestSpoolDirectoryIsLocked: a second worker on a directory in use says
// which process holds it and does not start.
func TestSpoolDirectoryIsLocked(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	dir := t.TempDir()
	spooltest.NewWorker(t, srv, worker.Config{SpoolDir: dir})
	// The first worker starts on its own goroutine: wait until it holds
	// the directory (it has written its pid), or the second could be first.
	eventually(t, "the first worker to lock the directory", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "worker.lock"))
		return len(b) > 0
	})
	second, err := worker.New(worker.Config{Server: srv.URL, APIKey: srv.AdminKey, SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = second.Run(context.Background())
	want := "is in use by another worker (pid " + strconv.Itoa(os.Getpid()) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second worker on one directory: %v, want %q", err, want)
	}
}

// TestCancelReachesTheCommandAtOnce: a cancel reaches a running command
// within moments, not at the next heartbeat (30 s here), and its reason is
// in the job's result.
func TestCancelReachesTheCommandAtOnce(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "echo up; sleep 120"})
	if err != nil {
		t.Fatal(err)
	}
	spooltest.NewWorker(t, srv, worker.Config{})
	eventually(t, "the command to start", func() bool { return job(t, c, j.ID).LineCount == 1 })
	asked := time.Now()
	if _, err := c.Cancel(context.Background(), j.ID, "superseded"); err != nil {
		t.Fatal(err)
	}
	done := srv.WaitJob(t, j.ID)
	if took := time.Since(asked); took > 15*time.Second {
		t.Fatalf("the cancel took %v to stop the command; heartbeats are 30 s apart", took)
	}
	if done.State != spool.Cancelled || done.Result.Error != "cancelled: superseded" {
		t.Fatalf("job ended %s: %v", done.State, done.Result)
	}
}

// TestRetriesRunAFailingCommandAgain: --retries reruns a failing command
// after a backoff, apart from max_attempts (1 here), and the log shows
// each attempt.
func TestRetriesRunAFailingCommandAgain(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "echo attempt $SPOOL_JOB_ATTEMPT; exit 3", Retries: 1, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	spooltest.NewWorker(t, srv, worker.Config{})
	done := srv.WaitJob(t, j.ID)
	if done.State != spool.Failed || done.Attempt != 2 || done.RetriedAttempts != 1 || done.Result.ExitCode != 3 {
		t.Fatalf("job ended %s on attempt %d (retried %d): %v", done.State, done.Attempt, done.RetriedAttempts, done.Result)
	}
	for a := 1; a <= 2; a++ {
		if got := linesOfAttempt(t, c, j.ID, a); len(got) != 1 || got[0] != "attempt "+strconv.Itoa(a) {
			t.Fatalf("attempt %d printed %v", a, got)
		}
	}
	if n := done.Notes; len(n) != 1 || !strings.Contains(n[0], "attempt 1 failed (exit code 3); retry 1 of 1") {
		t.Fatalf("notes %q", n)
	}
}

// TestJobsGetAllowListedEnvironment: a job gets the worker's PATH and the
// like, not its secrets, unless the worker passes them on.
func TestJobsGetAllowListedEnvironment(t *testing.T) {
	t.Setenv("SPOOL_TEST_SECRET", "hunter2")
	srv := spooltest.NewServer(t)
	c := srv.Client()
	for _, tc := range []struct {
		pass []string
		want string
	}{{nil, "secret=,path=set"}, {[]string{"SPOOL_TEST_*"}, "secret=hunter2,path=set"}} {
		queue := "env" + strconv.Itoa(len(tc.pass))
		j, _, err := c.Submit(context.Background(), client.SubmitParams{Queue: queue, Script: `echo "secret=$SPOOL_TEST_SECRET,path=${PATH:+set}"`})
		if err != nil {
			t.Fatal(err)
		}
		spooltest.NewWorker(t, srv, worker.Config{Queue: queue, PassEnv: tc.pass})
		srv.WaitJob(t, j.ID)
		if got := linesOfAttempt(t, c, j.ID, 1); len(got) != 1 || got[0] != tc.want {
			t.Fatalf("with PassEnv %v the job saw %v, want %q", tc.pass, got, tc.want)
		}
	}
}
