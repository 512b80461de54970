package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/telemetry"
	"github.com/spool-run/spool/server"
	"github.com/spool-run/spool/spooltest"
	"github.com/spool-run/spool/worker"
)

// env is a server and a worker in this process, on real SQLite and real
// processes.
type env struct {
	srv *spooltest.Server
	c   *client.Client
	w   *spooltest.Worker
}

// newEnv starts a server with a one-second heartbeat (leases of three
// seconds) and a worker with the given concurrency.
func newEnv(t *testing.T, concurrency int, tweak func(*worker.Config)) *env {
	t.Helper()
	srv := spooltest.NewServer(t, spooltest.Config{Server: func(c *server.Config) {
		c.Server.ShutdownGrace = 2 * time.Second
		c.Execution.HeartbeatInterval = time.Second
		c.Jobs.Lease = 3 * time.Second
	}})
	wc := worker.Config{Concurrency: concurrency}
	if tweak != nil {
		tweak(&wc)
	}
	return &env{srv: srv, c: srv.Client(), w: spooltest.NewWorker(t, srv, wc)}
}

func (e *env) submit(t *testing.T, s client.SubmitParams) string {
	t.Helper()
	j, _, err := e.c.Submit(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func sh(script string) client.SubmitParams { return client.SubmitParams{Script: script} }

// wait follows the job until it is final and returns it.
func (e *env) wait(t *testing.T, id string) *spool.Job {
	t.Helper()
	return e.srv.WaitJob(t, id)
}

// logOf replays a job's whole log, one event per line.
func (e *env) logOf(t *testing.T, id string) []*spool.Event {
	t.Helper()
	evs, err := e.c.ReadLog(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// output is the job's stdout and stderr text, reconstructed byte for byte.
func output(evs []*spool.Event) (stdout, stderr []byte) {
	for _, ev := range evs {
		for _, l := range ev.Lines {
			b := append([]byte(l.Text), '\n')
			if l.Partial {
				b = b[:len(b)-1]
			}
			if l.Stream == spool.Stderr {
				stderr = append(stderr, b...)
			} else {
				stdout = append(stdout, b...)
			}
		}
	}
	return stdout, stderr
}

// checkSeq checks the events have contiguous sequences and their output is
// exactly the lines 1..n.
func checkSeq(t *testing.T, evs []*spool.Event, n int) {
	t.Helper()
	for i, ev := range evs {
		if ev.Sequence != evs[0].Sequence+int64(i) {
			t.Fatalf("event %d has sequence %d after %d", i, ev.Sequence, evs[0].Sequence)
		}
	}
	var want bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if out, _ := output(evs); !bytes.Equal(out, want.Bytes()) {
		t.Fatalf("output is %d bytes, want lines 1..%d (%d bytes); starts %q", len(out), n, want.Len(), out[:min(len(out), 40)])
	}
}

// storedItems counts a finished job's stored items by type: a stream that
// does not unpack batches yields each stored item as one event.
func storedItems(t *testing.T, e *env, id string) map[spool.EventType]int {
	t.Helper()
	counts := map[spool.EventType]int{}
	for ev, err := range e.c.Events(context.Background(), id, client.StreamOptions{}).Batches() {
		if err != nil {
			t.Fatal(err)
		}
		counts[ev.Type]++
	}
	return counts
}

// TestHundredLines: a 100-line job, with the default batch size of 50,
// stores about two output batches plus PROCESS_START and PROCESS_END.
func TestHundredLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	id := e.submit(t, client.SubmitParams{Argv: []string{"seq", "1", "100"}})
	j := e.wait(t, id)
	if j.State != spool.Succeeded || j.Result.ExitCode != 0 {
		t.Fatalf("job: %v", j)
	}
	evs := e.logOf(t, id)
	checkSeq(t, evs[1:len(evs)-1], 100) // between start and end
	if evs[0].Type != spool.EventProcessStart || evs[len(evs)-1].Type != spool.EventProcessEnd {
		t.Fatalf("log does not start and end with the process: %v … %v", evs[0], evs[len(evs)-1])
	}
	items := storedItems(t, e, id)
	if b := items[spool.EventOutput]; b < 2 || b > 3 ||
		items[spool.EventProcessStart] != 1 || items[spool.EventProcessEnd] != 1 {
		t.Fatalf("stored items %v, want 2 (at most 3) output batches, one start, one end", items)
	}
	if j.LineCount != 100 || j.LastSequence != 102 {
		t.Fatalf("job says %d lines, last sequence %d", j.LineCount, j.LastSequence)
	}
}

func TestExitCodeStderrAndEnv(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	s := sh(`echo "out $GREETING"; echo "job $SPOOL_JOB_ID" >&2; exit 3`)
	s.Env = map[string]string{"GREETING": "hello"}
	id := e.submit(t, s)
	j := e.wait(t, id)
	if j.State != spool.Failed || j.Result.ExitCode != 3 || j.Result.Error != "" {
		t.Fatalf("job: %v", j.Result)
	}
	out, errOut := output(e.logOf(t, id))
	if string(out) != "out hello\n" || string(errOut) != "job "+id+"\n" {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
}

// TestStdin: a job's stdin bytes reach its command whole, binary or not,
// and a job without any reads an empty stdin (it never waits on the
// worker's own).
func TestStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	in := []byte("line one\nbinary \x00\xff\n")
	with := e.submit(t, client.SubmitParams{Argv: []string{"od", "-An", "-c"}, Stdin: in})
	without := e.submit(t, client.SubmitParams{Argv: []string{"wc", "-c"}})
	want, err := exec.Command("sh", "-c", `printf 'line one\nbinary \000\377\n' | od -An -c`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if j := e.wait(t, with); j.State != spool.Succeeded {
		t.Fatalf("job: %v", j.Result)
	}
	if out, _ := output(e.logOf(t, with)); !bytes.Equal(out, want) {
		t.Fatalf("the command read\n%s\nwant\n%s", out, want)
	}
	e.wait(t, without)
	if out, _ := output(e.logOf(t, without)); strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("without stdin the command read %q bytes", out)
	}
}

func TestCannotStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	id := e.submit(t, client.SubmitParams{Argv: []string{"/no/such/program"}})
	j := e.wait(t, id)
	if j.State != spool.Failed || !strings.Contains(j.Result.Error, "could not start") {
		t.Fatalf("job: %v", j.Result)
	}
	evs := e.logOf(t, id)
	if len(evs) != 1 || evs[0].Type != spool.EventProcessError || evs[0].Error == "" {
		t.Fatalf("log: %v, want one PROCESS_ERROR", evs)
	}
}

// TestWorkingDirMissing: a working directory the worker does not have is
// said to be missing, not blamed on the program.
func TestWorkingDirMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	j := e.wait(t, e.submit(t, client.SubmitParams{Argv: []string{"pwd"}, WorkingDir: "/nonexistent/dir"}))
	if got := j.Result.Error; !strings.HasPrefix(got, "the working directory /nonexistent/dir does not exist on worker ") {
		t.Fatalf("job error %q, want it to say the directory does not exist on the worker", got)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	s := sh("echo started; sleep 30")
	s.Timeout = 500 * time.Millisecond
	start := time.Now()
	j := e.wait(t, e.submit(t, s))
	if !strings.Contains(j.Result.Error, "timed out after 500ms") || j.State != spool.Failed {
		t.Fatalf("job: %v", j.Result)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("a 500ms timeout took %v", took)
	}
}

func TestCancelRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	id := e.submit(t, sh("echo started; sleep 30"))
	waitForLines(t, e, id, 1)
	if _, err := e.c.Cancel(context.Background(), id, "test"); err != nil {
		t.Fatal(err)
	}
	j := e.wait(t, id)
	if j.State != spool.Cancelled {
		t.Fatalf("job: %s %v", j.State, j.Result)
	}
}

func waitForLines(t *testing.T, e *env, id string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		j, err := e.c.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.LineCount >= n {
			return
		}
	}
	t.Fatalf("job %s never had %d lines", id, n)
}

