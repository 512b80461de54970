package cli

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool/client"
	"github.com/spool-run/spool/internal/safebuf"
	"github.com/spool-run/spool/internal/termview"
	"github.com/spool-run/spool/spooltest"
)

func TestLogs(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, mixedLog(10000)...)
	id := job.ID

	r := run(srv, "logs", "--from", "9000", id)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 9000, 10000)
	if !strings.HasPrefix(r.stderr, "9000\n9100\n") || !strings.HasPrefix(r.stdout, "9001\n") {
		t.Fatalf("from line 9000: stdout %q, stderr %q", head(r.stdout), head(r.stderr))
	}

	wantOutput(t, run(srv, "logs", id), 1, 10000)
	wantOutput(t, run(srv, "logs", "--from=-150", id), 9851, 10000)
	wantOutput(t, run(srv, "logs", "--from", "-150", id), 9851, 10000)

	// Past the end, the log's length is said; just after it is its end.
	wantRefusal(t, "--from past the end", run(srv, "logs", "--from", "20000", id),
		"job "+id+" has 10,000 lines, so --from 20000 is past its end: --from -20 prints its last 20 lines")
	if r := run(srv, "logs", "--from", "10001", id); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("--from the line after the end: %+v; want nothing, exit 0", r)
	}
	submitJob(t, srv.Client())
	live := spooltest.LeaseJob(t, srv, "")
	live.Begin()
	live.Write(spooltest.Seq(1, 3)...)
	wantRefusal(t, "--from past the end of a live job", run(srv, "logs", "--from", "9", live.JobID()),
		"job "+live.JobID()+" has 3 lines so far, so line 9 is not written yet: add -f to wait for it")

	r = run(srv, "logs", "no-such-job")
	if r.code != 1 || !strings.Contains(r.stderr, `job "no-such-job" not found`) || r.stdout != "" {
		t.Fatalf("unknown job: %+v", r)
	}
}

// TestLogsFollow: logs -f prints what is stored, then the rest live, and
// exits when the job ends.
func TestLogsFollow(t *testing.T) {
	srv := spooltest.NewServer(t)
	c := srv.Client()
	submitJob(t, c)
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	lines := mixedLog(1000)
	l.Write(lines[:300]...)
	done := start(srv, "logs", "-f", "--from", "250", l.JobID())
	for i := 300; i < 1000; i += 175 {
		l.Write(lines[i:min(i+175, 1000)]...)
	}
	l.End(0)
	r := await(t, done)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 250, 1000)

	// Without -f, a running job's stored output is printed and logs exits.
	submitJob(t, c)
	l = spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(lines[:300]...)
	r = run(srv, "logs", l.JobID())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 1, 300)
}

// TestLogsMarkAttempts: the output of each attempt after the first (a
// retry) is introduced on stderr, so the log shows where it begins.
func TestLogsMarkAttempts(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	if _, _, err := srv.Client().Submit(context.Background(), client.SubmitParams{Script: "flaky", Retries: 1}); err != nil {
		t.Fatal(err)
	}
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	l.Write(spooltest.Line{Text: "first try"})
	l.End(1)
	l = spooltest.LeaseJob(t, srv, "") // after the retry's backoff
	l.Begin()
	l.Write(spooltest.Line{Text: "second try"})
	l.End(0)
	r := run(srv, "logs", l.JobID())
	if r.code != 0 || r.stdout != "first try\nsecond try\n" || r.stderr != "spool: ── attempt 2 ──\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestLogsTimestamps: --timestamps puts the time each line was written in
// front of it, in UTC to the millisecond, once per line however many
// pieces it was stored in; with --from and -f too.
func TestLogsTimestamps(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	// Written in another time zone: what is printed is UTC all the same.
	at := time.Date(2026, 11, 25, 9, 56, 11, 250_000_000, time.FixedZone("CET", 3600))
	lines := []spooltest.Line{
		{Text: "compiling", At: at},
		{Text: "warning: slow test", Stderr: true, At: at.Add(1500 * time.Millisecond)},
		{Text: "progress 50%", Partial: true, At: at.Add(2 * time.Second)},
		{Text: "warning: also partial ", Stderr: true, Partial: true, At: at.Add(2100 * time.Millisecond)},
		{Text: "… done", At: at.Add(3 * time.Second)},
		{Text: "and this", Stderr: true, At: at.Add(3050 * time.Millisecond)},
		{Text: "ok", At: at.Add(3001 * time.Millisecond)},
	}
	job := spooltest.RunJob(t, srv, lines...)

	r := run(srv, "logs", "--timestamps", job.ID)
	wantOut := "2026-11-25T08:56:11.250Z compiling\n" +
		"2026-11-25T08:56:13.250Z progress 50%… done\n" +
		"2026-11-25T08:56:14.251Z ok\n"
	wantErr := "2026-11-25T08:56:12.750Z warning: slow test\n" +
		"2026-11-25T08:56:13.350Z warning: also partial and this\n"
	if r.code != 0 || r.stdout != wantOut || r.stderr != wantErr {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %q\nwant   %q", r.code, r.stdout, wantOut, r.stderr, wantErr)
	}
	r = run(srv, "logs", "-t", "--from", "7", job.ID)
	if r.code != 0 || r.stdout != "2026-11-25T08:56:14.251Z ok\n" || r.stderr != "" {
		t.Fatalf("--from 7: %+v", r)
	}

	// Followed live, lines get their times as they arrive.
	l := leaseNew(t, srv)
	l.Write(spooltest.Line{Text: "stored", At: at})
	done := start(srv, "logs", "-f", "--timestamps", l.JobID())
	l.Write(spooltest.Line{Text: "live", At: at.Add(time.Minute)})
	l.End(0)
	r = await(t, done)
	if want := "2026-11-25T08:56:11.250Z stored\n2026-11-25T08:57:11.250Z live\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("-f: exit %d, stdout %q, want %q; stderr %q", r.code, r.stdout, want, r.stderr)
	}
}

