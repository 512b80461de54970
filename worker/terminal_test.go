package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/worker"
)

// lookAround is what a job can tell about where it runs: whether its
// stdout and stdin are terminals, and that stderr goes somewhere.
const lookAround = `if [ -t 1 ]; then printf '\033[1;31mred\033[0m\n'; else echo plain; fi
if [ -t 0 ]; then echo 'stdin: terminal'; fi
echo 'to stderr' >&2
`

// newLoggedEnv is newEnv with the worker's warnings kept.
func newLoggedEnv(t *testing.T, concurrency int) (*env, *safebuf.Buffer) {
	log := &safebuf.Buffer{}
	e := newEnv(t, concurrency, func(c *worker.Config) {
		c.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	return e, log
}

func processStart(t *testing.T, evs []*spool.Event) *spool.ProcessStart {
	t.Helper()
	for _, ev := range evs {
		if ev.Start != nil {
			return ev.Start
		}
	}
	t.Fatal("the log has no PROCESS_START")
	return nil
}

// TestTerminalJob: a job that asks for a pseudo-terminal sees one on its
// stdin and stdout, of the promised size and with a TERM; its colours,
// its stderr and a progress bar's redraws arrive in one stdout stream,
// byte for byte but for the terminal's "\r" before each newline; reading
// its input ends at once; nothing of a quick burst before the exit is
// lost. The same commands without a terminal see pipes and two streams.
func TestTerminalJob(t *testing.T) {
	t.Setenv("TERM", "") // the worker has none to pass on
	e, log := newLoggedEnv(t, 2)
	onTerminal := client.SubmitParams{PTY: true, Timeout: time.Minute, Script: lookAround + `stty size
echo "TERM=$TERM"
printf '10%%\r20%%\r\n'
cat
echo 'input ended'
seq 1 3000`}
	onPipes := client.SubmitParams{Script: lookAround}
	tid, pid := e.submit(t, onTerminal), e.submit(t, onPipes)

	if j := e.wait(t, tid); j.State != spool.Succeeded {
		t.Fatalf("terminal job: %s %v", j.State, j.Result)
	}
	evs := e.logOf(t, tid)
	if !processStart(t, evs).PTY {
		t.Fatal("the terminal job's PROCESS_START does not say pty")
	}
	var want bytes.Buffer
	want.WriteString("\x1b[1;31mred\x1b[0m\nstdin: terminal\nto stderr\n50 200\nTERM=xterm-256color\n10%\r20%\ninput ended\n")
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	out, errOut := output(evs)
	if !bytes.Equal(out, want.Bytes()) || len(errOut) != 0 {
		t.Fatalf("terminal job: stdout %q…, stderr %q; want stdout %q…, no stderr", head(out), errOut, head(want.Bytes()))
	}

	if j := e.wait(t, pid); j.State != spool.Succeeded {
		t.Fatalf("pipe job: %s %v", j.State, j.Result)
	}
	evs = e.logOf(t, pid)
	if processStart(t, evs).PTY {
		t.Fatal("the pipe job's PROCESS_START says pty")
	}
	if out, errOut := output(evs); string(out) != "plain\n" || string(errOut) != "to stderr\n" {
		t.Fatalf("pipe job: stdout %q, stderr %q; want plain and its stderr apart", out, errOut)
	}
	if strings.Contains(log.String(), "reading the command's output failed") {
		t.Fatalf("the end of a terminal's output was taken for a failure:\n%s", log)
	}
}

func head(b []byte) []byte { return b[:min(len(b), 120)] }

// TestTerminalJobWithStdin: a terminal job given input reads it as a
// file, byte for byte (control characters, long lines and all, which a
// terminal's line editing would mangle), while its output is still the
// terminal.
func TestTerminalJobWithStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	in := []byte("line one\nbinary \x00\xff\x03\x04\x1a\r\n" + strings.Repeat("long ", 2000) + "\nno newline")
	id := e.submit(t, client.SubmitParams{PTY: true, Stdin: in,
		Script: `[ -t 1 ] && echo 'stdout: terminal'; [ -t 0 ] || echo 'stdin: not a terminal'; cksum`})
	if j := e.wait(t, id); j.State != spool.Succeeded {
		t.Fatalf("job: %s %v", j.State, j.Result)
	}
	cmd := exec.Command("cksum")
	cmd.Stdin = bytes.NewReader(in)
	sum, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "stdout: terminal\nstdin: not a terminal\n" + string(sum)
	if out, _ := output(e.logOf(t, id)); string(out) != want {
		t.Fatalf("the command printed %q, want %q", out, want)
	}
}

// TestTerminalScatterBatch: a scatter's batch job on a terminal reads its
// input document on stdin whole, a line longer than a terminal lets one
// type included, while its output is the terminal.
func TestTerminalScatterBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	item, _ := json.Marshal(strings.Repeat("a long item ", 1000))
	sc, err := e.c.StartScatter(context.Background(), client.ScatterParams{
		Job:     client.SubmitParams{PTY: true, Script: `[ -t 1 ] && [ ! -t 0 ] && cmp - "$SPOOL_BATCH_FILE" && echo '{}' > "$SPOOL_RESULT"`},
		Batches: []json.RawMessage{json.RawMessage("[" + string(item) + "]")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if sc, err = e.c.FollowScatter(ctx, sc.ID, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if sc.State != spool.ScatterSucceeded {
		t.Fatalf("the scatter ended %s: %s", sc.State, sc.Error)
	}
}

// alive reports whether process pid is still running (a zombie waiting to
// be reaped is not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's name, which is in parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}

// readPids reads the pids a job wrote to file, one a line.
func readPids(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func gone(t *testing.T, pids []int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v of the job still run after it ended", left)
		}
	}
}

// TestTerminalJobStopped: a terminal job that is cancelled or times out
// is stopped with everything in its process group, a process that ignores
// SIGTERM too.
func TestTerminalJobStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	const script = `(trap '' TERM; exec sleep 300) &
echo $! >> "$PIDS"; echo $$ >> "$PIDS"
echo started
sleep 300`
	dir := t.TempDir()
	cancelled := client.SubmitParams{PTY: true, Script: script, Env: map[string]string{"PIDS": filepath.Join(dir, "cancelled")}}
	timedOut := client.SubmitParams{PTY: true, Script: script, Timeout: time.Second, Env: map[string]string{"PIDS": filepath.Join(dir, "timed-out")}}
	cid, tid := e.submit(t, cancelled), e.submit(t, timedOut)
	waitForLines(t, e, cid, 1)
	if _, err := e.c.Cancel(context.Background(), cid, "test"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, pids string
		state    spool.State
		why      string
	}{
		{cid, cancelled.Env["PIDS"], spool.Cancelled, "cancelled: test"},
		{tid, timedOut.Env["PIDS"], spool.Failed, "timed out after 1s"},
	} {
		j := e.wait(t, c.id)
		if j.State != c.state || j.Result.Error != c.why {
			t.Fatalf("job %s: %s %q, want %s %q", c.id, j.State, j.Result.Error, c.state, c.why)
		}
		pids := readPids(t, c.pids)
		if len(pids) != 2 {
			t.Fatalf("the job wrote pids %v", pids)
		}
		gone(t, pids)
	}
}

// TestTerminalJobLeavesProcesses: a terminal job ends when its command
// exits, whatever it left holding the terminal: a background process in
// its group is killed with it; one that left the group (setsid) is left
// alone, and the worker stops reading the terminal it holds rather than
// waiting for it.
func TestTerminalJobLeavesProcesses(t *testing.T) {
	t.Parallel()
	e, log := newLoggedEnv(t, 2)
	dir := t.TempDir()
	inGroup := client.SubmitParams{PTY: true, Script: `sleep 300 & echo $! > "$PIDS"; echo done`,
		Env: map[string]string{"PIDS": filepath.Join(dir, "in-group")}}
	escaped := client.SubmitParams{PTY: true, Env: map[string]string{"PIDS": filepath.Join(dir, "escaped")},
		Script: `setsid sh -c 'echo $$ > "$PIDS"; exec sleep 300' &
while [ ! -s "$PIDS" ]; do sleep 0.05; done
echo done`}
	// Whatever happens, the process that escaped the job does not outlive
	// the test.
	t.Cleanup(func() {
		if b, err := os.ReadFile(escaped.Env["PIDS"]); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	gid, eid := e.submit(t, inGroup), e.submit(t, escaped)
	for _, id := range []string{gid, eid} {
		j := e.wait(t, id)
		if j.State != spool.Succeeded {
			t.Fatalf("job %s: %s %v", id, j.State, j.Result)
		}
		if out, _ := output(e.logOf(t, id)); string(out) != "done\n" {
			t.Fatalf("job %s printed %q", id, out)
		}
	}
	gone(t, readPids(t, inGroup.Env["PIDS"]))
	pids := readPids(t, escaped.Env["PIDS"])
	if len(pids) != 1 {
		t.Fatalf("the escaped process wrote pids %v", pids)
	}
	if !alive(pids[0]) {
		t.Fatal("the process that left the job's group is gone: the test did not hold the terminal open")
	}
	if strings.Contains(log.String(), "reading the command's output failed") {
		t.Fatalf("closing a terminal still held was taken for a failure:\n%s", log)
	}
}
