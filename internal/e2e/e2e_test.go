// Package e2e tests spool as people run it: `spool server` and `spool
// worker` as separate processes, killed and restarted.
package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/outbox"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/internal/wire"
)

// spoolBin is the spool binary built for these tests.
var spoolBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "spool-e2e-")
	if err != nil {
		panic(err)
	}
	spoolBin = filepath.Join(dir, "spool")
	build := exec.Command("go", "build", "-o", spoolBin, "github.com/spool-run/spool/cmd/spool")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building spool:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a spool process whose output goes to the test log.
type proc struct {
	cmd *exec.Cmd
	out *safebuf.Buffer
}

// adminKey is every test server's admin key (auth.admin_key), and what
// every client and worker sends (SPOOL_API_KEY).
var adminKey = "spool_e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-0123456789abcdefghijklmnopqrstuvwxyz"

// run starts spool with args, configured for short leases and with the
// tests' admin key.
func run(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return runIn(t, name, "", []string{"SPOOL_AUTH_ADMIN_KEY=" + adminKey, "SPOOL_API_KEY=" + adminKey}, args...)
}

// runIn starts spool with args in dir ("": here), with env added to the
// environment (and short leases).
func runIn(t *testing.T, name, dir string, env []string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, dir, env, exec.Command(spoolBin, args...))
}

// startProc starts cmd in dir ("": here), with env added to the
// environment of spool processes; the test's end kills it if it still
// runs.
func startProc(t *testing.T, name, dir string, env []string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, out: &safebuf.Buffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Dir = dir
	p.cmd.Env = append(spoolEnv(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// spoolEnv is the environment of the spool processes tests start: nothing
// of the test's own spool settings leaks in, and leases are short.
func spoolEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPOOL_") {
			env = append(env, kv)
		}
	}
	return append(env, "SPOOL_EXECUTION_HEARTBEAT_INTERVAL_SECONDS=1", "SPOOL_JOBS_LEASE_SECONDS=3")
}

// kill9 kills the process as a crash would.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// waitSaid waits until the process has written one of what to its output.
func (p *proc) waitSaid(t *testing.T, what ...string) {
	t.Helper()
	said := func() bool {
		out := p.out.String()
		return slices.ContainsFunc(what, func(w string) bool { return strings.Contains(out, w) })
	}
	for deadline := time.Now().Add(30 * time.Second); !said(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("none of %q in 30 s of output:\n%s", what, p.out.String())
		}
	}
}

// serverGone is what a worker says once a call of any kind found the
// server away: output, a heartbeat or a lease.
var serverGone = []string{"cannot reach the server", "heartbeat failed", "cannot lease jobs"}

func freePort(t *testing.T) string {
	t.Helper()
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	// Below the ephemeral range, from which the system gives every
	// outgoing connection its local port: a port found free there could
	// be some connection's before the server binds it (a test restarting
	// its server on the same address would meet the same). Each port is
	// given once per run.
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if ports.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		ports.given[port] = true
		return ln.Addr().String()
	}
	t.Fatal("no free port between 20000 and 32000 on 127.0.0.1")
	return ""
}

// ports are the ports freePort gave.
var ports struct {
	mu    sync.Mutex
	given map[int]bool
}

// startServer runs `spool server` on addr with dataDir (and any extra
// arguments) and waits until it answers.
func startServer(t *testing.T, addr, dataDir string, extra ...string) (*proc, *client.Client) {
	t.Helper()
	return startServerEnv(t, addr, dataDir, nil, extra...)
}

// startServerEnv is startServer with env added to the server's environment.
func startServerEnv(t *testing.T, addr, dataDir string, env []string, extra ...string) (*proc, *client.Client) {
	t.Helper()
	p := runIn(t, "server "+addr, "", append([]string{"SPOOL_AUTH_ADMIN_KEY=" + adminKey, "SPOOL_API_KEY=" + adminKey}, env...),
		append([]string{"server", "--addr", addr, "--data-dir", dataDir}, extra...)...)
	c, err := client.New(client.Config{URL: "http://" + addr, APIKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := c.Job(context.Background(), "probe"); connect.CodeOf(err) == connect.CodeNotFound {
			return p, c
		}
	}
	t.Fatalf("server did not come up:\n%s", p.out.String())
	return nil, nil
}

func startWorker(t *testing.T, name, url, spoolDir string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"worker", "--server", url, "--spool-dir", spoolDir, "--lease", "3", "--kill-grace", "1s"}, extra...)
	return run(t, name, args...)
}

