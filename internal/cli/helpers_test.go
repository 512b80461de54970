package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/spooltest"
)

// result is how a spool command ended.
type result struct {
	code           int
	stdout, stderr string
}

// run runs spool with args against srv, with its admin key, in process,
// as a shell would.
func run(srv *spooltest.Server, args ...string) result {
	return runLocal(append([]string{"--server", srv.URL, "--api-key", srv.AdminKey}, args...)...)
}

// start runs spool in the background; wait for its result on the channel.
func start(srv *spooltest.Server, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- run(srv, args...) }()
	return ch
}

func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("spool did not exit")
	}
	return result{}
}

// mixedLog is lines 1..n where every hundredth line went to stderr: its
// text is its line number, so any part of it is easy to predict.
func mixedLog(n int) []spooltest.Line {
	lines := spooltest.Seq(1, n)
	for i := range lines {
		lines[i].Stderr = (i+1)%100 == 0
	}
	return lines
}

// split is what spool should print for lines: stdout's and stderr's text.
func split(lines []spooltest.Line) (stdout, stderr string) {
	var out, errOut strings.Builder
	for _, l := range lines {
		w := &out
		if l.Stderr {
			w = &errOut
		}
		w.WriteString(l.Text + "\n")
	}
	return out.String(), errOut.String()
}

// wantOutput fails unless r printed lines from..to of mixedLog.
func wantOutput(t *testing.T, r result, from, to int) {
	t.Helper()
	out, errOut := split(mixedLog(to)[from-1:])
	if r.stdout != out {
		t.Fatalf("stdout: got %d bytes starting %q, want %d bytes starting %q", len(r.stdout), head(r.stdout), len(out), head(out))
	}
	if r.stderr != errOut {
		t.Fatalf("stderr: got %q, want %q", head(r.stderr), head(errOut))
	}
}

func head(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// submitJob submits a job to the default queue.
func submitJob(t *testing.T, c *client.Client) *spool.Job {
	t.Helper()
	j, _, err := c.Submit(context.Background(), client.SubmitParams{Script: "seq 1 1000"})
	if err != nil {
		t.Fatal(err)
	}
	return j
}