// waitForFile waits up to a minute for a job to create path.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("no job created %s", path)
}

// TestManyJobsAtOnce: 100 concurrent jobs of 1,000 lines each; no line is
// lost, repeated or out of order.
func TestManyJobsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	var ids []string
	for range 100 {
		ids = append(ids, e.submit(t, client.SubmitParams{Argv: []string{"seq", "1", "1000"}}))
	}
	// The jobs run side by side; waiting for them in turn takes as long
	// as the slowest.
	for _, id := range ids {
		if j := e.wait(t, id); j.State != spool.Succeeded {
			t.Errorf("job %s: %s", id, j.State)
		}
	}
	for _, id := range ids {
		evs := e.logOf(t, id)
		checkSeq(t, evs[1:len(evs)-1], 1000)
	}
}

// TestServerAwayThenBack: the server stops in the middle of a job and comes
// back; everything the job printed is there, once, in order.
func TestServerAwayThenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	// Each job leaves a file once it has printed everything.
	dir := t.TempDir()
	job := func(name string) client.SubmitParams {
		return client.SubmitParams{Env: map[string]string{"DONE": filepath.Join(dir, name)},
			Script: `i=1; while [ $i -le 400 ]; do echo $i; i=$((i+1)); [ $((i % 20)) -eq 0 ] && sleep 0.1; done; touch "$DONE"`}
	}
	a, b := e.submit(t, job("a")), e.submit(t, job("b"))
	waitForLines(t, e, a, 50)
	e.srv.Stop()
	// The rest of the output piles up in the outboxes: the jobs finish
	// while the server is away.
	for _, name := range []string{"a", "b"} {
		waitForFile(t, filepath.Join(dir, name))
	}
	e.srv.Restart()
	for _, id := range []string{a, b} {
		j := e.wait(t, id)
		if j.State != spool.Succeeded {
			t.Fatalf("job %s: %s %v", id, j.State, j.Result)
		}
		evs := e.logOf(t, id)
		checkSeq(t, evs[1:len(evs)-1], 400)
	}
}

