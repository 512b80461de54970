package spooltest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/client"
)

// waitLimit is how long the helpers wait for a job to finish.
const waitLimit = 2 * time.Minute

// RequireJob fails the test unless job id is in state want, and returns
// the job. For a final state it first waits for the job to finish (up to
// two minutes); a live state (spool.Queued, spool.Running) is checked at
// once.
//
//	job := spooltest.RequireJob(t, c, id, spool.Succeeded)
func RequireJob(t testing.TB, c *client.Client, id string, want spool.State) *spool.Job {
	t.Helper()
	var (
		job *spool.Job
		err error
	)
	if want.IsFinal() {
		job, err = waitFinal(c, id)
	} else {
		job, err = c.Job(context.Background(), id)
	}
	if err != nil {
		t.Fatalf("spooltest: job %s: %v", id, err)
		return nil
	}
	if job.State != want {
		t.Fatalf("spooltest: job %s is %s, want %s", id, outcome(job), want)
	}
	return job
}

// RequireLines fails the test unless the output of job id is exactly the
// lines want (stdout and stderr together, in the order they were written),
// and returns its lines. It waits for the job to finish first (up to two
// minutes), so the output is all there.
//
//	spooltest.RequireLines(t, c, id, "building", "done")
func RequireLines(t testing.TB, c *client.Client, id string, want ...string) []spool.Line {
	t.Helper()
	if _, err := waitFinal(c, id); err != nil {
		t.Fatalf("spooltest: job %s: %v", id, err)
		return nil
	}
	log, err := c.ReadLog(context.Background(), id)
	if err != nil {
		t.Fatalf("spooltest: read job %s's output: %v", id, err)
		return nil
	}
	var lines []spool.Line
	for _, ev := range log {
		lines = append(lines, ev.Lines...)
	}
	if d := diffLines(lines, want); d != "" {
		t.Fatalf("spooltest: job %s %s", id, d)
	}
	return lines
}

// diffLines says where lines first differ from want ("" where they do
// not).
func diffLines(lines []spool.Line, want []string) string {
	for i := range max(len(lines), len(want)) {
		switch {
		case i >= len(lines):
			return fmt.Sprintf("wrote %d lines, want %d: line %d, %q, is missing", len(lines), len(want), i+1, want[i])
		case i >= len(want):
			return fmt.Sprintf("wrote %d lines, want %d: line %d is %q", len(lines), len(want), i+1, lines[i].Text)
		case lines[i].Text != want[i]:
			return fmt.Sprintf("wrote %q as line %d, want %q", lines[i].Text, i+1, want[i])
		}
	}
	return ""
}

// Enqueued describes a job RequireEnqueued looks for. Fields left empty
// match any job.
type Enqueued struct {
	Queue  string
	Argv   []string
	Script string
	// Env matches a job whose environment has these variables with these
	// values (and any others).
	Env       map[string]string
	RequestID string
}

// String is what e asks for, for failure messages.
func (e Enqueued) String() string {
	var parts []string
	if e.Queue != "" {
		parts = append(parts, fmt.Sprintf("queue %q", e.Queue))
	}
	if e.Argv != nil {
		parts = append(parts, fmt.Sprintf("argv %q", e.Argv))
	}
	if e.Script != "" {
		parts = append(parts, fmt.Sprintf("script %q", e.Script))
	}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, e.Env[k]))
	}
	if e.RequestID != "" {
		parts = append(parts, fmt.Sprintf("request id %q", e.RequestID))
	}
	if parts == nil {
		return "any job"
	}
	return strings.Join(parts, ", ")
}

func (e Enqueued) matches(j *spool.Job) bool {
	p := j.Params
	if (e.Argv != nil && !slices.Equal(e.Argv, p.Argv)) || (e.Script != "" && e.Script != p.Script) ||
		(e.RequestID != "" && e.RequestID != j.RequestID) {
		return false
	}
	for k, v := range e.Env {
		if got, ok := p.Env[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// maxLooked bounds the jobs RequireEnqueued looks through, newest first.
const maxLooked = 1000

// RequireEnqueued fails the test unless a job as want describes was
// enqueued (in any state), and returns the newest such job: for tests of
// code that submits jobs.
//
//	spooltest.RequireEnqueued(t, c, spooltest.Enqueued{Queue: "mail", Argv: []string{"send", "42"}})
func RequireEnqueued(t testing.TB, c *client.Client, want Enqueued) *spool.Job {
	t.Helper()
	var seen []*spool.Job
	for j, err := range c.Jobs(context.Background(), client.ListParams{Queue: want.Queue, PageSize: 200}) {
		if err != nil {
			t.Fatalf("spooltest: list jobs: %v", err)
			return nil
		}
		if want.matches(j) {
			return j
		}
		if seen = append(seen, j); len(seen) == maxLooked {
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "spooltest: no job with %s was enqueued", want)
	if len(seen) == 0 {
		b.WriteString(", nor any other")
	} else {
		fmt.Fprintf(&b, "; the newest of %d others:", len(seen))
		for _, j := range seen[:min(len(seen), 5)] {
			fmt.Fprintf(&b, "\n\t%s in queue %q: %s", j.ID, j.Queue, command(j.Params))
		}
	}
	t.Fatalf("%s", b.String())
	return nil
}

// command is what a job runs, for people.
func command(p spool.JobParams) string {
	if p.Script != "" {
		return fmt.Sprintf("script %q", p.Script)
	}
	return fmt.Sprintf("argv %q", p.Argv)
}

// outcome is a job's state with how it ended, for failure messages.
func outcome(j *spool.Job) string {
	r := j.Result
	if r == nil {
		return j.State.String()
	}
	if r.Error != "" {
		return fmt.Sprintf("%s (exit code %d: %s)", j.State, r.ExitCode, r.Error)
	}
	return fmt.Sprintf("%s (exit code %d)", j.State, r.ExitCode)
}

// waitFinal follows job id until it is final, for at most waitLimit.
func waitFinal(c *client.Client, id string) (*spool.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	st := c.Events(ctx, id, client.StreamOptions{Follow: true, Types: []spool.EventType{spool.EventProcessEnd}})
	for _, err := range st.Batches() {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("it did not finish within %s", waitLimit)
		}
		if err != nil {
			return nil, err
		}
	}
	job := st.Finished()
	if job == nil || !job.State.IsFinal() {
		return nil, errors.New("it did not finish")
	}
	return job, nil
}