// tick is a clock that moves step on each reading.
func tick(step time.Duration) func() time.Time {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// progressDraw is the progress line as drawn (on an 80-column terminal
// without colours) and then erased.
var progressDraw = regexp.MustCompile(`spool: ([\d,]+) of ([\d,]+) lines \((\d+)%\) · [\d,]+ lines/s` + regexp.QuoteMeta(termview.ClearLine))

// TestLogsProgress: on a terminal, a long log's replay shows a progress
// line on stderr, which is always erased before anything else is written
// there and at the end; piped, nothing of it appears.
func TestLogsProgress(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := mixedLog(3000)
	job := spooltest.RunJob(t, srv, lines...)
	logs := func(errTerm termview.Info, outTTY bool, out, errOut io.Writer) {
		t.Helper()
		e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: out, errOut: errOut, errTerm: errTerm, outTerm: termview.Info{TTY: outTTY}}
		// The replay needs over 1,000 lines here; every batch (50 lines)
		// is 300ms after the one before, so due for a draw.
		cfg := logsConfig{jobID: job.ID, progressMin: 1000, now: tick(300 * time.Millisecond)}
		if err := runLogs(context.Background(), cfg, e); err != nil {
			t.Fatal(err)
		}
	}
	wantOut, wantErr := split(lines)
	terminal := termview.Info{TTY: true, Width: 80}

	// stdout to a file, stderr on the terminal.
	var out, errOut bytes.Buffer
	logs(terminal, false, &out, &errOut)
	if out.String() != wantOut {
		t.Fatalf("stdout: got %d bytes starting %q", out.Len(), head(out.String()))
	}
	draws := progressDraw.FindAllStringSubmatch(errOut.String(), -1)
	if len(draws) < 10 {
		t.Fatalf("%d progress lines drawn; stderr %q", len(draws), head(errOut.String()))
	}
	if first := "spool: 50 of 3,000 lines (1%) · 166 lines/s" + termview.ClearLine; draws[0][0] != first {
		t.Fatalf("first progress line %q, want %q", draws[0][0], first)
	}
	if rest := progressDraw.ReplaceAllString(errOut.String(), ""); rest != wantErr {
		t.Fatalf("stderr without the progress lines: %q, want the job's stderr %q", head(rest), head(wantErr))
	}

	// Both on the terminal: the progress line is erased before stdout
	// lines too, and never lands among them.
	var both bytes.Buffer
	logs(terminal, true, &both, &both)
	if len(progressDraw.FindAllString(both.String(), -1)) < 10 {
		t.Fatalf("no progress on a terminal: %q", head(both.String()))
	}
	if rest := progressDraw.ReplaceAllString(both.String(), ""); rest != wantOutput1To(3000) {
		t.Fatalf("output without the progress lines: %q", head(rest))
	}

	// stderr to a pipe: no progress line, however long the log.
	out.Reset()
	errOut.Reset()
	logs(termview.Info{}, false, &out, &errOut)
	if out.String() != wantOut || errOut.String() != wantErr {
		t.Fatalf("piped: stderr %q", head(errOut.String()))
	}
	// A short replay on a terminal: none either.
	errOut.Reset()
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: io.Discard, errOut: &errOut, errTerm: terminal}
	if err := runLogs(context.Background(), logsConfig{jobID: job.ID, from: -900, progressMin: 1000, now: tick(time.Second)}, e); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut.String(), "lines/s") || strings.Contains(errOut.String(), "\x1b") {
		t.Fatalf("progress for 900 lines: %q", head(errOut.String()))
	}
}