func TestRepositoryCheckout(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed on the worker: apt-get install -y git")
	}
	repo := t.TempDir()
	for _, args := range [][]string{
		{"init", "--quiet", "-b", "main", repo},
		{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "--quiet", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "hello.txt"), []byte("hello from the repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-C", repo, "add", "hello.txt"}, {"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "--quiet", "-m", "add"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	first, _ := exec.Command("git", "-C", repo, "rev-list", "--max-parents=0", "HEAD").Output()
	e := newEnv(t, 1, nil)
	for ref, want := range map[string]string{"main": "hello from the repo\n", "": "hello from the repo\n", strings.TrimSpace(string(first)): "missing\n"} {
		s := sh("cat hello.txt 2>/dev/null || echo missing")
		s.Repository, s.Ref = "file://"+repo, ref
		id := e.submit(t, s)
		if j := e.wait(t, id); j.State != spool.Succeeded {
			t.Fatalf("ref %q: %v", ref, j.Result)
		}
		if out, _ := output(e.logOf(t, id)); string(out) != want {
			t.Fatalf("ref %q: output %q, want %q", ref, out, want)
		}
	}
	// A failed checkout names the repository and the ref; git's own
	// messages are in the log.
	for _, c := range []struct{ repo, ref, want string }{
		{"file:///no/such/repo", "", "checkout failed: could not clone repository file:///no/such/repo: git clone exited with status 128"},
		{"file://" + repo, "no-such-ref", `checkout failed: could not check out ref "no-such-ref" of repository file://` + repo},
	} {
		bad := sh("true")
		bad.Repository, bad.Ref = c.repo, c.ref
		id := e.submit(t, bad)
		if got := e.wait(t, id).Result.Error; !strings.HasPrefix(got, c.want) {
			t.Errorf("repository %s, ref %q: job error %q, want it to start %q", c.repo, c.ref, got, c.want)
		}
		if _, errOut := output(e.logOf(t, id)); !bytes.Contains(errOut, []byte("fatal:")) {
			t.Errorf("repository %s, ref %q: git's message is not in the log: %q", c.repo, c.ref, errOut)
		}
	}
}

// TestRawBytesLongLinesAndPartialEnd: output comes back byte for byte:
// invalid UTF-8, a line longer than a batch (split, not dropped), and a last
// line without a newline.
func TestRawBytesLongLinesAndPartialEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	script := `printf '\377\376 not utf-8\r\n'; head -c 600000 /dev/zero | tr '\0' 'x'; printf '\nno newline at the end'`
	id := e.submit(t, sh(script))
	if j := e.wait(t, id); j.State != spool.Succeeded {
		t.Fatalf("job: %v", j.Result)
	}
	want, err := exec.Command("/bin/sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	evs := e.logOf(t, id)
	if out, _ := output(evs); !bytes.Equal(out, want) {
		t.Fatalf("output differs: %d bytes, want %d", len(out), len(want))
	}
	lines := 0
	for _, ev := range evs {
		for _, l := range ev.Lines {
			lines++
			if len(l.Text) > 256<<10 {
				t.Fatalf("line %d is %d bytes, more than max_batch_bytes", l.Number, len(l.Text))
			}
		}
	}
	if lines != 5 { // the 600 KB line is three pieces
		t.Fatalf("%d lines, want 5", lines)
	}
}

// TestGracefulStopFinishesJobs: a stopping worker lets a running job end.
func TestGracefulStopFinishesJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	id := e.submit(t, sh("echo begin; sleep 1; echo end"))
	waitForLines(t, e, id, 1)
	e.w.Stop()
	j := e.wait(t, id)
	if j.State != spool.Succeeded {
		t.Fatalf("job: %s %v", j.State, j.Result)
	}
	if out, _ := output(e.logOf(t, id)); string(out) != "begin\nend\n" {
		t.Fatalf("output %q", out)
	}
}