func waitLines(t *testing.T, c *client.Client, id string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if j, err := c.Job(context.Background(), id); err == nil && j.LineCount >= n {
			return
		}
	}
	t.Fatalf("job %s never reached %d lines", id, n)
}

func waitFinal(t *testing.T, c *client.Client, id string) *spool.Job {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		j, err := c.Job(context.Background(), id)
		if err == nil && j.State.IsFinal() {
			return j
		}
	}
	t.Fatalf("job %s did not finish", id)
	return nil
}

// slowCount prints 1..n, one line every 50 ms.
func slowCount(n int) string {
	return fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo $i; sleep 0.05; i=$((i+1)); done`, n)
}

// TestWorkerKilledMidJob: kill -9 of a worker mid-job; the job is
// redelivered after its lease, attempt 2 completes, and attempt 1's late
// publishes are refused.
func TestWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testWorkerKilledMidJob)
}

func testWorkerKilledMidJob(t *testing.T, store []string) {
	addr := freePort(t)
	_, c := startServer(t, addr, t.TempDir(), store...)
	url := "http://" + addr
	dirA := t.TempDir()
	a := startWorker(t, "worker A", url, dirA)
	job, _, err := c.Submit(context.Background(), client.SubmitParams{Script: slowCount(60)})
	if err != nil {
		t.Fatal(err)
	}
	id := job.ID
	waitLines(t, c, id, 10)
	a.kill9(t)

	// Attempt 1's token, from the outbox the dead worker left.
	left, err := outbox.Open(filepath.Join(dirA, id+"-a1"))
	if err != nil {
		t.Fatalf("worker A left no outbox: %v", err)
	}
	h := left.Header()
	_ = left.Close()
	if h.Token == "" {
		t.Fatalf("outbox header %+v has no token", h)
	}

	startWorker(t, "worker B", url, t.TempDir())
	done := waitFinal(t, c, id)
	if done.State != spool.Succeeded || done.Attempt != 2 {
		t.Fatalf("job ended %s on attempt %d: %v", done.State, done.Attempt, done.Result)
	}

	// Attempt 1 publishing late is refused, heartbeat and complete too.
	late := &spoolv1.JobEvent{Sequence: done.LastSequence + 1, Timestamp: timestamppb.Now(), EventType: spoolv1.EventType_EVENT_TYPE_PROCESS_ERROR,
		EventData: &spoolv1.JobEvent_ProcessError{ProcessError: &spoolv1.ProcessErrorEvent{Message: "late"}}}
	rpc, err := wire.Dial(url, wire.Options{APIKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rpc.PublishEvents(context.Background(), connect.NewRequest(&spoolv1.PublishEventsRequest{TaskToken: h.Token, Events: []*spoolv1.JobEvent{late}}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("attempt 1's late publish: %v, want FailedPrecondition", err)
	}
	_, err = rpc.CompleteJob(context.Background(), connect.NewRequest(&spoolv1.CompleteJobRequest{TaskToken: h.Token, Result: &spoolv1.JobResult{}}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("attempt 1's late complete: %v, want FailedPrecondition", err)
	}

	// A worker restarted on A's spool directory drops the stale outbox.
	startWorker(t, "worker A again", url, dirA)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dirA, id+"-a1")); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted worker kept attempt 1's stale outbox")
		}
	}

	// The log: attempt 1's start and some lines, then attempt 2 whole; no
	// interleaving, no gap.
	log, err := c.ReadLog(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	prevAttempt := 0
	var second []string
	for i, ev := range log {
		if ev.Sequence != int64(i+1) {
			t.Fatalf("event %d has sequence %d", i, ev.Sequence)
		}
		if ev.Attempt < prevAttempt {
			t.Fatalf("attempt %d's event after attempt %d's", ev.Attempt, prevAttempt)
		}
		prevAttempt = ev.Attempt
		if ev.Start != nil {
			starts = append(starts, ev.Attempt)
		}
		for _, l := range ev.Lines {
			if ev.Attempt == 2 {
				second = append(second, l.Text)
			}
		}
	}
	if fmt.Sprint(starts) != "[1 2]" {
		t.Fatalf("PROCESS_START of attempts %v, want [1 2]", starts)
	}
	if len(second) != 60 || second[0] != "1" || second[59] != "60" {
		t.Fatalf("attempt 2 printed %d lines (%v…)", len(second), second[:min(3, len(second))])
	}
}

// TestServerKilledWhileJobsRun: the server dies (kill -9) and comes back on
// the same data directory while jobs run; every job's output is complete,
// exactly once, in order.
func TestServerKilledWhileJobsRun(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testServerKilledWhileJobsRun)
}

func testServerKilledWhileJobsRun(t *testing.T, store []string) {
	addr, data := freePort(t), t.TempDir()
	srv, c := startServer(t, addr, data, store...)
	w := startWorker(t, "worker", "http://"+addr, t.TempDir(), "--concurrency", "4")
	var ids []string
	for range 4 {
		j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: slowCount(80)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	waitLines(t, c, ids[0], 15)
	srv.kill9(t)
	w.waitSaid(t, serverGone...) // the jobs run on with the server away
	startServer(t, addr, data, store...)
	for _, id := range ids {
		j := waitFinal(t, c, id)
		if j.State != spool.Succeeded {
			t.Fatalf("job %s: %s %v", id, j.State, j.Result)
		}
		log, err := c.ReadLog(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for i, ev := range log {
			if ev.Sequence != int64(i+1) {
				t.Fatalf("job %s: event %d has sequence %d", id, i, ev.Sequence)
			}
			for _, l := range ev.Lines {
				lines = append(lines, l.Text)
			}
		}
		if want := numbers(80); strings.Join(lines, ",") != want {
			t.Fatalf("job %s printed %d lines, want 1..80", id, len(lines))
		}
	}
}

func numbers(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(s, ",")
}

// TestWorkerKilledKeepsBufferedLines: lines the batcher still holds in
// memory (fewer than a batch, long before the flush interval) are on the
// worker's disk already: after kill -9, the next worker on that directory
// delivers every line the command printed, then hands the job back.
func TestWorkerKilledKeepsBufferedLines(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testWorkerKilledKeepsBufferedLines)
}

func testWorkerKilledKeepsBufferedLines(t *testing.T, store []string) {
	addr, data := freePort(t), t.TempDir()
	_, c := startServerEnv(t, addr, data, []string{"SPOOL_EXECUTION_BATCHING_FLUSH_INTERVAL_SECONDS=60"}, store...)
	url := "http://" + addr
	dir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "printed")
	// One line, a pause (it is sent at once, as the first after a quiet
	// spell), then 30 more that wait in the batch: fewer than 50, and the
	// flush interval is a minute.
	script := fmt.Sprintf("echo line 1; sleep 1; seq -f 'line %%g' 2 31; touch %s; sleep 120", mark)
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: script, MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	w := run(t, "worker A", "worker", "--server", url, "--spool-dir", dir, "--lease", "30")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never printed its lines")
		}
	}
	// The worker has the lines on its disk (unbatched, they are in the
	// segment as they were read) within moments of their being printed.
	for deadline := time.Now().Add(time.Minute); !segmentsHold(dir, "line 31"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the printed lines never reached the worker's spool directory")
		}
	}
	if got, _ := c.Job(context.Background(), j.ID); got.LineCount != 1 {
		t.Fatalf("%d lines stored before the kill; want only the first, the rest still batching", got.LineCount)
	}
	w.kill9(t)

	run(t, "worker B", "worker", "--server", url, "--spool-dir", dir, "--queue", "elsewhere")
	var lines []string
	for deadline := time.Now().Add(time.Minute); len(lines) < 31; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the kill, attempt 1 has %d of its 31 lines stored", len(lines))
		}
		log, err := c.ReadLog(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		lines = lines[:0]
		for _, ev := range log {
			for _, l := range ev.Lines {
				if ev.Attempt == 1 {
					lines = append(lines, l.Text)
				}
			}
		}
	}
	if lines[0] != "line 1" || lines[30] != "line 31" {
		t.Fatalf("attempt 1's lines: %v", lines)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got, _ := c.Job(context.Background(), j.ID)
		if got.State == spool.Queued && got.Attempt == 1 {
			break // handed back at once, not after its 30 s lease
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job was not handed back: %s attempt %d", got.State, got.Attempt)
		}
	}
	if _, err := c.Cancel(context.Background(), j.ID, "done"); err != nil {
		t.Fatal(err)
	}
}

// segmentsHold reports whether an outbox segment under dir holds text.
func segmentsHold(dir, text string) bool {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	for _, p := range segs {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}