// wantOutput1To is lines 1..n of mixedLog as one stream.
func wantOutput1To(n int) string {
	var b strings.Builder
	for _, l := range mixedLog(n) {
		b.WriteString(l.Text + "\n")
	}
	return b.String()
}

// TestLogsProgressFollow: with -f, the progress line covers the stored
// part only, and is gone once the live end is reached.
func TestLogsProgressFollow(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	lines := mixedLog(2000)
	l := leaseNew(t, srv)
	l.Write(lines[:1500]...)

	var out, errOut safebuf.Buffer
	e := &env{server: srv.URL, creds: credentials{key: srv.AdminKey}, out: &out, errOut: &errOut, errTerm: termview.Info{TTY: true, Width: 80}}
	cfg := logsConfig{jobID: l.JobID(), follow: true, progressMin: 1000, now: tick(300 * time.Millisecond)}
	done := make(chan error, 1)
	go func() { done <- runLogs(context.Background(), cfg, e) }()
	eventually(t, "the stored lines", func() bool { return strings.HasSuffix(out.String(), "\n1499\n") })
	l.Write(lines[1500:]...)
	l.End(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantOut, wantErr := split(lines)
	if out.String() != wantOut {
		t.Fatalf("stdout: %q", head(out.String()))
	}
	draws := progressDraw.FindAllStringSubmatch(errOut.String(), -1)
	if len(draws) == 0 {
		t.Fatalf("no progress line while replaying 1,500 lines: %q", head(errOut.String()))
	}
	for _, d := range draws {
		if n, _ := strconv.Atoi(strings.ReplaceAll(d[1], ",", "")); d[2] != "1,500" || n >= 1500 {
			t.Fatalf("progress %q after the stored 1,500 lines", d[0])
		}
	}
	if rest := progressDraw.ReplaceAllString(errOut.String(), ""); rest != wantErr {
		t.Fatalf("stderr without the progress lines: %q", head(rest))
	}
}

// TestLogsSinceUntil: --since and --until keep the lines written in their
// span, bounds included, given as times or as durations before now; with
// -f, --until ends the stream at its time though the job goes on. A value
// that is no time, or an end before the start, is refused with what to
// give.
func TestLogsSinceUntil(t *testing.T) {
	t.Parallel()
	srv := spooltest.NewServer(t)
	c := srv.Client()
	submitJob(t, c)
	l := spooltest.LeaseJob(t, srv, "")
	l.Begin()
	// Lines 1-100, a minute apart, the last 10 minutes ago; the job runs on.
	last := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	lines := mixedLog(100)
	for i := range lines {
		lines[i].At = last.Add(-time.Duration(99-i) * time.Minute)
	}
	l.Write(lines...)
	at := func(line int) string { return lines[line-1].At.UTC().Format(time.RFC3339) }

	wantOutput(t, run(srv, "logs", "--since", at(40), "--until", at(60), l.JobID()), 40, 60)
	// Line 95 was written 15 minutes ago and a moment, line 15 95 minutes
	// ago and a moment: half a minute is room enough for the moment.
	wantOutput(t, run(srv, "logs", "--since", "15m30s", l.JobID()), 95, 100)
	wantOutput(t, run(srv, "logs", "--until", "95m30s", l.JobID()), 1, 14)
	// -f with an end time: the lines up to it, then spool logs exits 0
	// though the job is still running.
	r := await(t, start(srv, "logs", "-f", "--since", at(98), "--until", at(99), l.JobID()))
	if r.code != 0 {
		t.Fatalf("-f --until: exit %d: %s", r.code, r.stderr)
	}
	wantOutput(t, r, 98, 99)

	for _, bad := range [][]string{{"--since", "yesterday"}, {"--until", "-5m"}} {
		r := run(srv, append([]string{"logs", l.JobID()}, bad...)...)
		if r.code == 0 || !strings.Contains(r.stderr, bad[0]) || !strings.Contains(r.stderr, "want a duration before now (90s, 10m") || r.stdout != "" {
			t.Fatalf("%v: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
	r = run(srv, "logs", "--since", "5m", "--until", "1h", l.JobID())
	if r.code == 0 || !strings.Contains(r.stderr, "--until") || !strings.Contains(r.stderr, "is before --since") {
		t.Fatalf("an end before the start: exit %d, stderr %q", r.code, r.stderr)
	}
}