// TestStopAfterGraceRetriesJob: a job still running when the grace period
// ends is stopped and not completed, and handed back, so it is retried at
// once (TestGracefulStopHandsJobsBack checks how the hand-back counts).
func TestStopAfterGraceRetriesJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *worker.Config) { c.ShutdownGrace = 300 * time.Millisecond })
	id := e.submit(t, sh("echo begin; sleep 60"))
	waitForLines(t, e, id, 1)
	e.w.Stop()
	j, err := e.c.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.State.IsFinal() {
		t.Fatalf("a job stopped by a worker shutdown was completed: %s %v", j.State, j.Result)
	}
	evs := e.logOf(t, id)
	last := evs[len(evs)-1]
	if last.Type != spool.EventProcessEnd || !strings.Contains(evs[len(evs)-2].Error, "shutting down") {
		t.Fatalf("log ends with %v %v", evs[len(evs)-2], last)
	}
	// Attempt 2 is leased at once: the job was handed back.
	l := spooltest.LeaseJob(t, e.srv, "")
	if l.JobID() != id || l.Job().Attempt != 2 {
		t.Fatalf("retry: job %s attempt %d", l.JobID(), l.Job().Attempt)
	}
}

// TestServerAwayLongerThanALease: the server is gone for longer than a
// lease; the worker keeps the job running and its output on disk, and when
// the server is back the same attempt finishes with its output whole (the
// server's lease grace on restart is pinned by a server test).
func TestServerAwayLongerThanALease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	script := `i=1; while [ $i -le 200 ]; do echo $i; i=$((i+1)); [ $((i % 20)) -eq 0 ] && sleep 0.1; done; true`
	id := e.submit(t, sh(script))
	waitForLines(t, e, id, 20)
	e.srv.Stop()
	// An outage longer than a lease (3 s) is what is tested: only the
	// clock makes one.
	time.Sleep(5 * time.Second)
	e.srv.Restart()
	j := e.wait(t, id)
	if j.State != spool.Succeeded || j.Attempt != 1 {
		t.Fatalf("job %s on attempt %d: %v", j.State, j.Attempt, j.Result)
	}
	evs := e.logOf(t, id)
	checkSeq(t, evs[1:len(evs)-1], 200)
}

// TestMetrics: the worker reports its batching (flush reasons, lines per
// batch) and its jobs.
func TestMetrics(t *testing.T) {
	t.Parallel()
	m, err := telemetry.New()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 1, func(c *worker.Config) { c.Meters = m.Provider() })
	e.wait(t, e.submit(t, client.SubmitParams{Argv: []string{"seq", "1", "100"}}))
	e.w.Stop()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`spool_worker_jobs_total{outcome="completed"} 1`,
		`spool_worker_lines_total 100`,
		`spool_worker_batches_total{reason="`,
		`spool_worker_batch_lines_bucket{le="50"}`,
		`spool_worker_jobs_running 0`,
		// Everything was delivered: nothing waits.
		`spool_worker_lines_waiting 0`,
		`spool_worker_outbox_waiting_bytes 0`,
		`spool_worker_flush_latency_seconds_bucket{le="300"}`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
}

// leaseCounter is a transport that notes how many jobs each DequeueJobs
// call leased.
type leaseCounter struct {
	mu    sync.Mutex
	calls []int
}

func (c *leaseCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/DequeueJobs") {
		return http.DefaultTransport.RoundTrip(req)
	}
	// Answers come uncompressed, to be read here.
	req.Header.Del("Accept-Encoding")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var m spoolv1.DequeueJobsResponse
	if err := proto.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("reading a DequeueJobs answer: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, len(m.GetLeases()))
	return resp, nil
}

// TestFreeSlotsFilledInOneCall: a worker with many free slots and a queue
// with jobs ready leases them all in one call.
func TestFreeSlotsFilledInOneCall(t *testing.T) {
	t.Parallel()
	const n = 60
	srv := spooltest.NewServer(t)
	c := srv.Client()
	var ids []string
	for range n {
		j, _, err := c.Submit(context.Background(), client.SubmitParams{Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	lc := &leaseCounter{}
	spooltest.NewWorker(t, srv, worker.Config{Concurrency: n, HTTPClient: &http.Client{Transport: lc}})
	for _, id := range ids {
		if j := srv.WaitJob(t, id); j.State != spool.Succeeded {
			t.Fatalf("job %s ended %s", id, j.State)
		}
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if len(lc.calls) == 0 || lc.calls[0] != n {
		t.Fatalf("leases per DequeueJobs call: %v, want all %d in the first", lc.calls, n)
	}
}
