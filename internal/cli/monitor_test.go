package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/internal/termview"
	"github.com/spool-run/spool/spooltest"
)

// TestMonitorFastEqualsLog: piped, monitor --fast prints exactly what logs
// prints.
func TestMonitorFastEqualsLog(t *testing.T) {
	srv := spooltest.NewServer(t)
	lines := append(mixedLog(2000), spooltest.Line{Text: "partial", Partial: true})
	job := spooltest.RunJob(t, srv, lines...)
	logs := run(srv, "logs", job.ID)
	mon := run(srv, "monitor", "--fast", job.ID)
	if mon.code != 0 || mon.stdout != logs.stdout || mon.stderr != logs.stderr {
		t.Fatalf("monitor (exit %d, %d+%d bytes) differs from logs (%d+%d bytes): %q / %q", mon.code,
			len(mon.stdout), len(mon.stderr), len(logs.stdout), len(logs.stderr), head(mon.stderr), head(logs.stderr))
	}
	out, _ := split(lines[:2000])
	if logs.stdout != out+"partial" {
		t.Fatalf("logs printed %q…", head(logs.stdout))
	}
	mon = run(srv, "monitor", "--fast", "--from", "1950", job.ID)
	want, _ := split(lines[1949:2000])
	if mon.stdout != want+"partial" {
		t.Fatalf("monitor --from 1950 printed %q…", head(mon.stdout))
	}
	wantRefusal(t, "monitor --from past the end", run(srv, "monitor", "--fast", "--from", "5000", job.ID),
		"job "+job.ID+" has 2,001 lines, so --from 5000 is past its end: --from -20 prints its last 20 lines")
	if r := run(srv, "monitor", "--fast", "--slow", job.ID); r.code != 1 || !strings.Contains(r.stderr, "fast") {
		t.Fatalf("--fast with --slow: %+v", r)
	}
}

// TestMonitorFollowsLive: after catching up, monitor follows a running job
// until it ends.
func TestMonitorFollowsLive(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	submitJob(t, c)
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	lines := mixedLog(600)
	l.Write(lines[:200]...)
	done := start(srv, "monitor", "--fast", l.JobID())
	l.Write(lines[200:400]...)
	l.Write(lines[400:]...)
	l.End(0)
	r := await(t, done)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 1, 600)
}

// TestMonitorOnTerminal: recorded timing paces the playback, a long pause
// is cut short with a note, stderr is red, and the status line counts.
func TestMonitorOnTerminal(t *testing.T) {
	srv := spooltest.NewServer(t)
	at := time.Now().Add(-time.Hour)
	job := spooltest.RunJob(t, srv,
		spooltest.Line{Text: "compiling", At: at},
		spooltest.Line{Text: "warning: slow test", Stderr: true, At: at.Add(5*time.Minute + 12*time.Second)},
		spooltest.Line{Text: "ok", At: at.Add(5*time.Minute + 12*time.Second + 300*time.Millisecond)})

	var b bytes.Buffer
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: &b, errOut: &b, outTerm: termview.Info{TTY: true, Width: 80, Color: true}}
	// Sleeping moves the pacer's clock on, and is recorded.
	now, sleeps := time.Now(), []time.Duration(nil)
	p := termview.NewPacer(1)
	p.Now = func() time.Time { return now }
	p.Sleep = func(_ context.Context, d time.Duration) error {
		sleeps = append(sleeps, d)
		now = now.Add(d)
		return nil
	}
	if err := runMonitor(context.Background(), monitorConfig{jobID: job.ID, pacer: p}, e); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{termview.MaxPause, 300 * time.Millisecond}; !slices.Equal(sleeps, want) {
		t.Fatalf("sleeps %v, want %v", sleeps, want)
	}
	got := b.String()
	for _, want := range []string{
		"compiling\n",
		termview.Dim + "… paused 5m12s" + termview.Reset + "\n",
		termview.Red + "warning: slow test" + termview.Reset + "\n",
		termview.Dim + "line 2 of 3" + termview.Reset,
		termview.ClearLine + "3 lines · succeeded\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("output %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "3 lines · succeeded\n") {
		t.Fatalf("output does not end with the outcome: %q", got)
	}
}
